package check

import (
	"fmt"
	"slices"
	"strings"

	"parc.dev/parc/internal/spec"
)

// schedule checks the LR warmup and decay options against the training
// length they belong to, and the weight-decay schedule (validate_args at
// d98e8a64: iteration-based training takes no sample options and the
// reverse; lr_warmup_fraction excludes lr_warmup_iters/samples; a
// "constant" weight-decay style takes no start/end, the others need both).
func (c *checker) schedule() {
	t := c.s.Train
	if t.Iters != nil && t.Samples == nil {
		if t.LRDecaySamples != nil {
			c.report("train-iters-samples", "train.lr_decay_samples", c.anyOf("train-iters-samples", "train.lr_decay_samples",
				setOpt(setting{"train.lr_decay_iters", (*t.LRDecaySamples + t.GlobalBatch - 1) / max(t.GlobalBatch, 1)}, setting{"train.lr_decay_samples", nil}).
					note("lr_decay_samples / global_batch, rounded up"),
				c.samplesFromIters()),
				"iteration-based training (train.iters) cannot use lr_decay_samples=%d", *t.LRDecaySamples)
		}
		if t.LRWarmupSamples != 0 {
			c.report("train-iters-samples", "train.lr_warmup_samples", c.anyOf("train-iters-samples", "train.lr_warmup_samples",
				setOpt(setting{"train.lr_warmup_iters", (t.LRWarmupSamples + t.GlobalBatch - 1) / max(t.GlobalBatch, 1)}, setting{"train.lr_warmup_samples", 0}).
					note("lr_warmup_samples / global_batch, rounded up"),
				c.samplesFromIters()),
				"iteration-based training (train.iters) cannot use lr_warmup_samples=%d", t.LRWarmupSamples)
		}
	}
	if f := t.LRWarmupFraction; f != nil {
		var other string
		switch {
		case t.LRWarmupIters != 0:
			other = fmt.Sprintf("lr_warmup_iters=%d", t.LRWarmupIters)
		case t.LRWarmupSamples != 0:
			other = fmt.Sprintf("lr_warmup_samples=%d", t.LRWarmupSamples)
		}
		if other != "" {
			c.report("lr-warmup-exclusive", "train.lr_warmup_fraction", "give the warmup once: "+c.anyOf("lr-warmup-exclusive", "train.lr_warmup_fraction",
				setOpt(setting{"train.lr_warmup_fraction", nil}),
				setOpt(setting{"train.lr_warmup_iters", 0}, setting{"train.lr_warmup_samples", 0})),
				"lr_warmup_fraction=%g and %s both set the warmup; Megatron accepts one", *f, other)
		}
	}
	if t.LRDecayStyle != "WSD" && (t.LRWSDDecayIters != nil || t.LRWSDDecaySamples != nil) {
		path := "train.lr_wsd_decay_iters"
		if t.LRWSDDecayIters == nil {
			path = "train.lr_wsd_decay_samples"
		}
		c.report("lr-options-unused", path, c.anyOf("lr-options-unused", path, setOpt(setting{path, nil}), setOpt(setting{"train.lr_decay_style", "WSD"})),
			"%s only applies to the WSD schedule (lr_decay_style=%q)", path, t.LRDecayStyle)
	}
	if t.DecoupledMinLR != nil && t.DecoupledLR == nil {
		c.report("lr-options-unused", "train.decoupled_min_lr", c.anyOf("lr-options-unused", "train.decoupled_min_lr",
			setOpt(setting{"train.decoupled_lr", t.LR}).note("lr, or the rate the input and output layers should train at"),
			setOpt(setting{"train.decoupled_min_lr", nil})),
			"decoupled_min_lr=%g has no effect without decoupled_lr", *t.DecoupledMinLR)
	}
	if len(t.RampupBatchSize) > 0 {
		c.report("rampup-batch-size-ignored", "train.rampup_batch_size", c.anyOf("rampup-batch-size-ignored", "train.rampup_batch_size",
			setOpt(setting{"train.rampup_batch_size", nil}).note("Megatron's --step-batch-size-schedule replaces it")),
			"Megatron parses --rampup-batch-size but no longer ramps the batch (deprecated, ignored at this Megatron version): training runs at global_batch=%d from the start", t.GlobalBatch)
	}
	style := t.WeightDecayIncrStyle
	if style == "" || style == "constant" {
		var set []string
		var unset []setting
		if t.StartWeightDecay != nil {
			set = append(set, "train.start_weight_decay")
			unset = append(unset, setting{"train.start_weight_decay", nil})
		}
		if t.EndWeightDecay != nil {
			set = append(set, "train.end_weight_decay")
			unset = append(unset, setting{"train.end_weight_decay", nil})
		}
		if len(set) > 0 {
			c.report("weight-decay-schedule", set[0], c.anyOf("weight-decay-schedule", set[0],
				setOpt(setting{"train.weight_decay_incr_style", "linear"}), setOpt(setting{"train.weight_decay_incr_style", "cosine"}), setOpt(unset...)),
				"%s need a weight-decay schedule, but weight_decay_incr_style is constant (Megatron asserts they are unset)", strings.Join(set, ", "))
		}
	} else {
		var missing []string
		var give []setting
		if t.StartWeightDecay == nil {
			missing = append(missing, "train.start_weight_decay")
			give = append(give, setting{"train.start_weight_decay", t.WeightDecay})
		}
		if t.EndWeightDecay == nil {
			missing = append(missing, "train.end_weight_decay")
			give = append(give, setting{"train.end_weight_decay", t.WeightDecay})
		}
		if len(missing) > 0 {
			c.report("weight-decay-schedule", "train.weight_decay_incr_style", c.anyOf("weight-decay-schedule", "train.weight_decay_incr_style",
				setOpt(give...).note("weight_decay, or the schedule's ends"), setOpt(setting{"train.weight_decay_incr_style", "constant"})),
				"weight_decay_incr_style %q needs %s", style, strings.Join(missing, ", "))
		}
	}
	if t.OverlapParamGatherWithOptimizerStep {
		const path = "train.overlap_param_gather_with_optimizer_step"
		var missing []string
		var need []setting
		if !t.DistributedOptimizer && c.s.FSDP() != "megatron-fsdp" {
			missing = append(missing, "train.distributed_optimizer")
			need = append(need, setting{"train.distributed_optimizer", true})
		}
		if !t.OverlapParamGather {
			missing = append(missing, "train.overlap_param_gather")
			need = append(need, setting{"train.overlap_param_gather", true})
			if !t.OverlapGradReduce { // overlap_param_gather's own need
				need = append(need, setting{"train.overlap_grad_reduce", true})
			}
		}
		if format := c.ckptFormat(); format != "torch" {
			missing = append(missing, fmt.Sprintf("checkpoint.format \"torch\" (not %q: distributed checkpointing is not supported)", format))
			need = append(need, setting{"checkpoint.format", "torch"})
		}
		var on []option
		if c.s.Parallel.VPP < 2 {
			missing = append(missing, "virtual pipeline stages (parallel.vpp > 1)")
			on = c.valueOptions("overlap-param-gather", path, "parallel.vpp", valuesIn(2, max(c.s.Model.Layers, 2), func(int) bool { return true }), 1, need...)
		} else if len(need) > 0 {
			on = []option{setOpt(need...)}
		}
		if len(missing) > 0 {
			c.report("overlap-param-gather", path, c.anyOf("overlap-param-gather", path, append(on, setOpt(setting{path, false}))...),
				"overlap_param_gather_with_optimizer_step needs %s", strings.Join(missing, ", "))
		}
	}
}

