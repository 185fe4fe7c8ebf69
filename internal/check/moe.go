package check

import (
	"fmt"
	"parc.dev/parc/internal/spec"
	"slices"
)

// moe checks expert parallelism and the router (M2–M6, M10, M16, M19, M20,
// S9 and the shared-expert split).
func (c *checker) moe() {
	p, m := c.s.Parallel, c.s.Model
	if !c.isMoE() {
		if p.EP > 1 {
			c.report("ep-without-moe", "parallel.ep", c.anyOf("ep-without-moe", "parallel.ep", setOpt(setting{"parallel.ep", 1}))+" (ep splits the experts of model.moe)",
				"ep=%d but the model has no experts (model.moe is not set)", p.EP)
		}
		if p.ETP != nil {
			c.report("etp-without-moe", "parallel.etp", c.anyOf("etp-without-moe", "parallel.etp", setOpt(setting{"parallel.etp", nil})),
				"etp=%d has no effect on a dense model", *p.ETP)
		}
		return
	}
	e := m.MoE
	if e.Experts%p.EP != 0 {
		okEP := c.near("ep-experts", "parallel.ep", p.EP, valuesIn(1, e.Experts, func(v int) bool {
			return e.Experts%v == 0 && spec.Tiles(c.world(), c.etp(), v, p.PP)
		}))
		c.report("ep-experts", "parallel.ep",
			listHint(fmt.Sprintf("ep values dividing experts=%d that fit the world size", e.Experts), okEP, noValue("parallel.ep")),
			"experts=%d is not a multiple of ep=%d", e.Experts, p.EP).
			Related("model.moe.experts", "experts = %d", e.Experts)
	}
	if m.Bias && c.etp() != 1 {
		c.report("moe-bias-etp", "model.bias", c.options("moe-bias-etp", "model.bias", "set model.bias: false (Megatron --disable-bias-linear), or parallel.etp: 1",
			opt("set model.bias: false (Megatron --disable-bias-linear)", setting{"model.bias", false}), opt("set parallel.etp: 1", setting{"parallel.etp", 1})),
			"MoE with linear biases (model.bias=true, Megatron's default) needs etp=1, but etp=%d%s", c.etp(), c.etpOrigin())
	}
	if e.TopK == 1 && e.ScoreFunction == "softmax" && !e.RouterPreSoftmax && e.RouterLoadBalancing != "sinkhorn" {
		c.report("moe-topk-pre-softmax", "model.moe.router_pre_softmax", c.options("moe-topk-pre-softmax", "model.moe.router_pre_softmax", "set model.moe.router_pre_softmax: true",
			opt("set model.moe.router_pre_softmax: true", setting{"model.moe.router_pre_softmax", true})),
			"topk=1 with the softmax score function needs router_pre_softmax (a softmax over one expert has zero gradient)")
	}
	if e.CapacityFactor != nil && *e.CapacityFactor >= 0 &&
		!slices.Contains([]string{"aux_loss", "seq_aux_loss", "global_aux_loss", "none"}, e.RouterLoadBalancing) {
		opts := []option{setOpt(setting{"model.moe.capacity_factor", nil})}
		for _, lb := range []string{"aux_loss", "seq_aux_loss", "global_aux_loss", "none"} {
			opts = append(opts, setOpt(setting{"model.moe.router_load_balancing", lb}))
		}
		c.report("moe-capacity-balancing", "model.moe.capacity_factor", c.anyOf("moe-capacity-balancing", "model.moe.capacity_factor", opts...),
			"capacity_factor=%g does not work with %s load balancing", *e.CapacityFactor, e.RouterLoadBalancing)
	}
	// Padding the experts' inputs to capacity (Megatron-LM d98e8a64,
	// TransformerConfig.__post_init__): it needs a capacity factor (M7), the
	// flex dispatcher's deepep backend does not support it, and the ncclep
	// backend supports neither a capacity factor nor padding
	// (_NCCLEPManager: "drop and pad is not supported yet").
	if e.PadExpertInputToCapacity && e.CapacityFactor == nil {
		c.report("moe-pad-capacity", "model.moe.pad_expert_input_to_capacity", c.anyOf("moe-pad-capacity", "model.moe.pad_expert_input_to_capacity",
			setOpt(setting{"model.moe.pad_expert_input_to_capacity", false}), setOpt(setting{"model.moe.capacity_factor", 1.0})),
			"pad_expert_input_to_capacity needs a capacity_factor")
	}
	if e.FlexWith("deepep") && e.PadExpertInputToCapacity {
		c.report("moe-pad-capacity", "model.moe.pad_expert_input_to_capacity", c.anyOf("moe-pad-capacity", "model.moe.pad_expert_input_to_capacity",
			setOpt(setting{"model.moe.pad_expert_input_to_capacity", false}), setOpt(setting{"model.moe.flex_dispatcher_backend", "hybridep"})),
			"the flex dispatcher's deepep backend does not support pad_expert_input_to_capacity")
	} else if e.FlexWith("ncclep") && (e.PadExpertInputToCapacity || e.CapacityFactor != nil) {
		c.report("moe-pad-capacity", "model.moe.flex_dispatcher_backend", c.anyOf("moe-pad-capacity", "model.moe.flex_dispatcher_backend",
			setOpt(setting{"model.moe.pad_expert_input_to_capacity", false}, setting{"model.moe.capacity_factor", nil}), setOpt(setting{"model.moe.flex_dispatcher_backend", "hybridep"})),
			"the flex dispatcher's ncclep backend supports neither capacity_factor nor pad_expert_input_to_capacity")
	}
	c.rankBudget()
	c.routerPadding()
	if e.ExpertBias && e.ScoreFunction != "sigmoid" {
		c.report("moe-expert-bias-score", "model.moe.expert_bias", c.options("moe-expert-bias-score", "model.moe.expert_bias", `set model.moe.score_function: "sigmoid", or expert_bias: false`,
			opt(`set model.moe.score_function: "sigmoid"`, setting{"model.moe.score_function", "sigmoid"}),
			opt("set model.moe.expert_bias: false", setting{"model.moe.expert_bias", false})),
			"expert_bias needs the sigmoid score function, not %s", e.ScoreFunction)
	}
	if e.RouterLoadBalancing == "sinkhorn" && e.AuxLossCoeff != 0 {
		c.report("moe-sinkhorn-aux-loss", "model.moe.aux_loss_coeff", c.options("moe-sinkhorn-aux-loss", "model.moe.aux_loss_coeff", "set model.moe.aux_loss_coeff: 0 (its default is 1e-2)",
			opt("set model.moe.aux_loss_coeff: 0", setting{"model.moe.aux_loss_coeff", 0.0})),
			"sinkhorn load balancing does not support an auxiliary loss, but aux_loss_coeff=%g", e.AuxLossCoeff)
	}
	if e.TopK > e.Experts {
		okK := c.near("moe-topk-experts", "model.moe.topk", e.TopK, valuesIn(1, e.Experts, func(int) bool { return true }))
		c.report("moe-topk-experts", "model.moe.topk",
			listHint(fmt.Sprintf("topk must be at most experts=%d: valid topk", e.Experts), okK, noValue("model.moe.topk")),
			"topk=%d is larger than experts=%d", e.TopK, e.Experts).
			Related("model.moe.experts", "experts = %d", e.Experts)
	}
	if f, etp := c.d.MoEFFNHidden, c.etp(); f > 0 && f%etp != 0 {
		path := "parallel.etp"
		if e.FFNHidden != nil {
			path = "model.moe.ffn_hidden"
		}
		okETP := c.near("moe-ffn-etp", "parallel.etp", etp, valuesIn(1, c.world(), func(v int) bool { return f%v == 0 && spec.Tiles(c.world(), v, p.EP, p.PP) }))
		c.report("moe-ffn-etp", path, listHint(fmt.Sprintf("etp values dividing %d that fit the world size", f), okETP, noValue("parallel.etp")),
			"the expert ffn_hidden=%d is not divisible by etp=%d%s", f, etp, c.etpOrigin())
	}
	if sh := e.SharedFFNHidden; sh > 0 && sh%p.TP != 0 {
		b, a := c.nearest("moe-shared-ffn-tp", "model.moe.shared_ffn_hidden", sh, p.TP, 24, nil)
		hint := "nearest multiples of tp: " + nearestText(b, a)
		if b == 0 && a == 0 {
			hint = "use a multiple of tp; " + noValue("model.moe.shared_ffn_hidden")
		}
		c.report("moe-shared-ffn-tp", "model.moe.shared_ffn_hidden", hint,
			"shared_ffn_hidden=%d is not divisible by tp=%d", sh, p.TP)
	}
	if sh := e.SharedFFNHidden; sh > 0 && c.s.Model.Bias {
		// SharedExpertMLP.__init__ (moe/shared_experts.py at d98e8a64)
		// asserts config.add_bias_linear == False: "bias is not supported in
		// the shared experts, please set '--disable-bias-linear' instead",
		// when the model is built. Left out, model.bias is off here (the
		// schema's default for an MoE with shared experts).
		c.report("moe-shared-expert-bias", "model.moe.shared_ffn_hidden", c.anyOf("moe-shared-expert-bias", "model.moe.shared_ffn_hidden",
			setOpt(setting{"model.bias", false}).note("Megatron --disable-bias-linear")),
			"the shared experts (shared_ffn_hidden=%d) take no linear biases, and model.bias is on: Megatron stops when it builds the layer", sh)
	}
	if spec.TEGroupedBiasedExperts(c.s) && spec.BiasDropoutFusionOn(c.s) {
		// TEGroupedMLP.__init__ (moe/experts.py:205 at d98e8a64) asserts
		// not (add_bias_linear and bias_dropout_fusion): "bias_dropout_fusion
		// is not supported in TEGroupedMLP when add_bias_linear=True", when
		// the model is built (Megatron-Bridge's gpt_oss_bridge.py turns the
		// fusion off for GPT-OSS's biased experts). Left out, the fusion is
		// off here (spec.DefaultBiasDropoutFusion): only a spec that turns it
		// on gets here.
		c.report("moe-bias-dropout-fusion", "kernels.bias_dropout_fusion", c.anyOf("moe-bias-dropout-fusion", "kernels.bias_dropout_fusion",
			setOpt(setting{"kernels.bias_dropout_fusion", false}), setOpt(setting{"model.bias", false})),
			"the grouped-GEMM experts (Transformer Engine's TEGroupedMLP) take linear biases only without the fused bias-dropout-add, and kernels.bias_dropout_fusion is true: Megatron stops when it builds the layer")
	}
	if cc := c.s.Cluster.GPU.ComputeCapability; e.GroupedGEMM && cc > 0 && cc < 8 {
		c.report("moe-grouped-gemm-gpu", "model.moe.grouped_gemm", c.options("moe-grouped-gemm-gpu", "model.moe.grouped_gemm", "set model.moe.grouped_gemm: false",
			opt("set model.moe.grouped_gemm: false", setting{"model.moe.grouped_gemm", false})),
			"grouped GEMM needs compute capability ≥ 8.0, but %s has %.1f", c.gpuName(), cc)
	}
	if !slices.Contains(c.d.MoELayers, true) {
		okD := c.near("moe-no-layers", "model.moe.dense_layers", e.DenseLayers, valuesIn(0, (m.Layers-1)/max(e.LayerFreq, 1)*max(e.LayerFreq, 1), func(int) bool { return true }))
		hint := listHint("valid dense_layers", okD, noValue("model.moe.dense_layers"))
		c.report("moe-no-layers", "model.moe.dense_layers", hint,
			"dense_layers=%d and layer_freq=%d leave no MoE layer among the %d layers", e.DenseLayers, e.LayerFreq, m.Layers)
	}
}

