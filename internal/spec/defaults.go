package spec

// DefaultTPCommOverlap is parallel.tp_comm_overlap when the spec leaves it
// out: Transformer Engine's userbuffer overlap of tensor-parallel
// communication with the GEMMs, on where NVIDIA's performance recipes turn it
// on (Megatron-Bridge and NeMo: tp > 1 with sequence parallelism, Hopper and
// later) and where Megatron allows it (validate_args: sequence parallelism;
// --deterministic-mode forbids it). Megatron's own default is off.
func DefaultTPCommOverlap(s *Spec) bool {
	p := s.Parallel
	return p.TP > 1 && (p.SP == nil || *p.SP) && s.Cluster.GPU.ComputeCapability >= 9 && !s.Train.DeterministicMode
}

// TPCommOverlapOn reports whether the plan overlaps tensor-parallel
// communication: parallel.tp_comm_overlap as written, else
// DefaultTPCommOverlap for the plan's own degrees (so a plan whose tp a
// hint, a remedy or the solver changes takes the default of its new tp).
func TPCommOverlapOn(s *Spec) bool {
	return asWritten(s.Parallel.TPCommOverlap, s, DefaultTPCommOverlap)
}

// asWritten is an optional switch of the spec as written, else its default
// for the plan.
func asWritten(v *bool, s *Spec, def func(*Spec) bool) bool {
	if v != nil {
		return *v
	}
	return def(s)
}

// TEGroupedBiasedExperts reports whether the routed experts run as Transformer
// Engine's grouped MLP (TEGroupedMLP: grouped GEMM with Transformer Engine
// layers) with the model's linear biases.
func TEGroupedBiasedExperts(s *Spec) bool {
	m := &s.Model
	return m.MoE != nil && m.Bias && m.MoE.GroupedGEMM && s.Kernels.TransformerImpl != "local"
}

// DefaultBiasDropoutFusion is kernels.bias_dropout_fusion when the spec leaves
// it out: Megatron's default (on), but off where the routed experts are
// Transformer Engine's grouped MLP with linear biases, which refuses the fused
// bias-dropout-add when Megatron builds the model (TEGroupedMLP.__init__,
// moe/experts.py at d98e8a64: "bias_dropout_fusion is not supported in
// TEGroupedMLP when add_bias_linear=True"), as Megatron-Bridge's GPT-OSS
// provider sets it (gpt_oss_bridge.py: bias_dropout_fusion False). The target
// then writes --no-bias-dropout-fusion; written true, the plan is rejected
// (moe-bias-dropout-fusion).
func DefaultBiasDropoutFusion(s *Spec) bool { return !TEGroupedBiasedExperts(s) }

// BiasDropoutFusionOn is kernels.bias_dropout_fusion as written, else
// DefaultBiasDropoutFusion.
func BiasDropoutFusionOn(s *Spec) bool {
	return asWritten(s.Kernels.BiasDropoutFusion, s, DefaultBiasDropoutFusion)
}

// UnfusableBiasActivation names the MLP whose activation Megatron's fused
// bias-activation kernel cannot run with the model's linear biases, which
// Megatron finds out only at the first forward (moe/experts.py, mlp.py at
// d98e8a64), and "" where it can: gelu in the routed experts ("routed
// experts": TEGroupedMLP's and SequentialMLP's experts fuse only swiglu and
// quick_geglu) and quick_geglu in a plain MLP ("MLP" of a dense model, "dense
// layers" of an MoE: mlp.py fuses only gelu and swiglu there).
func UnfusableBiasActivation(m *Model) string {
	switch {
	case !m.Bias:
	case m.Activation == "gelu" && m.MoE != nil:
		return "routed experts"
	case m.Activation == "quick_geglu" && m.MoE == nil:
		return "MLP"
	case m.Activation == "quick_geglu" && m.HasDenseMLP():
		return "dense layers"
	}
	return ""
}

// DefaultBiasGeluFusion is kernels.bias_gelu_fusion when the spec leaves it
// out: Megatron's default (on), but off where UnfusableBiasActivation names an
// MLP. The target then writes --no-bias-gelu-fusion; written true, the plan is
// rejected (bias-activation-fusion). squared_relu with biases keeps Megatron's
// default: its validation rejects that pair when it builds the
// TransformerConfig, and so does parc (kernel-options).
func DefaultBiasGeluFusion(s *Spec) bool { return UnfusableBiasActivation(&s.Model) == "" }

// BiasGeluFusionOn is kernels.bias_gelu_fusion as written, else
// DefaultBiasGeluFusion.
func BiasGeluFusionOn(s *Spec) bool {
	return asWritten(s.Kernels.BiasGeluFusion, s, DefaultBiasGeluFusion)
}
