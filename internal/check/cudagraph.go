package check

import (
	"fmt"
	"slices"
	"strings"

	"parc.dev/parc/internal/spec"
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
	g, ok := c.cudaGraph() // not ok: kernel-options already asks for one of the two lists
	if !ok || g.impl != "local" && g.impl != "transformer_engine" {
		return
	}
	path, given := g.path, g.given
	if len(given) == 0 {
		return
	}
	mods := slices.Clone(g.mods)
	if g.impl == "local" && (slices.Contains(mods, "moe_router") || slices.Contains(mods, "moe_preprocess")) {
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
			"%s = %s: "+format, append([]any{strings.TrimPrefix(path, "kernels."), spec.Literal(given)}, args...)...)
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
	if g.impl == "transformer_engine" && s.Train.Recompute == "selective" && has("moe_router") &&
		slices.Contains(s.Train.RecomputeModuleList(), "moe") {
		report("recomputing the moe module is not supported under the moe_router CUDA graph with cuda_graph_impl \"transformer_engine\"", nil,
			without("moe_router", "moe_preprocess"),
			setOpt(setting{"train.recompute_modules", slices.DeleteFunc(slices.Clone(s.Train.RecomputeModuleList()), func(m string) bool { return m == "moe" })}))
	}
}

// cudaGraphMoEDispatch warns when a full-iteration CUDA graph would
// capture an MoE dispatch whose sizes the host learns from the GPU every
// step (spec.MoE.StaticDispatch is false): Megatron-LM's CUDA graph guide at
// d98e8a64 (docs/user-guide/features/cuda_graph.md, "MoE Model Training"):
// "MoE expert dispatch involves dynamic shapes and cannot be captured";
// static shapes come from --moe-expert-rank-capacity-factor, and
// Megatron-Bridge's full-iteration recipes set it with the paged stash
// (set_full_iter_cg_configs: "Dropless MoE produces variable-shaped
// per-expert tensors that CG cannot capture"). Megatron's arguments accept
// the combination; the capture fails at run time (a device-to-host copy
// inside a capturing stream), so this is a warning.
func (c *checker) cudaGraphMoEDispatch() {
	s := c.s
	g, ok := c.cudaGraph()
	if !ok || g.impl != "full_iteration" || !c.isMoE() || s.Model.MoE.StaticDispatch() {
		return
	}
	path := "kernels.cuda_graph_impl"
	if s.Kernels.CUDAGraphImpl != "full_iteration" {
		path = g.path
	}
	e := s.Model.MoE
	budget := []setting{{"model.moe.expert_rank_capacity_factor", 1.5}, {"model.moe.paged_stash", true}}
	if e.Dispatcher != "flex" || !e.BudgetBackend() {
		budget = append(budget, setting{"model.moe.dispatcher", "flex"}, setting{"model.moe.flex_dispatcher_backend", "hybridep"})
	}
	opts := []option{setOpt(budget...)}
	if !s.Kernels.UseTransformerEngineOpFuser {
		opts = append(opts, setOpt(append(slices.Clone(budget), setting{"kernels.use_transformer_engine_op_fuser", true})...))
	}
	perLayer := []setting{{"kernels.cuda_graph_impl", "transformer_engine"}, {"kernels.cuda_graph_modules", []string{"attn", "moe_router", "moe_preprocess"}}}
	if len(s.Kernels.CUDAGraphScope) > 0 {
		perLayer = append(perLayer, setting{"kernels.cuda_graph_scope", []string{}})
	}
	opts = append(opts, setOpt(perLayer...))
	how := "dropless routing"
	switch {
	case e.ExpertRankCapacityFactor != nil:
		how = fmt.Sprintf("expert_rank_capacity_factor without the flex dispatcher's hybridep or ncclep backend (dispatcher %s)", e.Dispatcher)
	case e.CapacityFactor != nil && !e.PadExpertInputToCapacity:
		how = "a capacity factor without pad_expert_input_to_capacity"
	case e.CapacityFactor != nil:
		how = fmt.Sprintf("padded to capacity, but the %s dispatcher still copies its token counts to the host", dispatcherName(e))
	}
	c.report("cuda-graph-moe-dynamic", path, c.anyOf("cuda-graph-moe-dynamic", path, opts...),
		"a full-iteration CUDA graph captures the MoE layers' token dispatch, whose sizes the host reads from the GPU every step (%s): Megatron's CUDA graph guide says MoE dispatch with dynamic shapes cannot be captured, so the capture fails when the run starts",
		how)
}

