package schema

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the spec reference in README.md")

// The README's spec reference is generated from the schema; this test fails
// when they drift apart. `go test ./schema -update` regenerates it.
func TestREADMESpecReference(t *testing.T) {
	fields, err := Reference()
	require.NoError(t, err)
	paths := map[string]bool{}
	for _, f := range fields {
		paths[f.Path] = true
	}
	// The contract's field names (docs/architecture.md, "Contracts") are all there.
	for _, p := range []string{"model.name", "model.layers", "model.hidden", "model.ffn_hidden", "model.heads",
		"model.query_groups", "model.kv_channels", "model.vocab", "model.max_position_embeddings",
		"model.activation", "model.normalization", "model.position_embedding", "model.tie_embeddings",
		"model.bias", "model.moe", "model.moe.experts", "model.moe.topk", "model.moe.ffn_hidden",
		"model.moe.shared_ffn_hidden", "cluster.name", "cluster.nodes", "cluster.gpus_per_node",
		"cluster.nvlink_domain", "cluster.gpu", "cluster.gpu.name", "cluster.gpu.memory_gib",
		"cluster.gpu.bf16_tflops", "cluster.nvlink_gbps", "cluster.network_gbps", "cluster.slurm",
		"cluster.slurm.partition", "cluster.slurm.account", "cluster.slurm.qos", "cluster.slurm.time",
		"parallel.tp", "parallel.pp", "parallel.vpp", "parallel.cp", "parallel.ep", "parallel.etp",
		"parallel.dp", "parallel.sp", "parallel.order", "parallel.first_stage_layers",
		"parallel.last_stage_layers", "parallel.account_for_embedding", "parallel.account_for_loss",
		"train.seq_length", "train.micro_batch", "train.global_batch", "train.precision", "train.recompute",
		"train.distributed_optimizer", "launch", "launch.launcher"} {
		require.True(t, paths[p], "schema lacks contract field %s", p)
	}
	var b strings.Builder
	b.WriteString("| field | type | default | meaning |\n|---|---|---|---|\n")
	for _, f := range fields {
		def := f.Default
		switch {
		case def == "" && strings.HasPrefix(f.Type, "[..."):
			def = "`[]`"
		case def != "":
			def = "`" + strings.ReplaceAll(def, "|", "\\|") + "`"
		case f.Optional:
			def = "optional"
		case f.Type == "struct":
			def = ""
		default:
			def = "**required**"
		}
		typ := f.Type
		if typ != "" && typ != "struct" {
			typ = "`" + typ + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Path, typ, def, strings.ReplaceAll(f.Doc, "|", "\\|"))
	}
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	const begin, end = "<!-- spec:begin -->\n", "<!-- spec:end -->"
	i, j := strings.Index(string(readme), begin), strings.Index(string(readme), end)
	require.True(t, i >= 0 && j > i, "README.md lacks the spec markers")
	want := string(readme[:i+len(begin)]) + b.String() + string(readme[j:])
	if *update {
		require.NoError(t, os.WriteFile("../README.md", []byte(want), 0o644))
		return
	}
	require.Equal(t, want, string(readme), "README spec reference is stale: go test ./schema -update")
}
