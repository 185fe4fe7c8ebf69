package estimate

import (
	"strconv"

	"parc.dev/parc/internal/spec"
)

// settings are the Megatron options beyond the parallel degrees that change
// time or memory, read once from the spec.
type settings struct {
	gradReduceBF16 bool // train.grad_reduce_in_bf16
	// paramWidth is the bytes per linear weight kept and gathered quantized
	// (fp8_param_gather with fp8, fp4_param_gather with fp4), 0 when the
	// weights stay 16-bit.
	paramWidth       float64
	tpCommOverlap    bool            // parallel.tp_comm_overlap
	epOverlap        bool            // parallel.overlap_moe_expert_parallel_comm
	recomputeModules map[string]bool // train.recompute_modules (selective only)
	// Optimizer state widths in bytes (precision-aware optimizer).
	mainGrads, mainParams, expAvg, expAvgSq float64
	// optOffload is the fraction of each rank's optimizer shard whose Adam
	// runs on the host (train.optimizer_cpu_offload, 0 without it; with
	// Megatron-FSDP, whose optimizer parc has not read with the offload,
	// the state is kept on the GPU); optOffloadOverlap:
	// train.overlap_cpu_optimizer_d2h_h2d.
	optOffload        float64
	optOffloadOverlap bool
	// precisionAware: train.precision_aware_optimizer.
	precisionAware bool
	// muon: Muon's Newton-Schulz step (train.optimizer "muon" or
	// "adaptive_muon").
	muon bool
	// adamEmbedding: an emerging optimizer with fewer moments than Adam
	// (muon, lion), which hands the embedding and output layer to Adam:
	// they keep a second moment the others do not.
	adamEmbedding bool
	// soap: train.optimizer "soap", whose Kronecker factors and eigenbases
	// add memory and work per 2-D weight (soap.go).
	soap   bool
	graphs cudaGraphs
}

// cudaGraphs is what CUDA graphs capture (kernels.cuda_graph_impl and
// cuda_graph_modules / cuda_graph_scope): the whole forward-backward
// iteration, or modules of every layer. Megatron-Core's CUDA graph guide:
// graphs replay recorded kernels without the host's per-kernel launch work.
type cudaGraphs struct {
	full                               bool // full_iteration
	attn, mlp, moe, router, preprocess bool // per-layer modules
}

// readCUDAGraphs reads the kernels block. local and transformer_engine with
// no modules capture the whole layer (Megatron's default scope).
func readCUDAGraphs(k spec.Kernels) cudaGraphs {
	var g cudaGraphs
	switch k.CUDAGraphImpl {
	case "", "none":
		return g
	case "full_iteration":
		g.full = true
	}
	n := 0
	for _, list := range [][]string{k.CUDAGraphModules, k.CUDAGraphScope} {
		for _, m := range list {
			n++
			switch m {
			case "full_iteration":
				g.full = true
			case "full":
				g.attn, g.mlp, g.moe = true, true, true
			case "attn":
				g.attn = true
			case "mlp":
				g.mlp = true
			case "moe":
				g.moe = true
			case "moe_router":
				g.router = true
			case "moe_preprocess":
				g.preprocess = true
			}
		}
	}
	if n == 0 {
		g.attn, g.mlp, g.moe = true, true, true
	}
	if g.full {
		g = cudaGraphs{full: true, attn: true, mlp: true, moe: true, router: true, preprocess: true}
	}
	return g
}

// quantizedParamWidth is settings.paramWidth.
func quantizedParamWidth(t *spec.Train) float64 {
	if t.FP8ParamGather && t.Precision == "fp8" || t.FP4ParamGather && t.Precision == "fp4" {
		return quantizedWidth(t.Precision)
	}
	return 0
}