// dispatcherName names e's dispatcher, with the flex dispatcher's backend.
func dispatcherName(e *spec.MoE) string {
	if e.Dispatcher == "flex" {
		return "flex (" + e.FlexBackend() + ")"
	}
	return e.Dispatcher
}

func capacityText(f *float64) string {
	if f == nil {
		return "unset"
	}
	return spec.Literal(*f)
}

// cudaGraphRecompute checks what selective recomputation may recompute under
// a CUDA graph (TransformerConfig.__post_init__ at d98e8a64,
// transformer_config.py:2852-2906): a graphed module cannot recompute with a
// random number, so with any CUDA graph (cuda_graph_impl not "none") and
// selective recomputation
//   - attention dropout cannot go with a recomputed core_attn when the graph
//     captures attention (attn, or the whole layer);
//   - hidden dropout cannot go with a recomputed mlp (moe) when the graph
//     captures the mlp (moe), or the whole layer;
//   - --moe-input-jitter-eps (launch.extra_args: the router's input jitter)
//     cannot go with a recomputed moe when the graph captures the moe or the
//     whole layer.
//
// The whole layer is captured by cuda_graph_impl "full_iteration" or by an
// empty module list (the deprecated scope "full" included).
func (c *checker) cudaGraphRecompute() {
	s := c.s
	t := s.Train
	g, ok := c.cudaGraph()
	if !ok || g.impl == "" || g.impl == "none" || t.Recompute != "selective" {
		return
	}
	path, given, mods, impl := g.path, g.given, g.mods, g.impl
	whole := impl == "full_iteration" || len(mods) == 0
	graphed := func(m string) bool { return whole || slices.Contains(mods, m) }
	rec := t.RecomputeModuleList()
	recomputes := func(m string) bool { return slices.Contains(rec, m) }
	without := func(drop ...string) option {
		rest := slices.DeleteFunc(slices.Clone(rec), func(m string) bool { return slices.Contains(drop, m) })
		if len(rest) == 0 {
			return setOpt(setting{"train.recompute", "none"}, setting{"train.recompute_modules", nil})
		}
		return setOpt(setting{"train.recompute_modules", rest})
	}
	graphs := func() string {
		if whole {
			return fmt.Sprintf("cuda_graph_impl %q captures the whole layer", impl)
		}
		return fmt.Sprintf("%s = %s", strings.TrimPrefix(path, "kernels."), spec.Literal(given))
	}
	ungraph := func(drop ...string) []option {
		if whole {
			return nil
		}
		rest := slices.DeleteFunc(slices.Clone(given), func(m string) bool { return slices.Contains(drop, m) })
		if len(rest) == 0 {
			return []option{setOpt(setting{"kernels.cuda_graph_impl", "none"}, setting{path, nil})}
		}
		return []option{setOpt(setting{path, rest})}
	}
	if t.AttentionDropout != 0 && recomputes("core_attn") && graphed("attn") {
		opts := append([]option{setOpt(setting{"train.attention_dropout", 0.0}), without("core_attn")}, ungraph("attn")...)
		c.report("kernel-options", "train.attention_dropout", c.anyOf("kernel-options", "train.attention_dropout", opts...),
			"attention_dropout=%g is not supported with a recomputed core_attn (recompute_modules %s) under a CUDA graph of attention (%s): a graphed recomputation cannot draw random numbers",
			t.AttentionDropout, spec.Literal(rec), graphs())
	}
	if t.HiddenDropout != 0 {
		var hit []string
		for _, m := range []string{"mlp", "moe"} {
			if recomputes(m) && graphed(m) {
				hit = append(hit, m)
			}
		}
		if len(hit) > 0 {
			opts := append([]option{setOpt(setting{"train.hidden_dropout", 0.0}), without(hit...)}, ungraph(hit...)...)
			c.report("kernel-options", "train.hidden_dropout", c.anyOf("kernel-options", "train.hidden_dropout", opts...),
				"hidden_dropout=%g is not supported with a recomputed %s (recompute_modules %s) under a CUDA graph of it (%s): a graphed recomputation cannot draw random numbers",
				t.HiddenDropout, strings.Join(hit, " and "), spec.Literal(rec), graphs())
		}
	}
	const jitter = "--moe-input-jitter-eps"
	if c.hasFlag(jitter) && recomputes("moe") && graphed("moe") {
		opts := append([]option{setOpt(setting{"launch.extra_args", withoutFlagAndValue(s.Launch.ExtraArgs, jitter)}), without("moe")}, ungraph("moe")...)
		c.report("kernel-options", "launch.extra_args", c.anyOf("kernel-options", "launch.extra_args", opts...),
			"%s (launch.extra_args) is not supported with a recomputed moe (recompute_modules %s) under a CUDA graph of it (%s): a graphed recomputation cannot draw random numbers",
			jitter, spec.Literal(rec), graphs())
	}
}