// ckptFormat is the --ckpt-format Megatron sees: the checkpoint block's,
// fsdp_dtensor when the Megatron target adds it for Megatron-FSDP, else
// Megatron's default torch_dist.
func (c *checker) ckptFormat() string {
	switch {
	case c.s.Checkpoint != nil:
		return c.s.Checkpoint.Format
	case c.s.Train.FSDP:
		return "fsdp_dtensor"
	}
	return "torch_dist"
}

// kernels checks fused kernels and CUDA graphs (validate_args,
// MLATransformerConfig.__post_init__).
func (c *checker) kernels() {
	s, k := c.s, c.s.Kernels
	if k.CrossEntropyLossFusion && k.CrossEntropyFusionImpl == "te" && !c.o.MeasuredRun {
		c.report("kernel-options", "kernels.cross_entropy_fusion_impl", c.options("kernel-options", "kernels.cross_entropy_fusion_impl", `use cross_entropy_fusion_impl "native", or cross_entropy_loss_fusion: false`,
			opt(`use kernels.cross_entropy_fusion_impl "native"`, setting{"kernels.cross_entropy_fusion_impl", "native"}),
			opt("set kernels.cross_entropy_loss_fusion: false", setting{"kernels.cross_entropy_loss_fusion", false})),
			"Megatron-LM's arguments reject Transformer Engine's cross-entropy fusion (stability issues; Megatron-Core alone, as Megatron-Bridge's recipes run it, only warns): cross_entropy_loss_fusion with impl \"te\" is rejected")
	}
	if k.DisableParameterTransposeCache && !c.o.MeasuredRun {
		// arguments.py at d98e8a64 lists disable_parameter_transpose_cache
		// among the TransformerConfig fields that have no command-line flag.
		c.report("kernel-options", "kernels.disable_parameter_transpose_cache", c.options("kernel-options", "kernels.disable_parameter_transpose_cache", "set kernels.disable_parameter_transpose_cache: false",
			opt("set kernels.disable_parameter_transpose_cache: false", setting{"kernels.disable_parameter_transpose_cache", false})),
			"Megatron-LM has no flag for disable_parameter_transpose_cache (a TransformerConfig field its arguments leave unset), so the generated run would keep Transformer Engine's fp8 weight cache")
	}
	if s.Model.MLA != nil && k.ApplyRopeFusion && s.Model.RopeType != nil && *s.Model.RopeType == "rope" {
		c.report("kernel-options", "kernels.apply_rope_fusion", c.options("kernel-options", "kernels.apply_rope_fusion", `set kernels.apply_rope_fusion: false, or model.rope_type "yarn"`,
			opt("set kernels.apply_rope_fusion: false", setting{"kernels.apply_rope_fusion", false}), opt(`set model.rope_type "yarn"`, setting{"model.rope_type", "yarn"})),
			"RoPE fusion with multi-latent attention only works with YaRN RoPE, but model.rope_type is \"rope\"")
	}
	fusion, _ := c.biasActivationFusion()
	if s.Model.Activation == "squared_relu" && fusion {
		// Rule S16: argument_utils.py core_transformer_config_from_args at
		// d98e8a64 passes bias_gelu_fusion as bias_activation_fusion for every
		// activation but swiglu (validate_args turns it off only without
		// biases), and TransformerConfig.__post_init__ raises "When
		// bias_activation_fusion is True, activation function should be
		// either gelu, swiglu, or quick_geglu".
		c.report("kernel-options", "kernels.bias_gelu_fusion", c.anyOf("kernel-options", "kernels.bias_gelu_fusion",
			setOpt(setting{"kernels.bias_gelu_fusion", false}), setOpt(setting{"model.bias", false})),
			"the squared_relu activation with linear biases cannot use the fused bias-activation kernel (kernels.bias_gelu_fusion, on by default): Megatron fuses only gelu, swiglu and quick_geglu")
	}
	// Left out, the fusion is off where Megatron cannot run it
	// (spec.DefaultBiasGeluFusion): only a spec that turns it on gets here.
	switch where := spec.UnfusableBiasActivation(&s.Model); {
	case where == "" || !fusion:
	case s.Model.Activation == "quick_geglu":
		// MLP.forward (megatron/core/transformer/mlp.py at d98e8a64) fuses
		// quick_geglu with its bias only where the routed experts pass their
		// routing weights (per_token_scale); a dense layer's MLP raises
		// "Only support fusion of gelu and swiglu" on the first forward
		// (bias_activation_fusion is bias_gelu_fusion without --swiglu, kept
		// with linear biases).
		c.report("bias-activation-fusion", "kernels.bias_gelu_fusion", c.anyOf("bias-activation-fusion", "kernels.bias_gelu_fusion",
			setOpt(setting{"kernels.bias_gelu_fusion", false}), setOpt(setting{"model.bias", false})),
			"the quick_geglu activation's %s cannot use the fused bias-activation kernel with linear biases, and kernels.bias_gelu_fusion is true: Megatron's MLP fuses only gelu and swiglu there and stops at the first forward", where)
	default:
		// The routed experts fuse the bias and activation only for swiglu
		// and quick_geglu: TEGroupedMLP's bias_act_func raises "Only support
		// fusion of swiglu and quick_gelu in TEGroupedMLP", and
		// SequentialMLP's experts, which pass their routing weights to
		// MLP.forward, "Only support fusion of swiglu and quick_gelu with
		// per_token_scale in MLP" (moe/experts.py, mlp.py at d98e8a64), on
		// the first forward. Every MoE configuration of Megatron-LM's
		// examples and functional tests disables the linear biases.
		c.report("bias-activation-fusion", "kernels.bias_gelu_fusion", c.anyOf("bias-activation-fusion", "kernels.bias_gelu_fusion",
			setOpt(setting{"kernels.bias_gelu_fusion", false}), setOpt(setting{"model.bias", false}), setOpt(setting{"model.activation", "swiglu"})),
			"the routed experts cannot use the fused bias-activation kernel with linear biases and the gelu activation, and kernels.bias_gelu_fusion is true: Megatron's experts fuse only swiglu and quick_geglu and stop at the first forward")
	}
	if len(k.CUDAGraphScope) > 0 && len(k.CUDAGraphModules) > 0 {
		c.report("kernel-options", "kernels.cuda_graph_scope", "give the modules once, in kernels.cuda_graph_modules: "+
			c.anyOf("kernel-options", "kernels.cuda_graph_scope", setOpt(setting{"kernels.cuda_graph_scope", nil})),
			"cuda_graph_scope (--cuda-graph-scope, deprecated) and cuda_graph_modules cannot be used together")
	}
	impl := c.cudaGraphImpl()
	if impl == "full_iteration" && s.Train.CheckForNaNInLossAndGrad {
		c.report("kernel-options", "train.check_for_nan_in_loss_and_grad", c.options("kernel-options", "train.check_for_nan_in_loss_and_grad", "set train.check_for_nan_in_loss_and_grad: false",
			opt("set train.check_for_nan_in_loss_and_grad: false", setting{"train.check_for_nan_in_loss_and_grad", false})),
			"full-iteration CUDA graphs (cuda_graph_impl \"full_iteration\") need check_for_nan_in_loss_and_grad off")
	}
	if (impl == "local" || impl == "transformer_engine") && s.Train.Recompute == "full" {
		// TransformerConfig.__post_init__ at d98e8a64: "full recompute is
		// only supported with full iteration CUDA graph."
		c.report("kernel-options", "train.recompute", c.anyOf("kernel-options", "train.recompute",
			setOpt(setting{"train.recompute", "selective"}, setting{"train.recompute_method", nil}, setting{"train.recompute_layers", nil}),
			setOpt(setting{"kernels.cuda_graph_impl", "full_iteration"}, setting{"kernels.cuda_graph_modules", nil}, setting{"kernels.cuda_graph_scope", nil},
				setting{"train.check_for_nan_in_loss_and_grad", false})),
			"full recomputation with per-layer CUDA graphs (cuda_graph_impl %q) is rejected: Megatron supports full recomputation only with full-iteration CUDA graphs", k.CUDAGraphImpl)
	}
	if k.AttentionBackend == "local" {
		c.report("kernel-options", "kernels.attention_backend", c.anyOf("kernel-options", "kernels.attention_backend",
			setOpt(setting{"kernels.attention_backend", "auto"})),
			"attention_backend \"local\" needs Megatron's local layer spec (--spec local), which parc's transformer_engine plans do not use")
	}
	c.attentionBackend()
	c.transformerImpl()
	c.determinism()
	m := s.Model
	if m.RopeScalingFactor != nil && m.RotaryScalingFactor != nil && (m.MLA != nil || m.PositionEmbedding == "yarn") {
		c.report("kernel-options", "model.rope_scaling_factor", c.anyOf("kernel-options", "model.rope_scaling_factor",
			setOpt(setting{"model.rope_scaling_factor", nil}).note("rotary_scaling_factor is YaRN's factor")),
			"with YaRN RoPE both rope_scaling_factor=%g and rotary_scaling_factor=%g give --rotary-scaling-factor", *m.RopeScalingFactor, *m.RotaryScalingFactor)
	}
}

