package megatron

import (
	"parc.dev/parc/internal/spec"
	"strings"

	mg "parc.dev/parc/internal/targets/megatron"
)

// Difference is a dest two argument lists give different values.
type Difference struct {
	Dest       string
	Want, Got  any
	WantOption string // the option of the first list that set it ("" = default)
}

// Compare replays Megatron's parser on two argument lists' namespaces and
// lists every dest whose value differs, except where the first list leaves
// a dest out and the second writes the value Megatron derives for it
// (megatron/training/arguments.py at d98e8a64, validate_args):
//
//   - ffn_hidden_size: 4·hidden, or int(8·hidden/3/64)·64 with --swiglu;
//   - kv_channels: hidden / heads;
//   - num_query_groups: without --group-query-attention the model has one
//     group per head, whatever num_query_groups says;
//   - expert_tensor_parallel_size: tensor_model_parallel_size;
//   - moe_ffn_hidden_size: ffn_hidden_size;
//   - global_batch_size: micro_batch_size · data-parallel size (world given);
//   - split: '969, 30, 1' when --data-path is given;
//   - sequence_parallel: off when tensor_model_parallel_size is 1;
//   - use_distributed_optimizer: on with --use-megatron-fsdp;
//   - tokenizer_type: GPT2BPETokenizer (pretrain_gpt.py's args_defaults);
//   - num_layers_per_virtual_pipeline_stage n: the virtual pipeline size
//     (num_layers / pp) / n, as num_virtual_stages_per_pipeline_rank says it;
//   - moe_layer_freq: an integer k and the per-layer list it stands for;
//   - num_layers: the length of a hybrid layer pattern, which replaces it;
//   - a legacy flag (legacyFlags) and the value validate_args gives its dest;
//   - options with nargs '+' hold a one-element list where the default is
//     the bare value (moe_aux_loss_coeff 0.0 and [0.0]).
//
// world is the job's GPU count (0 = unknown: global_batch_size is compared
// as written).
func Compare(want, got *mg.Namespace, world int) []Difference {
	w, g := effective(want, world), effective(got, world)
	var out []Difference
	for d, wv := range w {
		gv := g[d]
		if mg.Equal(wv, gv) || mg.Equal(single(wv), single(gv)) {
			continue
		}
		diff := Difference{Dest: d, Want: want.Values[d], Got: got.Values[d]}
		if s, ok := want.Set[d]; ok {
			diff.WantOption = s.Option
		}
		out = append(out, diff)
	}
	for d := range g {
		if _, ok := w[d]; !ok {
			out = append(out, Difference{Dest: d, Got: got.Values[d]})
		}
	}
	sortDiffs(out)
	return out
}

func sortDiffs(d []Difference) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j].Dest < d[j-1].Dest; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	}
	return 0, false
}

// legacyFlags are the options validate_args (arguments.py at d98e8a64)
// turns into another dest's value, over what that dest holds, and then
// deletes or ignores: the import writes the dest's field, and the round
// trip compares the dest.
var legacyFlags = []struct {
	flag, dest string
	value      any
}{
	{"use_rotary_position_embeddings", "position_embedding_type", "rope"},
	{"enable_cuda_graph", "cuda_graph_impl", "local"},
	{"external_cuda_graph", "cuda_graph_impl", "transformer_engine"},
	{"recompute_activations", "recompute_granularity", "selective"},
}

// effective is the namespace with Megatron's derivations applied.
func effective(ns *mg.Namespace, world int) map[string]any {
	v := make(map[string]any, len(ns.Values))
	for d, x := range ns.Values {
		v[d] = x
	}
	if p := mg.HybridLayerPattern(v); p != "" {
		v["num_layers"] = mg.HybridLayerCount(p) // whatever --num-layers says
	}
	hidden, _ := asInt(v["hidden_size"])
	heads, _ := asInt(v["num_attention_heads"])
	if v["ffn_hidden_size"] == nil && hidden > 0 {
		if b, _ := v["swiglu"].(bool); b {
			v["ffn_hidden_size"] = int64(float64(4*hidden*2)/3/64) * 64
		} else {
			v["ffn_hidden_size"] = 4 * hidden
		}
	}
	if v["kv_channels"] == nil && heads > 0 && hidden%heads == 0 {
		v["kv_channels"] = hidden / heads
	}
	if gqa, _ := v["group_query_attention"].(bool); !gqa {
		v["num_query_groups"] = v["num_attention_heads"]
	}
	v["group_query_attention"] = nil // said by num_query_groups
	if v["expert_tensor_parallel_size"] == nil {
		v["expert_tensor_parallel_size"] = v["tensor_model_parallel_size"]
	}
	if v["moe_ffn_hidden_size"] == nil {
		v["moe_ffn_hidden_size"] = v["ffn_hidden_size"]
	}
	if tp, _ := asInt(v["tensor_model_parallel_size"]); tp == 1 {
		v["sequence_parallel"] = false
	}
	if v["tokenizer_type"] == nil {
		v["tokenizer_type"] = "GPT2BPETokenizer" // pretrain_gpt.py's args_defaults
	}
	if vpp, ok := virtualStages(v); ok && v["num_virtual_stages_per_pipeline_rank"] == nil {
		v["num_virtual_stages_per_pipeline_rank"] = vpp
	}
	v["num_layers_per_virtual_pipeline_stage"] = nil // said by num_virtual_stages_per_pipeline_rank
	if b, _ := v["use_megatron_fsdp"].(bool); b {
		v["use_distributed_optimizer"] = true
	}
	// validate_args: an emerging optimizer (anything but adam and sgd) with
	// the distributed optimizer runs Megatron's layer-wise distributed
	// optimizer instead, and the deprecated dist_muon is muon with it
	// (arguments.py at d98e8a64).
	if o, _ := v["optimizer"].(string); o != "" && o != "adam" && o != "sgd" {
		distributed, _ := v["use_distributed_optimizer"].(bool)
		name, deprecated := spec.MegatronOptimizer(o)
		v["optimizer"] = name
		v["use_distributed_optimizer"] = false
		v["use_layer_wise_distributed_optimizer"] = distributed || deprecated
	}
	if v["split"] == nil && v["data_path"] != nil {
		v["split"] = "969, 30, 1"
	}
	if s, ok := v["split"].(string); ok {
		v["split"] = strings.ReplaceAll(s, " ", "")
	}
	if v["global_batch_size"] == nil && world > 0 {
		tp, _ := asInt(v["tensor_model_parallel_size"])
		pp, _ := asInt(v["pipeline_model_parallel_size"])
		cp, _ := asInt(v["context_parallel_size"])
		mbs, _ := asInt(v["micro_batch_size"])
		if mp := tp * pp * cp; mp > 0 && int64(world)%mp == 0 {
			v["global_batch_size"] = mbs * (int64(world) / mp)
		}
	}
	for _, l := range legacyFlags {
		if b, _ := v[l.flag].(bool); b {
			v[l.dest] = l.value
		}
		v[l.flag] = nil // said by its dest
	}
	if k, ok := asInt(v["moe_layer_freq"]); ok {
		if layers, _ := asInt(v["num_layers"]); layers > 0 && k > 0 && layers <= 1<<20 {
			p := make([]any, layers)
			for i := range p {
				p[i] = int64(0)
				if int64(i)%k == 0 {
					p[i] = int64(1)
				}
			}
			v["moe_layer_freq"] = p
		}
	}
	return v
}
