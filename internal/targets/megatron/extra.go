package megatron

import (
	"fmt"
	"slices"
	"strings"

	"parc.dev/parc/internal/diag"
)

// exclusive lists groups of dests of which Megatron accepts at most one
// (megatron/training/arguments.py::validate_args and TransformerConfig at
// d98e8a64): F1 bf16/fp16, T1/T2 iteration- or sample-based training and
// schedules, T3 one warmup, T6 one data source, P1 one way to give the
// virtual pipeline; the pipeline layout beside the uneven first/last stages
// and the account-for flags, and those two beside each other
// (TransformerConfig); the deprecated CUDA-graph spellings beside the new
// ones; fp8 beside fp4; the two FSDPs; torch FSDP2 beside the distributed
// optimizer; --recompute-activations (selective) beside a granularity.
var exclusive = [][]string{
	{"bf16", "fp16"},
	{"train_iters", "train_samples"},
	{"train_iters", "lr_decay_samples"}, {"train_iters", "lr_warmup_samples"},
	{"train_samples", "lr_decay_iters"}, {"train_samples", "lr_warmup_iters"},
	{"lr_warmup_iters", "lr_warmup_samples", "lr_warmup_fraction"},
	{"lr_decay_iters", "lr_decay_samples"},
	{"mock_data", "data_path", "train_data_path", "valid_data_path", "test_data_path"},
	{"num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank", "pipeline_model_parallel_layout"},
	{"pipeline_model_parallel_layout", "decoder_first_pipeline_num_layers"},
	{"pipeline_model_parallel_layout", "decoder_last_pipeline_num_layers"},
	{"pipeline_model_parallel_layout", "account_for_embedding_in_pipeline_split"},
	{"pipeline_model_parallel_layout", "account_for_loss_in_pipeline_split"},
	{"decoder_first_pipeline_num_layers", "account_for_embedding_in_pipeline_split"},
	{"decoder_first_pipeline_num_layers", "account_for_loss_in_pipeline_split"},
	{"decoder_last_pipeline_num_layers", "account_for_embedding_in_pipeline_split"},
	{"decoder_last_pipeline_num_layers", "account_for_loss_in_pipeline_split"},
	{"cuda_graph_scope_deprecated", "cuda_graph_modules"},
	{"enable_cuda_graph", "external_cuda_graph", "cuda_graph_impl"},
	{"fp8", "fp4"},
	{"use_torch_fsdp2", "use_megatron_fsdp"},
	{"use_torch_fsdp2", "use_distributed_optimizer"},
	{"recompute_activations", "recompute_granularity"},
}

// replacesDecoder are the dests whose value makes Megatron build another
// decoder than the one the generated --num-layers and model options
// describe: a hybrid layer pattern (the deprecated spelling too) gives
// every layer its kind, Mamba, attention, MLP or MoE, and Megatron takes the
// layer count from it, ignoring --num-layers (validate_args, "Hybrid layer
// pattern" block, arguments.py at d98e8a64).
var replacesDecoder = map[string]bool{"hybrid_layer_pattern": true, "hybrid_override_pattern": true}

// HybridLayerCount is the layer count Megatron takes from a hybrid layer
// pattern (get_hybrid_total_layer_count, hybrid_layer_allocation.py at
// d98e8a64): the main pattern, before the first "/" of the multi-token
// prediction layers, without its "|" pipeline-stage separators.
func HybridLayerCount(pattern string) int64 {
	main, _, _ := strings.Cut(pattern, "/")
	return int64(len(strings.ReplaceAll(main, "|", "")))
}

// HybridLayerPattern is the hybrid layer pattern a namespace gives
// (--hybrid-layer-pattern, or its deprecated spelling
// --hybrid-override-pattern, which validate_args copies into it), "" when
// none.
func HybridLayerPattern(values map[string]any) string {
	for _, d := range []string{"hybrid_layer_pattern", "hybrid_override_pattern"} {
		if p, ok := values[d].(string); ok && p != "" {
			return p
		}
	}
	return ""
}

// optionKey is what an option sets: its argparse dest when Megatron's parser
// knows it, else its name without dashes and without a no-/disable- prefix
// (so --no-foo and --foo of an unknown option still collide).
func optionKey(name string) string {
	if o, ok := Options[name]; ok {
		return o.Dest
	}
	k := strings.TrimLeft(name, "-")
	for _, p := range []string{"no-", "disable-"} {
		k = strings.TrimPrefix(k, p)
	}
	return strings.ReplaceAll(k, "-", "_")
}