// withoutFlagAndValue is args without a valued flag: "--flag value" or
// "--flag=value".
func withoutFlagAndValue(args []string, flag string) []string {
	out := []string{}
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == flag:
			i++ // its value
		case strings.HasPrefix(args[i], flag+"="):
		default:
			out = append(out, args[i])
		}
	}
	return out
}

// cudaGraphSetup is the CUDA graph Megatron builds from the kernels block
// once validate_args has read the deprecated --cuda-graph-scope as
// --cuda-graph-modules and normalised it (arguments.py:633-645,
// cuda_graph_config.py normalize_cuda_graph_modules at d98e8a64).
type cudaGraphSetup struct {
	// path and given are the user's list: kernels.cuda_graph_modules, or
	// the deprecated kernels.cuda_graph_scope.
	path  string
	given []string
	// mods are the modules captured per layer: given without the
	// deprecated values "full" (the whole layer, as an empty list),
	// "full_iteration" (cuda_graph_impl full_iteration) and
	// "full_iteration_inference" (an inference scope).
	mods []string
	// impl is cuda_graph_impl after the deprecated "full_iteration" scope
	// has set it.
	impl string
}

// cudaGraphImpl is cuda_graph_impl as Megatron ends up with it.
func (c *checker) cudaGraphImpl() string {
	if g, ok := c.cudaGraph(); ok {
		return g.impl
	}
	return c.s.Kernels.CUDAGraphImpl
}

// cudaGraph is the plan's CUDA graph setup; ok is false when the modules are
// given twice (kernel-options reports that).
func (c *checker) cudaGraph() (g cudaGraphSetup, ok bool) {
	k := c.s.Kernels
	if len(k.CUDAGraphScope) > 0 && len(k.CUDAGraphModules) > 0 {
		return g, false
	}
	g.path, g.given, g.impl = "kernels.cuda_graph_modules", k.CUDAGraphModules, k.CUDAGraphImpl
	if len(g.given) == 0 {
		g.path, g.given = "kernels.cuda_graph_scope", k.CUDAGraphScope
	}
	for _, m := range g.given {
		switch m {
		case "full", "full_iteration_inference":
		case "full_iteration":
			g.impl = "full_iteration"
		default:
			g.mods = append(g.mods, m)
		}
	}
	return g, true
}

// cudaGraphScope checks the module list against the implementation as
// validate_args does at d98e8a64:
//   - the deprecated scope "full" stands alone ("full scope cannot be used
//     with other scopes", cuda_graph_config.py:40);
//   - one deprecated value at a time, "full_iteration" only with
//     cuda_graph_impl none, local or full_iteration, and
//     "full_iteration_inference" only with none or local
//     (validate_deprecated_cuda_graph_modules_migration_inputs);
//   - a full-iteration graph captures no module list (arguments.py:1968,
//     transformer_config.py:2794).
func (c *checker) cudaGraphScope() {
	g, ok := c.cudaGraph()
	if !ok || len(g.given) == 0 {
		return
	}
	field := strings.TrimPrefix(g.path, "kernels.")
	keep := func(drop ...string) option {
		rest := slices.DeleteFunc(slices.Clone(g.given), func(m string) bool { return slices.Contains(drop, m) })
		if len(rest) == 0 {
			return setOpt(setting{g.path, nil})
		}
		return setOpt(setting{g.path, rest})
	}
	report := func(format string, args []any, opts ...option) {
		c.report("kernel-options", g.path, c.anyOf("kernel-options", g.path, opts...),
			"%s = %s: "+format, append([]any{field, spec.Literal(g.given)}, args...)...)
	}
	if slices.Contains(g.given, "full") && len(g.given) > 1 {
		report("the deprecated scope \"full\" (the whole layer) cannot be given with other scopes", nil,
			setOpt(setting{g.path, []string{"full"}}), keep("full"))
		return
	}
	fi, fii := slices.Contains(g.given, "full_iteration"), slices.Contains(g.given, "full_iteration_inference")
	impl := c.s.Kernels.CUDAGraphImpl
	switch {
	case fi && fii:
		report("the deprecated values full_iteration and full_iteration_inference cannot be given together", nil,
			keep("full_iteration_inference"), keep("full_iteration"))
		return
	case fi && impl == "transformer_engine":
		report("the deprecated scope full_iteration cannot be combined with cuda_graph_impl %q", []any{impl},
			setOpt(setting{"kernels.cuda_graph_impl", "full_iteration"}, setting{g.path, nil}), keep("full_iteration"))
		return
	case fii && impl != "" && impl != "none" && impl != "local":
		report("the deprecated scope full_iteration_inference cannot be combined with cuda_graph_impl %q", []any{impl},
			keep("full_iteration_inference"))
		return
	}
	if g.impl == "full_iteration" && len(g.mods) > 0 {
		opts := []option{keep(g.mods...)}
		for _, other := range []string{"local", "transformer_engine"} {
			if !fi {
				opts = append(opts, setOpt(setting{"kernels.cuda_graph_impl", other}))
			}
		}
		report("a full-iteration CUDA graph captures the whole iteration and takes no module list", nil, opts...)
	}
}

