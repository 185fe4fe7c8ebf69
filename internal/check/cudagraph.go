package check

import (
	"slices"
	"strings"
)

// cudaGraphModules checks the modules a per-layer CUDA graph captures
// (cuda_graph_impl "local" or "transformer_engine") as
// TransformerConfig.__post_init__ does at d98e8a64:
//   - the local implementation captures moe_router and moe_preprocess
//     together: it adds the other when one is given;
//   - "moe" and "moe_router" exclude each other;
//   - moe_preprocess needs moe_router;
//   - a model without experts captures neither moe nor moe_router;
//   - a model whose every layer is an MoE layer has no "mlp" to capture;
//   - "moe" needs drop-and-pad MoE (a capacity factor and
//     pad_expert_input_to_capacity), and without it the alltoall dispatcher
//     with a capacity factor cannot capture moe_preprocess (its
//     device-to-host copies and synchronisations);
//   - with the transformer_engine implementation a recomputed "moe" module
//     cannot sit under a moe_router graph.
func (c *checker) cudaGraphModules() {
	s := c.s
	k := s.Kernels
	if k.CUDAGraphImpl != "local" && k.CUDAGraphImpl != "transformer_engine" {
		return
	}
	if len(k.CUDAGraphScope) > 0 && len(k.CUDAGraphModules) > 0 {
		return // kernel-options already asks for one of the two
	}
	path, given := "kernels.cuda_graph_modules", k.CUDAGraphModules
	if len(given) == 0 {
		path, given = "kernels.cuda_graph_scope", k.CUDAGraphScope
	}
	if len(given) == 0 {
		return
	}
	mods := slices.Clone(given)
	if k.CUDAGraphImpl == "local" && (slices.Contains(mods, "moe_router") || slices.Contains(mods, "moe_preprocess")) {
		for _, m := range []string{"moe_router", "moe_preprocess"} {
			if !slices.Contains(mods, m) {
				mods = append(mods, m)
			}
		}
	}
	has := func(m string) bool { return slices.Contains(mods, m) }
	without := func(drop ...string) option {
		return setOpt(setting{path, slices.DeleteFunc(slices.Clone(given), func(m string) bool { return slices.Contains(drop, m) })})
	}
	report := func(format string, args []any, opts ...option) {
		c.report("kernel-options", path, c.anyOf("kernel-options", path, opts...),
			"%s = %s: "+format, append([]any{strings.TrimPrefix(path, "kernels."), literal(given)}, args...)...)
	}
	e := s.Model.MoE
	if e == nil || e.Experts <= 1 {
		if has("moe") || has("moe_router") {
			report("the moe and moe_router CUDA-graph modules are only supported for MoE models", nil,
				without("moe", "moe_router", "moe_preprocess"))
		}
		return
	}
	if has("moe") && has("moe_router") {
		report("a CUDA graph cannot capture both moe and moe_router", nil,
			without("moe_router", "moe_preprocess"), without("moe"))
	}
	if has("moe_preprocess") && !has("moe_router") {
		report("the moe_preprocess CUDA graph is only supported with the moe_router graph", nil,
			setOpt(setting{path, append(slices.Clone(given), "moe_router")}), without("moe_preprocess"))
	}
	allMoE := len(c.d.MoELayers) > 0 && !slices.Contains(c.d.MoELayers, false)
	if allMoE && has("mlp") {
		report("every layer is an MoE layer, so there is no dense mlp to capture", nil, without("mlp"))
	}
	dropPad := e.CapacityFactor != nil && e.PadExpertInputToCapacity
	if !dropPad && has("moe") {
		report("the moe CUDA graph is only supported with drop-and-pad MoE (capacity_factor %s, pad_expert_input_to_capacity %t)",
			[]any{capacityText(e.CapacityFactor), e.PadExpertInputToCapacity},
			without("moe"), setOpt(setting{"model.moe.capacity_factor", 1.0}, setting{"model.moe.pad_expert_input_to_capacity", true}))
	}
	if !dropPad && e.Dispatcher == "alltoall" && e.CapacityFactor != nil && has("moe_preprocess") {
		report("the moe_preprocess CUDA graph is not supported with the alltoall dispatcher and a capacity factor without padding (device-to-host copies and synchronisations in the preprocess step)", nil,
			without("moe_router", "moe_preprocess"), without("moe_preprocess"), setOpt(setting{"model.moe.pad_expert_input_to_capacity", true}))
	}
	if k.CUDAGraphImpl == "transformer_engine" && s.Train.Recompute == "selective" && has("moe_router") &&
		slices.Contains(s.Train.RecomputeModuleList(), "moe") {
		report("recomputing the moe module is not supported under the moe_router CUDA graph with cuda_graph_impl \"transformer_engine\"", nil,
			without("moe_router", "moe_preprocess"),
			setOpt(setting{"train.recompute_modules", slices.DeleteFunc(slices.Clone(s.Train.RecomputeModuleList()), func(m string) bool { return m == "moe" })}))
	}
}

func capacityText(f *float64) string {
	if f == nil {
		return "unset"
	}
	return literal(*f)
}
