package megatron_test

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/targets/megatron"
)

// defaultPlans leave every field they can at the schema's default: a dense
// model, an MoE model, and one that saves checkpoints.
var defaultPlans = map[string]string{
	"dense": `model: {layers: 8, hidden: 256, heads: 8, vocab: 4096}
parallel: tp: 2`,
	"moe": `model: {layers: 8, hidden: 256, heads: 8, vocab: 4096, bias: false, moe: experts: 8}
parallel: {tp: 2, ep: 2}`,
	// Experts with linear biases and the gelu activation: both fusions'
	// defaults follow the model (spec.DefaultBiasDropoutFusion,
	// spec.DefaultBiasGeluFusion).
	"moe-bias": `model: {layers: 8, hidden: 256, heads: 8, vocab: 4096, moe: experts: 8}
parallel: {tp: 2, ep: 2, etp: 1}`,
	"checkpoint": `model: {layers: 8, hidden: 256, heads: 8, vocab: 4096}
checkpoint: save: "/ckpt"`,
	// Fields whose default follows another field's value: the parameter
	// all-gather overlaps by default with sharded parameters.
	"distributed-optimizer": `model: {layers: 8, hidden: 256, heads: 8, vocab: 4096}
train: distributed_optimizer: true`,
}

const defaultPlanRest = `
cluster: {nodes: 1, gpus_per_node: 8, gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}, nvlink_gbps: 450, network_gbps: 50}
train: {seq_length: 512, micro_batch: 1, global_batch: 32, iters: 100}
`

// givenDests are the dests the plans above set on purpose (the model's
// shape, the degrees, the batch, the length, the checkpoint directory) or
// that Megatron derives from them: not defaults.
var givenDests = map[string]bool{
	"num_layers": true, "hidden_size": true, "num_attention_heads": true, "vocab_size": true,
	"ffn_hidden_size": true, "kv_channels": true, "max_position_embeddings": true, "seq_length": true,
	"micro_batch_size": true, "global_batch_size": true, "train_iters": true,
	"tensor_model_parallel_size": true, "expert_model_parallel_size": true, "expert_tensor_parallel_size": true,
	"num_experts": true, "moe_ffn_hidden_size": true, "moe_layer_freq": true, "add_bias_linear": true,
	"save": true, "use_distributed_optimizer": true,
}

// TestDefaultDifferences compares what parc writes for plans that leave the
// fields at their defaults with Megatron's own defaults (defaults.tsv, dumped
// from Megatron's parser): every dest where they differ must be listed in
// DefaultDifferences with parc's value, and every listed entry must differ.
func TestDefaultDifferences(t *testing.T) {
	listed := map[string]megatron.DefaultDifference{}
	for _, d := range megatron.DefaultDifferences {
		listed[d.Dest] = d
		require.NotEmpty(t, d.Reason, d.Field)
		require.Equal(t, d.Dest, megatron.Options[d.Option].Dest, "%s writes %s", d.Field, d.Option)
		require.False(t, reflect.DeepEqual(d.Parc, d.Megatron()), "%s: parc's default %v equals Megatron's", d.Field, d.Parc)
	}
	seen := map[string]bool{}
	for name, plan := range defaultPlans {
		p := parityPlan(t, []byte("package plan\n"+plan+defaultPlanRest))
		args, diags := megatron.Args(p, nil)
		require.Empty(t, diags, name)
		ns, errs := megatron.Parse(args)
		require.Empty(t, errs, name)
		for dest, v := range ns.Values {
			if givenDests[dest] || sameValue(v, megatron.Defaults[dest]) {
				continue
			}
			d, ok := listed[dest]
			require.True(t, ok, "%s: parc's default gives %s=%v, Megatron's default is %v: add it to DefaultDifferences", name, dest, v, megatron.Defaults[dest])
			require.Equal(t, d.Parc, v, "%s: %s", name, d.Field)
			seen[dest] = true
		}
	}
	for _, d := range megatron.DefaultDifferences {
		require.True(t, seen[d.Dest], "%s is listed but no default plan shows it differing", d.Field)
	}
}

// sameValue compares a parsed value with a default; an option taking several
// values (nargs "+") parses one value into a one-element list.
func sameValue(v, def any) bool {
	if l, ok := v.([]any); ok && len(l) == 1 {
		if _, isList := def.([]any); !isList {
			v = l[0]
		}
	}
	return reflect.DeepEqual(v, def)
}

var updateREADME = flag.Bool("update", false, "rewrite the defaults table in README.md")

// TestREADMEDefaults keeps the README's table of defaults that differ from
// Megatron's in step with DefaultDifferences; -update rewrites it.
func TestREADMEDefaults(t *testing.T) {
	var b strings.Builder
	b.WriteString("<!-- defaults:begin -->\n| field | Megatron option | parc's default | Megatron's default | why |\n|---|---|---|---|---|\n")
	for _, d := range megatron.DefaultDifferences {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", d.Field, d.Option, pyValue(d.Parc), pyValue(d.Megatron()), strings.ReplaceAll(d.Reason, "|", "\\|"))
	}
	b.WriteString("<!-- defaults:end -->")
	data, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	readme := string(data)
	i, j := strings.Index(readme, "<!-- defaults:begin -->"), strings.Index(readme, "<!-- defaults:end -->")
	require.True(t, i >= 0 && j > i, "README lacks the defaults markers")
	want := readme[:i] + b.String() + readme[j+len("<!-- defaults:end -->"):]
	if *updateREADME {
		require.NoError(t, os.WriteFile("../../../README.md", []byte(want), 0o644))
		return
	}
	require.Equal(t, want, readme, "README defaults table is stale: go test ./internal/targets/megatron -run TestREADMEDefaults -update")
}

// pyValue shows a value as Megatron's namespace holds it.
func pyValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "`None`"
	case bool:
		if v {
			return "`True`"
		}
		return "`False`"
	case string:
		return fmt.Sprintf("`%q`", v)
	case []any:
		var parts []string
		for _, x := range v {
			parts = append(parts, strings.Trim(pyValue(x), "`"))
		}
		return "`[" + strings.Join(parts, ", ") + "]`"
	case float64:
		return "`" + megatron.Float(v) + "`"
	}
	return fmt.Sprintf("`%v`", v)
}