// optionNames returns the option names in an argument vector ("--x=v" counts
// as --x); values are skipped.
func optionNames(args []string) []string {
	var names []string
	for _, w := range args {
		if !strings.HasPrefix(w, "--") || len(w) == 2 {
			continue
		}
		name, _, _ := strings.Cut(w, "=")
		names = append(names, name)
	}
	return names
}

// ExtraArgConflicts reports each raw extra argument (launch.extra_args) that
// sets what a generated argument already sets — the same option, its
// --no-/--disable- twin or any other spelling of the same argparse dest, or a
// member of a group Megatron accepts only one of. With strict (the program is
// Megatron's pretrain_gpt.py), an option Megatron's parser does not know is an
// error — argparse stops with "unrecognized arguments" — unless extensions
// (launch.extension_args) names it as an option a parser extension of the
// entry point adds.
func ExtraArgConflicts(generated, extra []string, strict bool, at diag.Locator, extensions ...string) diag.List {
	const path = "launch.extra_args"
	r := diag.NewReporter(at)
	byKey := map[string]string{} // key -> first generated option name
	for _, n := range optionNames(generated) {
		if _, ok := byKey[optionKey(n)]; !ok {
			byKey[optionKey(n)] = n
		}
	}
	for i, w := range extra {
		if !strings.HasPrefix(w, "--") || len(w) == 2 {
			continue
		}
		name, _, _ := strings.Cut(w, "=")
		key := optionKey(name)
		at := fmt.Sprintf("%s[%d]", path, i) // the element, not the list
		if g, ok := byKey["num_layers"]; ok && replacesDecoder[key] {
			r.Errorf(at, "extra-arg-conflict",
				fmt.Sprintf("parc does not model hybrid (Mamba) layers: remove %s from launch.extra_args to plan the transformer the spec describes, or run the hybrid model's arguments with Megatron directly", name),
				"extra_args[%d] %s replaces the generated %s: Megatron takes the layer count from the pattern and builds each layer as the pattern says (Mamba, attention, MLP or MoE), a model the spec does not describe, so parc's checks, memory and step time would be of another model", i, name, g)
			continue
		}
		if g, ok := byKey[key]; ok {
			hint := fmt.Sprintf("remove %s from launch.extra_args and set the spec field parc derives %s from", name, g)
			if fields := SpecFields[key]; len(fields) > 0 {
				hint = fmt.Sprintf("remove %s from launch.extra_args and set %s instead (parc derives %s from it)", name, strings.Join(fields, " or "), g)
			}
			r.Errorf(at, "extra-arg-conflict", hint,
				"extra_args[%d] %s sets what the generated %s sets", i, name, g)
			continue
		}
		if g := exclusiveWith(key, byKey); g != "" {
			r.Errorf(at, "extra-arg-conflict",
				fmt.Sprintf("remove %s from launch.extra_args, or change the spec so parc does not generate %s", name, g),
				"extra_args[%d] %s cannot be combined with the generated %s (Megatron accepts only one of them)", i, name, g)
			continue
		}
		if _, ok := Options[name]; strict && !ok && !slices.Contains(extensions, name) {
			hint := "check the spelling against Megatron-LM's arguments.py; an option of a parser extension (e.g. ModelOpt's --enable-gpt-oss) goes in launch.extension_args too"
			if s := similarOption(name); s != "" {
				hint = fmt.Sprintf("did you mean %s? (an option of a parser extension goes in launch.extension_args too)", s)
			}
			r.Errorf(at, "extra-arg-unknown", hint,
				"extra_args[%d] %s is not an option of Megatron-Core's argument parser: pretrain_gpt.py stops with \"unrecognized arguments\"", i, name)
		}
	}
	return r.List
}

// exclusiveWith returns the generated option that key may not be combined with.
func exclusiveWith(key string, generated map[string]string) string {
	for _, group := range exclusive {
		if !slices.Contains(group, key) {
			continue
		}
		for _, other := range group {
			if g, ok := generated[other]; ok && other != key {
				return g
			}
		}
	}
	return ""
}

// similarOption returns Megatron's option closest to name (a typo: at most
// two edits), or "".
func similarOption(name string) string {
	best, bestD := "", 3
	for o := range Options {
		if d := editDistance(name, o, bestD); d < bestD || (d == bestD && d < 3 && o < best) {
			best, bestD = o, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max when it is at
// least max.
func editDistance(a, b string, max int) int {
	if d := len(a) - len(b); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c = 1 + min(prev[j-1], prev[j], cur[j-1])
			}
			cur[j] = c
			rowMin = min(rowMin, c)
		}
		if rowMin >= max {
			return max
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], max)
}