// readSettings reads the settings; Megatron's defaults where the spec is silent.
func readSettings(s *spec.Spec) settings {
	t, p := &s.Train, &s.Parallel
	st := settings{
		gradReduceBF16:   t.GradReduceInBF16,
		paramWidth:       quantizedParamWidth(t),
		tpCommOverlap:    spec.TPCommOverlapOn(s),
		epOverlap:        p.OverlapMoEExpertParallelComm,
		recomputeModules: map[string]bool{},
		mainGrads:        4, mainParams: 4, expAvg: 4, expAvgSq: 4,
		graphs: readCUDAGraphs(s.Kernels),
	}
	for _, m := range t.RecomputeModuleList() {
		st.recomputeModules[m] = true
	}
	st.precisionAware = t.PrecisionAwareOptim
	if t.OptimizerCPUOffload && !t.FSDP {
		st.optOffload = min(max(t.OptimizerOffloadFraction, 0), 1)
		st.optOffloadOverlap = t.OverlapCPUOptimizerD2HH2D
	}
	if t.PrecisionAwareOptim {
		st.mainGrads = dtypeBytes(t.MainGradsDtype)
		st.mainParams = dtypeBytes(t.MainParamsDtype)
		st.expAvg = dtypeBytes(t.ExpAvgDtype)
		st.expAvgSq = dtypeBytes(t.ExpAvgSqDtype)
		if paramRemainders(t) {
			st.mainParams = 2
		}
	}
	// SGD with momentum, Muon and Lion keep one fp32 buffer per parameter
	// where Adam keeps two moments: torch.optim.SGD's momentum buffer
	// (Megatron's --sgd-momentum, 0.9 by default), Muon's momentum, which it
	// orthogonalises (megatron/core/optimizer/emerging_optimizers.py at
	// d98e8a64), and Lion's exp_avg (megatron/core/optimizer/__init__.py's
	// init_state_fn; distrib_optimizer.py's state keys ("exp_avg",) for
	// Lion). The emerging optimizers hand the embedding, the output layer,
	// norms and biases to Adam (Megatron's _is_nonlinear_or_embedding and
	// the default parameter overrides of every EmergingOptimizerEntry,
	// emerging_optimizers.py at d98e8a64): memory adds the embedding's
	// second moment. adaptive_muon keeps Muon's momentum and a second
	// moment of the same shape (emerging_optimizers v0.3.0 AdaptiveMuon,
	// moment2_method "adamuon", Megatron's default); SOAP keeps Adam's two
	// moments (soap.py: exp_avg, exp_avg_sq).
	o := t.OptimizerName()
	if o == "sgd" || o == "muon" || o == "lion" {
		st.expAvgSq = 0
		st.adamEmbedding = o != "sgd"
	}
	st.muon = o == "muon" || o == "adaptive_muon"
	st.soap = o == "soap"
	if t.FSDP {
		// Megatron-FSDP keeps its own main weights and gradient buffer
		// (--megatron-fsdp-main-params-dtype / -main-grads-dtype; "auto"
		// follows the gradient communication dtype, fp32 by default).
		if b := dtypeBytes(t.MegatronFSDPMainParamsDtype); b > 0 {
			st.mainParams = b
		}
		if b := dtypeBytes(t.MegatronFSDPMainGradsDtype); b > 0 {
			st.mainGrads = b
		} else if b := dtypeBytes(t.MegatronFSDPGradCommDtype); b > 0 {
			st.mainGrads = b
		}
	}
	return st
}

// paramRemainders reports that the precision-aware optimizer keeps its fp32
// master weights as the 16 bits the bf16 weights do not hold (Transformer
// Engine's FusedAdam with store_param_remainders, Megatron's default since
// TE 2.1: optimizer_config.py store_param_remainders at d98e8a64). Megatron
// hands the master weights to FusedAdam (master_weights, master_weight_dtype)
// only when use_precision_aware_optimizer_no_fp8_or_ds_fp8 holds: without
// fp8 or with delayed scaling (a main_params_dtype other than fp32 is not
// remainders; with optimizer offloading, offloadedOptimizerBytes applies),
// and it stores them as int16 with bf16 weights (optimizer/__init__.py and
// distrib_optimizer.py, where the loaded state's master_param is an int16
// shard under store_param_remainders and bf16). Megatron-FSDP keeps its own
// main weights (readSettings).
func paramRemainders(t *spec.Train) bool {
	if t.FSDP || t.OptimizerCPUOffload || dtypeBytes(t.MainParamsDtype) != 4 {
		return false
	}
	switch t.Precision {
	case "bf16":
		return true
	case "fp8":
		return t.FP8Base == "bf16" && t.FP8Recipe == "delayed"
	case "fp4":
		// bf16 model weights around the NVFP4 GEMMs, unless they are
		// kept in NVFP4 (fp4_param_gather).
		return !t.FP4ParamGather
	}
	return false
}

// dtypeBytes is the width of a Megatron dtype name; 0 for "auto" or unknown.
func dtypeBytes(d string) float64 {
	switch d {
	case "fp32":
		return 4
	case "fp16", "bf16":
		return 2
	case "fp8":
		return 1
	}
	return 0
}

// stateBytes is what Megatron keeps per parameter: 16-bit weights, main
// gradients (fp32, or bf16 with grad_reduce_in_bf16 or main_grads_dtype),
// and the optimizer's fp32 master weights and two moments (or the widths of
// the precision-aware optimizer); fp32 training keeps fp32 everything.
func (st settings) stateBytes(precision string) BytesPerParam {
	b := AdamBytes(precision)
	if precision == "fp32" {
		b.Optimizer = st.expAvg + st.expAvgSq // no main copy: the moments only
		return b
	}
	b.Gradients = st.mainGrads
	if st.gradReduceBF16 {
		b.Gradients = 2
	}
	b.Optimizer = st.mainParams + st.expAvg + st.expAvgSq
	if st.optOffload > 0 {
		b.Optimizer = st.offloadedOptimizerBytes()
	}
	if st.paramWidth > 0 {
		b.Weights = st.paramWidth
	}
	return b
}