// moeRouter checks group-limited routing and the dispatcher options
// (TransformerConfig.__post_init__).
func (c *checker) moeRouter() {
	e := c.s.Model.MoE
	if e == nil {
		return
	}
	if g := e.RouterGroupTopK; g != nil {
		switch n := e.RouterNumGroups; {
		case n == nil:
			okN := c.near("moe-router-groups", "model.moe.router_num_groups", *g, valuesIn(1, e.Experts, func(v int) bool { return e.Experts%v == 0 && v >= *g }))
			c.report("moe-router-groups", "model.moe.router_group_topk",
				"set model.moe.router_num_groups: "+listHint(fmt.Sprintf("use a divisor of experts=%d (at least router_group_topk=%d)", e.Experts, *g), okN, noValue("model.moe.router_num_groups")),
				"group-limited routing (router_group_topk=%d) needs router_num_groups", *g)
		case e.Experts%*n != 0:
			okN := c.near("moe-router-groups", "model.moe.router_num_groups", *n, valuesIn(1, e.Experts, func(v int) bool { return e.Experts%v == 0 && v >= *g }))
			c.report("moe-router-groups", "model.moe.router_num_groups",
				listHint(fmt.Sprintf("use a divisor of experts=%d (at least router_group_topk=%d)", e.Experts, *g), okN, noValue("model.moe.router_num_groups")),
				"experts=%d is not divisible by router_num_groups=%d", e.Experts, *n)
		case *g > *n:
			okG := c.near("moe-router-groups", "model.moe.router_group_topk", *g, valuesIn(1, *n, func(int) bool { return true }))
			c.report("moe-router-groups", "model.moe.router_group_topk",
				listHint(fmt.Sprintf("router_group_topk must be at most router_num_groups=%d: valid values", *n), okG, noValue("model.moe.router_group_topk")),
				"router_group_topk=%d exceeds router_num_groups=%d", *g, *n)
		}
	}
	if e.FlexDispatcherBackend == "ncclep" && e.Dispatcher != "flex" {
		c.report("moe-flex-backend", "model.moe.flex_dispatcher_backend", c.anyOf("moe-flex-backend", "model.moe.flex_dispatcher_backend",
			setOpt(setting{"model.moe.dispatcher", "flex"}), setOpt(setting{"model.moe.flex_dispatcher_backend", "deepep"})),
			"flex_dispatcher_backend \"ncclep\" needs the flex dispatcher, but dispatcher is %q", e.Dispatcher)
	}
	// MoEFlexTokenDispatcher.__init__ (token_dispatcher.py at d98e8a64)
	// asserts "DeepEP dispatcher requires TPxEP > 1" and "NCCL EP
	// dispatcher requires TPxEP > 1"; HybridEP has no such assertion.
	if p := c.s.Parallel; (e.FlexWith("deepep") || e.FlexWith("ncclep")) && p.TP*p.EP < 2 {
		opts := []option{setOpt(setting{"model.moe.flex_dispatcher_backend", "hybridep"}), setOpt(setting{"model.moe.dispatcher", "alltoall"})}
		for v := 2; v <= e.Experts; v++ {
			if e.Experts%v == 0 {
				opts = append(opts, setOpt(setting{"parallel.ep", v}))
				break
			}
		}
		c.report("moe-flex-backend", "model.moe.flex_dispatcher_backend", c.anyOf("moe-flex-backend", "model.moe.flex_dispatcher_backend", opts...),
			"the flex dispatcher's %q backend needs tp·ep > 1 (it dispatches over the tensor×expert-parallel group), but tp=%d and ep=%d",
			e.FlexDispatcherBackend, p.TP, p.EP)
	}
	// HybridEP splits the expert-parallel group into NVLink domains of
	// equal size: DeepEP's hybrid-ep branch, deep_ep/hybrid_ep_buffer.py
	// (HybridEPBuffer.__init__) asserts "The number of ranks ... should be
	// divisible by the number of ranks per node", the ranks per node being
	// the group's ranks it detects on its own NVLink domain, and numbers
	// the domains rank // ranks_per_domain. An expert-parallel group larger
	// than its share of a domain (spec.ExpertRanksPerNVLinkDomain) must
	// hold a whole number of such shares.
	if p := c.s.Parallel; e.FlexWith("hybridep") && c.s.Cluster.NVLinkDomain > 0 {
		etp := c.etp()
		k := spec.ExpertRanksPerNVLinkDomain(c.s.Cluster.NVLinkDomain, etp)
		if p.EP > k && p.EP%k != 0 {
			okEP := c.near("moe-flex-backend", "parallel.ep", p.EP, valuesIn(1, e.Experts, func(v int) bool { return e.Experts%v == 0 && (v <= k || v%k == 0) }))
			opts := []option{setOpt(setting{"model.moe.dispatcher", "alltoall"})}
			for _, v := range okEP {
				opts = append(opts, setOpt(setting{"parallel.ep", v}))
			}
			c.report("moe-flex-backend", "parallel.ep", c.anyOf("moe-flex-backend", "parallel.ep", opts...),
				"the hybridep backend splits the expert-parallel group into NVLink domains of equal size, but ep=%d spans domains of %d of its ranks (cluster.nvlink_domain=%d / etp=%d) unevenly",
				p.EP, k, c.s.Cluster.NVLinkDomain, max(etp, 1))
		}
	}
	if e.SharedExpertOverlap && e.SharedFFNHidden > 0 && !slices.Contains([]string{"alltoall", "flex"}, e.Dispatcher) {
		c.report("moe-flex-backend", "model.moe.shared_expert_overlap", c.anyOf("moe-flex-backend", "model.moe.shared_expert_overlap",
			setOpt(setting{"model.moe.dispatcher", "alltoall"}), setOpt(setting{"model.moe.dispatcher", "flex"}),
			setOpt(setting{"model.moe.shared_expert_overlap", false})),
			"shared_expert_overlap only works with the alltoall or flex dispatcher, not %q", e.Dispatcher)
	}
}