// delayWgradGraphs checks delayed weight gradients under a CUDA graph with
// overlapped gradient reduction (validate_args at d98e8a64,
// arguments.py:1903-1927): when the graph holds a weight gradient (it
// captures attention, or the moe_router with shared experts that do not
// overlap) the gradients need gradient_accumulation_fusion (the default
// accumulation does not use static addresses), and a graphed attention
// takes no linear or QKV bias.
func (c *checker) delayWgradGraphs() {
	s := c.s
	g, ok := c.cudaGraph()
	if !ok || !s.Parallel.DelayWgradCompute || !s.Train.OverlapGradReduce {
		return
	}
	attn := slices.Contains(g.mods, "attn")
	e := s.Model.MoE
	router := slices.Contains(g.mods, "moe_router") && e != nil && e.SharedFFNHidden > 0 && !e.SharedExpertOverlap
	if !attn && !router {
		return
	}
	why := fmt.Sprintf("%s = %s", strings.TrimPrefix(g.path, "kernels."), spec.Literal(g.given))
	if router && !attn {
		why += " with shared experts that do not overlap"
	}
	noDelay := setOpt(setting{"parallel.delay_wgrad_compute", false})
	noOverlap := setOpt(setting{"train.overlap_grad_reduce", false})
	if !s.Kernels.GradientAccumulationFusion {
		const path = "kernels.gradient_accumulation_fusion"
		c.report("kernel-options", path, c.anyOf("kernel-options", path, setOpt(setting{path, true}), noDelay, noOverlap),
			"delay_wgrad_compute with overlap_grad_reduce under a CUDA graph holding weight gradients (%s) needs gradient_accumulation_fusion: the default gradient accumulation has no static addresses", why)
	}
	if attn && (s.Model.Bias || s.Model.QKVBias) {
		path, v := "model.qkv_bias", s.Model.QKVBias
		if s.Model.Bias {
			path, v = "model.bias", s.Model.Bias
		}
		c.report("kernel-options", path, c.anyOf("kernel-options", path,
			setOpt(setting{"model.bias", false}, setting{"model.qkv_bias", false}), noDelay, noOverlap),
			"delay_wgrad_compute with overlap_grad_reduce and a CUDA graph of attention (%s) does not support attention biases (%s = %t)",
			why, strings.TrimPrefix(path, "model."), v)
	}
}

// graphAllocator checks the launch environment of Transformer Engine's CUDA
// graphs (validate_args at d98e8a64, arguments.py:1960-1966): with
// PYTORCH_CUDA_ALLOC_CONF holding expandable_segments:True, NCCL's graph
// registration must be off (NCCL_GRAPH_REGISTER=0), or the graphs hit
// illegal memory accesses.
func (c *checker) graphAllocator() {
	if c.cudaGraphImpl() != "transformer_engine" {
		return
	}
	conf, path, ok := c.env("PYTORCH_CUDA_ALLOC_CONF")
	if !ok || !strings.Contains(conf, "expandable_segments:True") {
		return
	}
	const name = "NCCL_GRAPH_REGISTER"
	v, vpath, set := c.env(name)
	if set && v == "0" {
		return
	}
	if !set {
		vpath = strings.TrimSuffix(path, "PYTORCH_CUDA_ALLOC_CONF") + name
	}
	c.report("kernel-options", path, c.anyOf("kernel-options", path,
		setOpt(setting{vpath, "0"}), setOpt(setting{path, nil}), setOpt(setting{"kernels.cuda_graph_impl", "local"})),
		"PYTORCH_CUDA_ALLOC_CONF=%q with cuda_graph_impl \"transformer_engine\" needs %s=0 (NCCL's graph registration with expandable segments makes illegal memory accesses)", conf, name)
}