func (c *checker) etpOrigin() string {
	if c.s.Parallel.ETP == nil {
		return " (etp defaults to tp)"
	}
	return ""
}

func (c *checker) gpuName() string {
	if n := c.s.Cluster.GPU.Name; n != "" {
		return n
	}
	return "the GPU"
}

// rankBudget checks the expert-rank capacity factor and the paged stash as
// TransformerConfig.__post_init__ does at d98e8a64 (M22, M23):
//   - moe_expert_rank_capacity_factor needs moe_flex_dispatcher_backend
//     hybridep or ncclep (the backend, whatever the dispatcher type), and
//     with hybridep use_transformer_engine_op_fuser or moe_use_grouped_tensor
//     (launch.extra_args: the spec has no field for it);
//   - moe_paged_stash needs the rank capacity factor, cannot go with
//     cpu_offloading (--cpu-offloading-num-layers > 0) and takes over the
//     offload modules expert_fc1, moe_act and fused_group_mlp.
func (c *checker) rankBudget() {
	s := c.s
	e := s.Model.MoE
	const cfPath, stashPath = "model.moe.expert_rank_capacity_factor", "model.moe.paged_stash"
	backend := e.FlexBackend()
	drop := setOpt(setting{cfPath, nil})
	if e.PagedStash {
		drop = setOpt(setting{cfPath, nil}, setting{stashPath, false})
	}
	if cf := e.ExpertRankCapacityFactor; cf != nil {
		switch {
		case !e.BudgetBackend():
			opts := []option{drop}
			for _, b := range []string{"hybridep", "ncclep"} {
				if e.Dispatcher == "flex" {
					opts = append(opts, setOpt(setting{"model.moe.flex_dispatcher_backend", b}))
				} else {
					opts = append(opts, setOpt(setting{"model.moe.dispatcher", "flex"}, setting{"model.moe.flex_dispatcher_backend", b}))
				}
			}
			opts = append(opts, setOpt(setting{"model.moe.dispatcher", "flex"}, setting{"model.moe.flex_dispatcher_backend", "hybridep"},
				setting{"kernels.use_transformer_engine_op_fuser", true}))
			c.report("moe-rank-capacity", cfPath, c.anyOf("moe-rank-capacity", cfPath, opts...),
				"expert_rank_capacity_factor=%s needs the flex dispatcher's hybridep or ncclep backend, but flex_dispatcher_backend is %s (dispatcher %s)",
				spec.Literal(*cf), backend, e.Dispatcher)
		case backend == "hybridep" && !s.Kernels.UseTransformerEngineOpFuser && !c.hasFlag("--moe-use-grouped-tensor"):
			c.report("moe-rank-capacity", cfPath, c.anyOf("moe-rank-capacity", cfPath,
				setOpt(setting{"kernels.use_transformer_engine_op_fuser", true}), drop),
				"expert_rank_capacity_factor=%s with the hybridep backend needs kernels.use_transformer_engine_op_fuser (or --moe-use-grouped-tensor): the experts take their token counts on the GPU",
				spec.Literal(*cf))
		}
	}
	if !e.PagedStash {
		return
	}
	if e.ExpertRankCapacityFactor == nil {
		opts := []option{setOpt(setting{stashPath, false})}
		if e.Dispatcher == "flex" && e.BudgetBackend() {
			opts = append(opts, setOpt(setting{cfPath, 1.5}))
		}
		c.report("moe-paged-stash", stashPath, c.anyOf("moe-paged-stash", stashPath, opts...),
			"paged_stash needs expert_rank_capacity_factor (without a rank budget there is nothing to page)")
	}
	if n := s.Train.CPUOffloadingNumLayers; n > 0 {
		c.report("moe-paged-stash", stashPath, c.anyOf("moe-paged-stash", stashPath,
			setOpt(setting{stashPath, false}), setOpt(setting{"train.cpu_offloading_num_layers", 0})),
			"paged_stash cannot go with CPU activation offloading (cpu_offloading_num_layers=%d)", n)
	}
	var clash []string
	for _, m := range s.Train.OffloadModules {
		if m == "expert_fc1" || m == "moe_act" || m == "fused_group_mlp" {
			clash = append(clash, m)
		}
	}
	if len(clash) > 0 {
		keep := slices.DeleteFunc(slices.Clone(s.Train.OffloadModules), func(m string) bool { return slices.Contains(clash, m) })
		c.report("moe-paged-stash", stashPath, c.anyOf("moe-paged-stash", stashPath,
			setOpt(setting{"train.offload_modules", keep}), setOpt(setting{stashPath, false})),
			"paged_stash keeps the routed experts' activations itself, so offload_modules must not include %s", spec.Literal(clash))
	}
}