// transformerImpl checks kernels.transformer_impl as Megatron d98e8a64 does:
// validate_args (delayed weight-gradient computation needs Transformer
// Engine), TransformerConfig.__post_init__ (the inference-optimized layers
// take RMSNorm without biases, and MoE without expert tensor parallelism or
// a capacity factor) and gpt_builders.py (no MTP with them).
func (c *checker) transformerImpl() {
	s, impl := c.s, c.s.Kernels.TransformerImpl
	if impl != "transformer_engine" && impl != "" && s.Parallel.DelayWgradCompute {
		c.report("kernel-options", "kernels.transformer_impl", c.anyOf("kernel-options", "kernels.transformer_impl",
			setOpt(setting{"kernels.transformer_impl", "transformer_engine"}), setOpt(setting{"parallel.delay_wgrad_compute", false})),
			"delay_wgrad_compute is only supported with the transformer_engine implementation, but transformer_impl is %q", impl)
	}
	if impl != "inference_optimized" {
		return
	}
	var bad []string
	var fix []setting
	m := s.Model
	if m.Normalization != "rmsnorm" {
		bad = append(bad, fmt.Sprintf("RMSNorm (model.normalization is %q)", m.Normalization))
		fix = append(fix, setting{"model.normalization", "rmsnorm"})
	}
	if m.Bias {
		bad = append(bad, "no linear biases (model.bias)")
		fix = append(fix, setting{"model.bias", false})
	}
	if m.QKVBias {
		bad = append(bad, "no QKV bias (model.qkv_bias)")
		fix = append(fix, setting{"model.qkv_bias", false})
	}
	if m.MoE != nil && c.etp() > 1 {
		bad = append(bad, fmt.Sprintf("no expert tensor parallelism (etp=%d)", c.etp()))
		fix = append(fix, setting{"parallel.etp", 1})
	}
	if m.MoE != nil && m.MoE.CapacityFactor != nil {
		bad = append(bad, "dropless MoE (model.moe.capacity_factor is set)")
		fix = append(fix, setting{"model.moe.capacity_factor", nil})
	}
	if m.MTPLayers > 0 {
		bad = append(bad, fmt.Sprintf("no MTP layers (mtp_layers=%d)", m.MTPLayers))
		fix = append(fix, setting{"model.mtp_layers", 0})
	}
	if len(bad) > 0 {
		c.report("kernel-options", "kernels.transformer_impl", c.anyOf("kernel-options", "kernels.transformer_impl",
			setOpt(setting{"kernels.transformer_impl", "transformer_engine"}), setOpt(fix...)),
			"transformer_impl \"inference_optimized\" needs %s", strings.Join(bad, ", "))
	}
}

