package check

import (
	"slices"
	"strings"
)

// moeOffloadModules are the offload modules inside the routed experts.
var moeOffloadModules = []string{"expert_fc1", "moe_act", "fused_group_mlp"}

// fineGrainedOffloading checks fine-grained activation offloading as
// Megatron-Core does at d98e8a64: TransformerConfig.__post_init__ (at least
// one module; not with cpu_offloading; attn_proj only with core_attn; no
// gdp_qkv beside a recomputed gdp_in_proj; nothing inside the MoE layer when
// "moe" is recomputed; fused_group_mlp needs the TE op fuser and excludes
// expert_fc1 and moe_act; "mhc" recompute not supported; the CUDA-graph
// rules) and validate_args (transformer_impl transformer_engine;
// NVTE_CPU_OFFLOAD_V1=1 with TE >= 2.10, which parc's environment sets).
func (c *checker) fineGrainedOffloading() {
	s := c.s
	t := s.Train
	const on = "train.fine_grained_activation_offloading"
	const mods = "train.offload_modules"
	if !t.FineGrainedActivationOffloading {
		var set []string
		var unset []setting
		if len(t.OffloadModules) > 0 {
			set, unset = append(set, mods), append(unset, setting{mods, nil})
		}
		if t.MinOffloadedTensorSize != 1<<20 && t.MinOffloadedTensorSize != 0 {
			set, unset = append(set, "train.min_offloaded_tensor_size"), append(unset, setting{"train.min_offloaded_tensor_size", 1 << 20})
		}
		if t.ActivationOffloadFraction != 1 && t.ActivationOffloadFraction != 0 {
			set, unset = append(set, "train.activation_offload_fraction"), append(unset, setting{"train.activation_offload_fraction", 1.0})
		}
		if t.DeltaOffloadBytesAcrossPPRanks != 0 {
			set, unset = append(set, "train.delta_offload_bytes_across_pp_ranks"), append(unset, setting{"train.delta_offload_bytes_across_pp_ranks", 0})
		}
		if t.FineGrainedOffloadingMaxInflight != nil {
			set, unset = append(set, "train.fine_grained_offloading_max_inflight_offloads"), append(unset, setting{"train.fine_grained_offloading_max_inflight_offloads", nil})
		}
		if t.DelayOffloadUntilCUDAGraph {
			set, unset = append(set, "train.delay_offload_until_cuda_graph"), append(unset, setting{"train.delay_offload_until_cuda_graph", false})
		}
		if len(set) > 0 {
			c.report("offload-options-unused", set[0], c.anyOf("offload-options-unused", set[0],
				setOpt(unset...), setOpt(setting{on, true})),
				"%s only apply to fine-grained activation offloading, which is off (Megatron ignores them)", strings.Join(set, ", "))
		}
		return
	}
	has := func(m string) bool { return slices.Contains(t.OffloadModules, m) }
	off := setOpt(setting{on, false})
	if t.OffloadModules != nil {
		off = setOpt(setting{on, false}, setting{mods, nil})
	}
	if len(t.OffloadModules) == 0 {
		first := "core_attn"
		if s.Model.MoE != nil && c.cudaGraphImpl() == "local" {
			first = "moe_act"
		}
		c.report("fine-grained-offloading", on, c.anyOf("fine-grained-offloading", on,
			setOpt(setting{mods, []string{first}}), off),
			"fine-grained activation offloading needs at least one module in train.offload_modules (TransformerConfig asserts a non-empty offload_modules)")
		return
	}
	if n := t.CPUOffloadingNumLayers; n > 0 {
		c.report("fine-grained-offloading", "train.cpu_offloading_num_layers", c.anyOf("fine-grained-offloading", "train.cpu_offloading_num_layers",
			setOpt(setting{"train.cpu_offloading_num_layers", 0}), off),
			"fine-grained activation offloading cannot run with layer-wise CPU offloading (cpu_offloading_num_layers=%d)", n).
			Related(on, "fine_grained_activation_offloading = true")
	}
	if impl := s.Kernels.TransformerImpl; impl != "" && impl != "transformer_engine" {
		c.report("fine-grained-offloading", "kernels.transformer_impl", c.anyOf("fine-grained-offloading", "kernels.transformer_impl",
			setOpt(setting{"kernels.transformer_impl", "transformer_engine"}), off),
			"fine-grained activation offloading only runs with transformer_impl \"transformer_engine\", not %q (validate_args)", impl).
			Related(on, "fine_grained_activation_offloading = true")
	}
	without := func(drop ...string) []string {
		var out []string
		for _, m := range t.OffloadModules {
			if !slices.Contains(drop, m) {
				out = append(out, m)
			}
		}
		return out
	}
	// removeOrOff drops modules from the list, with turning offloading off as
	// the alternative that always clears the rule (another rule may still
	// hold the shorter list).
	removeOrOff := func(drop ...string) []option {
		if rest := without(drop...); len(rest) > 0 {
			return []option{setOpt(setting{mods, rest}), off}
		}
		return []option{off}
	}
	if has("attn_proj") && !has("core_attn") {
		c.report("fine-grained-offloading", mods, c.anyOf("fine-grained-offloading", mods,
			append([]option{setOpt(setting{mods, append(slices.Clone(t.OffloadModules), "core_attn")})}, removeOrOff("attn_proj")...)...),
			"offload_modules has attn_proj without core_attn: attn_proj's input is core attention's output, which core attention's backward needs on the GPU")
	}
	recomputed := t.RecomputeModuleList()
	if has("gdp_qkv") && slices.Contains(recomputed, "gdp_in_proj") {
		c.report("fine-grained-offloading", mods, c.anyOf("fine-grained-offloading", mods, removeOrOff("gdp_qkv")...),
			"offload_modules has gdp_qkv while recompute_modules has gdp_in_proj, which discards the input gdp_qkv would keep on the host")
	}
	if slices.Contains(recomputed, "moe") {
		if inside := slices.DeleteFunc(slices.Clone(t.OffloadModules), func(m string) bool { return !slices.Contains(moeOffloadModules, m) }); len(inside) > 0 {
			c.report("fine-grained-offloading", mods, c.anyOf("fine-grained-offloading", mods, removeOrOff(moeOffloadModules...)...),
				"offload_modules has %s while recompute_modules has \"moe\", which recomputes the whole MoE layer", strings.Join(inside, ", "))
		}
	}
	if slices.Contains(recomputed, "mhc") {
		c.report("fine-grained-offloading", "train.recompute_modules", c.anyOf("fine-grained-offloading", "train.recompute_modules", off),
			"recompute_modules \"mhc\" with fine-grained activation offloading is not supported at this Megatron version (NotImplementedError)")
	}
	if has("fused_group_mlp") {
		if !s.Kernels.UseTransformerEngineOpFuser {
			c.report("fine-grained-offloading", mods, c.anyOf("fine-grained-offloading", mods,
				append([]option{setOpt(setting{"kernels.use_transformer_engine_op_fuser", true})}, removeOrOff("fused_group_mlp")...)...),
				"offload_modules fused_group_mlp needs kernels.use_transformer_engine_op_fuser")
		}
		if has("expert_fc1") || has("moe_act") {
			c.report("fine-grained-offloading", mods, c.anyOf("fine-grained-offloading", mods, removeOrOff("expert_fc1", "moe_act")...),
				"offload_modules fused_group_mlp offloads the whole fused grouped MLP and cannot be combined with expert_fc1 or moe_act")
		}
	}
	c.fineGrainedOffloadingGraphs(off)
	if v, path, ok := c.env("NVTE_CPU_OFFLOAD_V1"); ok && v != "1" {
		c.report("fine-grained-offloading", path, c.anyOf("fine-grained-offloading", path, setOpt(setting{path, nil}), off),
			"%s=%q: fine-grained activation offloading with Transformer Engine 2.10 or later needs NVTE_CPU_OFFLOAD_V1=1 (validate_args), which parc sets unless the environment overrides it", path, v).
			Related(on, "fine_grained_activation_offloading = true")
	}
}