// routerPadding checks --moe-router-padding-for-quantization (M24): the
// padded routing map aligns each expert's tokens for fp8 or fp4 GEMMs, so
// TransformerConfig.__post_init__ at d98e8a64 raises "fp8/fp4 must be
// specified when moe_router_padding_for_quantization is True." without a
// quantized precision, and "allgather and alltoall_seq dispatcher does not
// support moe_router_padding_for_quantization."; inference-optimized MoE
// layers refuse it too ("Inference-optimized MoE layers do not support
// padded routing map for quantization.").
func (c *checker) routerPadding() {
	e := c.s.Model.MoE
	if e == nil || !e.RouterPaddingForQuantization {
		return
	}
	const path = "model.moe.router_padding_for_quantization"
	off := setOpt(setting{path, false})
	if !c.s.Train.QuantizedGEMMs() {
		c.report("moe-router-padding", path, c.anyOf("moe-router-padding", path, off),
			"router_padding_for_quantization pads each expert's tokens for fp8 or fp4 GEMMs, but train.precision is %q", c.s.Train.Precision)
	}
	if e.Dispatcher == "allgather" {
		c.report("moe-router-padding", path, c.anyOf("moe-router-padding", path, off,
			setOpt(setting{"model.moe.dispatcher", "alltoall"})),
			"the allgather dispatcher does not support router_padding_for_quantization")
	}
	if c.s.Kernels.TransformerImpl == "inference_optimized" {
		c.report("moe-router-padding", path, c.anyOf("moe-router-padding", path, off),
			"inference-optimized MoE layers do not support router_padding_for_quantization")
	}
}