// determinism checks --deterministic-mode as Megatron d98e8a64 does
// (megatron/training/determinism.py, ARG_VALUES_REQUIRED_FOR_DETERMINISM,
// asserted from validate_args).
func (c *checker) determinism() {
	s := c.s
	if !s.Train.DeterministicMode {
		return
	}
	var bad []string
	var off []setting
	if s.Kernels.CrossEntropyLossFusion {
		bad = append(bad, "kernels.cross_entropy_loss_fusion off")
		off = append(off, setting{"kernels.cross_entropy_loss_fusion", false})
	}
	if spec.TPCommOverlapOn(s) {
		bad = append(bad, "parallel.tp_comm_overlap off")
		off = append(off, setting{"parallel.tp_comm_overlap", false})
	}
	if len(bad) > 0 {
		c.report("deterministic-mode", "train.deterministic_mode", c.anyOf("deterministic-mode", "train.deterministic_mode",
			setOpt(off...), setOpt(setting{"train.deterministic_mode", false})),
			"deterministic_mode needs %s (Megatron asserts it: \"--deterministic-mode requires: ...\")", strings.Join(bad, ", "))
	}
}

// biasActivationFusion is Megatron's bias_activation_fusion and the kernels
// field that gives it: core_transformer_config_from_args (argument_utils.py
// at d98e8a64) passes bias_swiglu_fusion with --swiglu and bias_gelu_fusion
// otherwise, which validate_args turns off without linear biases.
func (c *checker) biasActivationFusion() (on bool, field string) {
	m, k := c.s.Model, c.s.Kernels
	if m.Activation == "swiglu" {
		return k.BiasSwigluFusion, "kernels.bias_swiglu_fusion"
	}
	return spec.BiasGeluFusionOn(c.s) && m.Bias, "kernels.bias_gelu_fusion"
}