// fineGrainedOffloadingGraphs is the CUDA-graph part of fine-grained
// offloading's rules (TransformerConfig.__post_init__, under cuda_graph_impl
// != "none"): local graphs only with partial MoE offload (expert_fc1,
// moe_act, fused_group_mlp) and a module list that does not capture "moe";
// no "moe" graph module; warmup steps > 0; full-iteration graphs need
// fine_grained_offloading_max_inflight_offloads.
func (c *checker) fineGrainedOffloadingGraphs(off option) {
	s, t := c.s, c.s.Train
	k := s.Kernels
	impl := c.cudaGraphImpl() // after the deprecated scope full_iteration
	if impl == "" || impl == "none" {
		return
	}
	graphMods := k.CUDAGraphModules
	if len(graphMods) == 0 {
		graphMods = k.CUDAGraphScope
	}
	const mods = "train.offload_modules"
	none := setOpt(setting{"kernels.cuda_graph_impl", "none"})
	if impl == "local" {
		var outside []string
		for _, m := range t.OffloadModules {
			if !slices.Contains(moeOffloadModules, m) {
				outside = append(outside, m)
			}
		}
		if len(outside) > 0 {
			var opts []option
			if len(outside) < len(t.OffloadModules) {
				opts = append(opts, setOpt(setting{mods, slices.DeleteFunc(slices.Clone(t.OffloadModules), func(m string) bool { return slices.Contains(outside, m) })}))
			}
			opts = append(opts, setOpt(setting{"kernels.cuda_graph_impl", "transformer_engine"}), none, off)
			c.report("fine-grained-offloading", mods, c.anyOf("fine-grained-offloading", mods, opts...),
				"with cuda_graph_impl \"local\", fine-grained offloading only offloads expert_fc1, moe_act and fused_group_mlp, not %s", strings.Join(outside, ", "))
		}
		if len(graphMods) == 0 {
			c.report("fine-grained-offloading", "kernels.cuda_graph_impl", c.anyOf("fine-grained-offloading", "kernels.cuda_graph_impl",
				setOpt(setting{"kernels.cuda_graph_modules", []string{"attn", "moe_router"}}), none, off),
				"fine-grained activation offloading with cuda_graph_impl \"local\" does not run with whole-layer CUDA graphs (no cuda_graph_modules)")
		}
	}
	if slices.Contains(graphMods, "moe") {
		path := "kernels.cuda_graph_modules"
		if len(k.CUDAGraphModules) == 0 {
			path = "kernels.cuda_graph_scope"
		}
		c.report("fine-grained-offloading", path, c.anyOf("fine-grained-offloading", path,
			setOpt(setting{path, slices.DeleteFunc(slices.Clone(graphMods), func(m string) bool { return m == "moe" })}), none, off),
			"fine-grained activation offloading does not run with the \"moe\" CUDA graph module (token-drop MoE is not supported with offloading)")
	}
	if k.CUDAGraphWarmupSteps <= 0 {
		c.report("fine-grained-offloading", "kernels.cuda_graph_warmup_steps", c.anyOf("fine-grained-offloading", "kernels.cuda_graph_warmup_steps",
			setOpt(setting{"kernels.cuda_graph_warmup_steps", 3}), none, off),
			"fine-grained activation offloading with CUDA graphs needs cuda_graph_warmup_steps > 0 (it is %d)", k.CUDAGraphWarmupSteps)
	}
	if impl == "full_iteration" && t.FineGrainedOffloadingMaxInflight == nil && !c.hasFlag("--fine-grained-offloading-max-inflight-offloads") {
		c.report("fine-grained-offloading", "kernels.cuda_graph_impl", c.anyOf("fine-grained-offloading", "kernels.cuda_graph_impl",
			setOpt(setting{"train.fine_grained_offloading_max_inflight_offloads", 1}),
			setOpt(setting{"kernels.cuda_graph_impl", "transformer_engine"}), none, off),
			"fine-grained activation offloading with full-iteration CUDA graphs needs train.fine_grained_offloading_max_inflight_offloads (--fine-grained-offloading-max-inflight-offloads, a non-negative integer)")
	}
}