// offloadedOptimizerBytes is the optimizer state the GPU keeps per
// parameter of its shard with optimizer_cpu_offload (Megatron-Core's
// HybridDeviceOptimizer, megatron/core/optimizer/cpu_offloading/
// hybrid_optimizer.py at d98e8a64, param_update_in_fp32): the first
// optimizer_offload_fraction of the shard's elements get an fp32 copy in
// pinned host memory and Adam's moments there; the rest get an fp32 copy
// and fp32 moments on the GPU (its Adam is built without the precision-aware
// dtypes). With the precision-aware optimizer (Megatron-LM requires it) the
// distributed optimizer hands the 16-bit weights to it and keeps no fp32
// main weights of its own; without it (Megatron-Bridge does not check) the
// distributed optimizer's fp32 main weights stay on the GPU, and only the
// moments move: what Megatron-Bridge measured (TestOptimizerOffloadMeasured).
func (st settings) offloadedOptimizerBytes() float64 {
	if st.precisionAware {
		return (1 - st.optOffload) * 12
	}
	return 4 + (1-st.optOffload)*8
}

// fusedGroupedMLP reports that the routed experts run as Transformer
// Engine's fused grouped MLP: one grouped GEMM kernel over the local
// experts for FC1 with the SwiGLU, the routing probabilities and FC2's MXFP8
// quantisation in its epilogue, and one for FC2 (TE v2.14
// pytorch/ops/fused/forward_grouped_mlp.py, ForwardGroupedMLP_CuTeGEMMSwiGLU_MXFP8,
// a CuTe DSL kernel of cuDNN front-end). Megatron takes that path with
// --use-transformer-engine-op-fuser when the experts' tensor-parallel group
// is 1 and the activation is a GLU of SiLU or quick GELU (swiglu,
// quick_geglu: experts.py _is_fused_impl_supported at d98e8a64; its fused
// squared ReLU needs use_fused_weighted_squared_relu, which the spec has no
// field for), and TE's fused op only with NVTE_CUTEDSL_FUSED_GROUPED_MLP set,
// MXFP8 and compute capability 10.x (is_supported). Megatron-Bridge's
// cutedsl_fused_grouped_mlp sets both (scripts/performance/utils/overrides.py
// and perf_plugins.py at r0.5.0).
func fusedGroupedMLP(s *spec.Spec, etp int) bool {
	env := func(k string) bool {
		for _, m := range []map[string]string{s.Launch.Env, s.Cluster.Env} {
			if v, ok := m[k]; ok {
				n, err := strconv.Atoi(v)
				return err == nil && n > 0
			}
		}
		return false
	}
	cc := s.Cluster.GPU.ComputeCapability
	return s.Kernels.UseTransformerEngineOpFuser && s.Model.MoE != nil && etp <= 1 &&
		s.Model.GatedMLP() && s.Train.Precision == "fp8" && s.Train.FP8Recipe == "mxfp8" &&
		cc >= 10 && cc < 11 && env("NVTE_CUTEDSL_FUSED_GROUPED_MLP")
}

// fp8ExpertPadding reports that the routed experts pad their tokens to the
// quantized recipe's alignment themselves: Transformer Engine's fp8 and fp4
// grouped GEMMs need each expert's rows aligned (16 for per-tensor and
// blockwise scaling, 32 for MXFP8), and Megatron's TEGroupedMLP (grouped
// GEMM, plain and fused path) pads the permuted tokens with Fp8Padding and
// unpads its output with Fp8Unpadding unless the padding happened before
// (experts.py forward at d98e8a64: "FP8/FP4 require recipe-specific
// alignment ... this explicit fallback"). skip_routed_expert_padding
// (moe_utils.py) skips it where the router pads
// (model.moe.router_padding_for_quantization), where HybridEP or NCCL-EP fuse the
// padding into their dispatch, and for DeepEP only with the grouped-tensor
// backend, which parc does not model. Megatron-Bridge's DeepSeek recipes of
// 25.11-26.04 set moe_router_padding_for_fp8 False (recipes/deepseek at
// r0.3.0-r0.5.0), so their alltoall and DeepEP runs pad in the experts.
func fp8ExpertPadding(s *spec.Spec) bool {
	e := s.Model.MoE
	return s.Train.QuantizedGEMMs() && e != nil && e.GroupedGEMM && s.Kernels.TransformerImpl != "local" &&
		!e.RouterPaddingForQuantization && !e.FlexWith("hybridep") && !e.FlexWith("ncclep")
}

// ropeEmbeddings reports rotary position embeddings (rope, or YaRN's
// scaled rope) for a model.position_embedding.
func ropeEmbeddings(pe string) bool { return pe == "rope" || pe == "yarn" }