// attentionBackend reports the plans for which Transformer Engine's
// DotProductAttention has no backend left and raises "No dot product
// attention backend is available for the provided inputs" in the first
// step. Its get_attention_backend (pytorch/attention/dot_product_attention/
// utils.py, v2.x to d0067d0d) disables flash and fused attention for QKV
// other than bf16 or fp16 (spec.Train.FusedAttentionDtype) and
// UnfusedDotProductAttention with context parallelism, and
// Megatron's --attention-backend turns the backends it does not name off
// (LanguageModule._set_attention_backend at d98e8a64: flash or fused sets
// NVTE_UNFUSED_ATTN=0, unfused sets NVTE_FLASH_ATTN=0 and NVTE_FUSED_ATTN=0).
// So fp32 has only the unfused backend, which context parallelism and a
// flash or fused backend rule out, and the unfused backend alone cannot run
// context parallelism.
func (c *checker) attentionBackend() {
	s := c.s
	fp32, cp, backend := !s.Train.FusedAttentionDtype(), s.Parallel.CP, s.Kernels.AttentionBackend
	if s.Kernels.TransformerImpl == "local" {
		return // Megatron's own DotProductAttention, which asserts cp = 1 itself
	}
	const code = "attention-no-backend"
	half := []option{setOpt(setting{"train.precision", "bf16"}), setOpt(setting{"train.precision", "fp16"})}
	switch {
	case fp32 && (backend == "flash" || backend == "fused"):
		c.report(code, "kernels.attention_backend", c.anyOf(code, "kernels.attention_backend",
			append([]option{setOpt(setting{"kernels.attention_backend", "auto"})}, half...)...),
			"attention_backend %q takes bf16 or fp16 only and turns Transformer Engine's unfused attention off: in fp32 no attention backend is left and the first step fails", backend)
	case fp32 && cp > 1:
		c.report(code, "parallel.cp", c.anyOf(code, "parallel.cp", append([]option{setOpt(setting{"parallel.cp", 1})}, half...)...),
			"context parallelism (cp=%d) runs core attention in Transformer Engine's flash or fused kernels, which take bf16 or fp16 only; in fp32 no attention backend is left (the unfused one does not support context parallelism) and the first step fails", cp)
	case backend == "unfused" && cp > 1:
		c.report(code, "kernels.attention_backend", c.anyOf(code, "kernels.attention_backend",
			setOpt(setting{"kernels.attention_backend", "auto"}),
			setOpt(setting{"parallel.cp", 1})),
			"attention_backend \"unfused\" turns Transformer Engine's flash and fused attention off, and its unfused attention does not support context parallelism (cp=%d): no attention backend is left and the first step fails", cp)
	}
}