// deferEmbeddingWgrad checks --defer-embedding-wgrad-compute as
// ModelParallelConfig.__post_init__ does at d98e8a64: pipeline parallelism
// and gradient-accumulation fusion are needed (the deferred GEMMs run in the
// pipeline flush and accumulate into main_grad with the fused kernel).
func (c *checker) deferEmbeddingWgrad() {
	p := c.s.Parallel
	const path = "parallel.defer_embedding_wgrad_compute"
	if !p.DeferEmbeddingWgradCompute {
		if p.WgradDeferralLimit != 0 {
			c.report("offload-options-unused", "parallel.wgrad_deferral_limit", c.anyOf("offload-options-unused", "parallel.wgrad_deferral_limit",
				setOpt(setting{"parallel.wgrad_deferral_limit", 0}), setOpt(setting{path, true})),
				"wgrad_deferral_limit=%d only applies with defer_embedding_wgrad_compute, which is off (Megatron ignores it)", p.WgradDeferralLimit)
		}
		return
	}
	off := setOpt(setting{path, false})
	if p.WgradDeferralLimit != 0 {
		off = setOpt(setting{path, false}, setting{"parallel.wgrad_deferral_limit", 0})
	}
	if p.PP <= 1 {
		c.report("defer-embedding-wgrad", path, c.anyOf("defer-embedding-wgrad", path, setOpt(setting{"parallel.pp", 2}), off),
			"defer_embedding_wgrad_compute needs pipeline parallelism (pp=%d): the output layer's weight gradients are deferred to the pipeline flush", p.PP)
	}
	if !c.s.Kernels.GradientAccumulationFusion {
		c.report("defer-embedding-wgrad", "kernels.gradient_accumulation_fusion", c.anyOf("defer-embedding-wgrad", "kernels.gradient_accumulation_fusion",
			setOpt(setting{"kernels.gradient_accumulation_fusion", true}), off),
			"defer_embedding_wgrad_compute needs gradient-accumulation fusion (kernels.gradient_accumulation_fusion is false)").
			Related(path, "defer_embedding_wgrad_compute = true")
	}
}
