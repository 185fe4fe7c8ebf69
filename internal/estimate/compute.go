package estimate

import (
	"math"

	"parc.dev/parc/internal/spec"
)

// This file is the compute side of the time model: every operation of a
// decoder layer timed on one GPU with its real per-GPU shape after sharding
// (tp, cp, ep, etp, micro batch). GEMMs run at a shape-dependent fraction of
// the dense peak of the precision they run in (tile and wave quantization on
// the GPU's SMs, a short reduction dimension, or too few FLOPs per byte to
// leave the memory roofline); flash attention at a fraction of the bf16 peak
// by sequence shard and heads; element-wise work (norms, activations, RoPE,
// residuals, permutation of routed tokens, fp8 casts, the optimizer step) at
// HBM bandwidth; every kernel pays a small fixed cost. FP8 speeds up only the
// GEMMs Transformer Engine runs in fp8 (the decoder's linear layers, routed and
// shared experts); core attention, the router and the output layer stay bf16.

// Calibration is the time model's free constants. Defaults are the values
// fitted on the measured corpus (testdata/measured, see TestCalibration).
type Calibration struct {
	// GEMMEff is the fraction of the dense bf16/fp16 peak a large,
	// well-shaped GEMM reaches.
	GEMMEff float64 `json:"gemm_eff"`
	// FP8GEMMEff is the fraction of the dense fp8 peak a large fp8 GEMM reaches.
	FP8GEMMEff float64 `json:"fp8_gemm_eff"`
	// FP4GEMMEff is the fraction of the dense fp4 peak a large NVFP4 GEMM
	// reaches (precision "fp4"); 0 (a calibration fitted without NVFP4
	// runs): FP8GEMMEff.
	FP4GEMMEff float64 `json:"fp4_gemm_eff,omitempty"`
	// AttnEff is the fraction of the bf16 peak flash attention reaches on
	// long sequences with 128-wide heads (backward included).
	AttnEff float64 `json:"attn_eff"`
	// KernelS is the fixed cost of one kernel, seconds (launch gaps, ramp-up
	// and tail of short kernels).
	KernelS float64 `json:"kernel_s"`
	// NVLinkEff and NetworkEff are inert: always 1 (TestCalibration does not
	// fit them and writes 1), since the links' collective rates are NCCL's
	// measured bus bandwidth (nvlinkRates by GPU generation, networkBus of
	// the NIC's line rate). They stay for compatibility: the estimate's JSON
	// (assumptions.calibration.nvlink_eff, network_eff) and the report
	// (internal/targets/report) print them.
	NVLinkEff  float64 `json:"nvlink_eff"`
	NetworkEff float64 `json:"network_eff"`
	// GroupedRel is the grouped expert GEMMs' efficiency in training steps
	// relative to a dense GEMM of the same per-expert shape (groupedGEMM).
	// It is not a kernel property: published grouped kernels run at the
	// dense rate of their per-expert shape (testdata/gemm/grouped.md,
	// TestGroupedGEMMKernels); in steps it stands for an MoE cost the
	// model does not time otherwise.
	GroupedRel float64 `json:"grouped_rel"`
	// HostOpS is the host (CPU) time to issue one kernel eagerly: Python
	// module code, the PyTorch dispatcher and the launch call. Eager
	// training is asynchronous, so it costs time only where the host
	// falls behind the GPU (small kernels) or after a host synchronisation;
	// kernels captured in a CUDA graph cost none of it.
	HostOpS float64 `json:"host_op_s"`
	// GraphKernelRel is the share of KernelS a kernel replayed from a CUDA
	// graph still costs: the graph launches its kernels back to back, so
	// the per-kernel launch gap goes and the ramp-up and tail stay
	// (Megatron-LM docs/user-guide/features/cuda_graph.md at d98e8a64:
	// "CUDA Graphs reduce kernel-launch overhead by recording GPU
	// operations once and replaying the recording").
	GraphKernelRel float64 `json:"graph_kernel_rel"`
	// HostSyncS is the GPU idle time at one host synchronisation: the
	// device-to-host copy of the routed-token counts each MoE layer's
	// forward needs (the grouped GEMM's per-expert sizes are a host list),
	// after which the host must issue the next kernels before the GPU has
	// work again.
	HostSyncS float64 `json:"host_sync_s"`
	// TensorWPerTFLOP is the board power, in watts, that one TFLOP/s of
	// dense bf16 tensor-core work draws at the clock of the datasheet peak.
	// A GPU whose power limit (gpu.tdp_watts) is below its bf16 peak times
	// this lowers its clock under dense tensor-core work and sustains only
	// that share of its peak (see tensorShare). 0: no power limit.
	TensorWPerTFLOP float64 `json:"tensor_w_per_tflop"`
	// StepJitterS is the standard deviation of one node's step time
	// around the others' (host and operating-system noise, the data
	// loader, clocks): a synchronous step ends when the slowest node's
	// does, so each step waits about StepJitterS·√(2 ln n) on n nodes past
	// a typical one (slowestNodeWaitS). Megatron-LM measures the spread for
	// its users (StragglerDetector, megatron/core/README_STRAGGLER.md at
	// d98e8a64: one job's per-rank time in the traced operations 3,453 to
	// 3,468 ms, get_batch 14 to 35 ms).
	StepJitterS float64 `json:"step_jitter_s"`
}

// DefaultCalibration is the fitted calibration.
func DefaultCalibration() Calibration { return fittedCalibration }

// FP4Eff is FP4GEMMEff, or FP8GEMMEff where the calibration has none.
func (c Calibration) FP4Eff() float64 {
	if c.FP4GEMMEff > 0 {
		return c.FP4GEMMEff
	}
	return c.FP8GEMMEff
}

// nvfp4Bytes is what an NVFP4 tensor takes per element: a 4-bit E2M1 value
// and an E4M3 scale per block of 16 (Transformer Engine's NVFP4BlockScaling;
// its per-tensor fp32 scale is left out).
const nvfp4Bytes = 0.5 + 1.0/16

// qb is the bytes per element of a quantized GEMM input: quantizedWidth
// of the precision the model's fp4 says.
func (cm *computeModel) qb() float64 {
	if cm.fp4 {
		return quantizedWidth("fp4")
	}
	return quantizedWidth("fp8")
}

// quantizedWidth is the bytes per element of the tensors Transformer Engine
// quantizes for a precision's low-precision GEMMs: NVFP4's with fp4, one
// byte with fp8 (its scales left out).
func quantizedWidth(precision string) float64 {
	if precision == "fp4" {
		return nvfp4Bytes
	}
	return 1
}

// gpuRates are the GPU's figures the model reads, datasheet defaults filled in.
type gpuRates struct {
	bf16, fp8, fp4, fp32 float64 // dense FLOP/s (fp32: TF32 tensor cores)
	// fp32Core is the FP32 rate of the CUDA cores (no tensor cores): what
	// PyTorch's own fp32 matmuls run at (see torchFP32).
	fp32Core float64
	hbm      float64 // bytes/s
	exp      float64 // SFU exponentials/s
	// tensor is the share of the tensor-core peaks sustained under the
	// power limit (see tensorShare).
	tensor float64
	sms    float64
	nvls   bool // NVLink SHARP all-reduce through NVSwitch (compute capability ≥ 9.0)
	// nvlinkBus is the share of the NVLink line rate NCCL's collectives
	// reach on large messages (bus bandwidth); nvlsAlg the share an NVLink
	// SHARP all-reduce reaches as algorithm bandwidth (bytes reduced per
	// second), by GPU generation (nvlinkRates).
	nvlinkBus, nvlsAlg float64
}

// newGPURates reads the GPU's figures; absent ones follow from the bf16 peak:
// fp8 at twice it from compute capability 8.9 on (Ada, Hopper, Blackwell
// datasheets), fp4 at twice fp8 from 10.0 on, HBM bandwidth at Hopper's
// ratio (989 TFLOP/s : 3.35 TB/s), TF32 at half the bf16 peak, 132 SMs, SFU
// exponentials at expPerBF16 of the bf16 peak.
func newGPURates(g spec.GPU) gpuRates {
	r := gpuRates{bf16: g.BF16TFLOPs * 1e12, fp8: g.FP8TFLOPs * 1e12, fp4: g.FP4TFLOPs * 1e12, hbm: g.HBMGBps * 1e9, sms: float64(g.SMCount),
		exp: g.ExpTOPS * 1e12, tensor: 1}
	if r.exp <= 0 {
		r.exp = r.bf16 * expPerBF16(g.ComputeCapability)
	}
	if r.fp8 <= 0 {
		r.fp8 = r.bf16
		if g.ComputeCapability >= 8.9 {
			r.fp8 = 2 * r.bf16
		}
	}
	if r.fp4 <= 0 {
		// Twice the fp8 peak from Blackwell on (the B200 and GB200
		// datasheets; Blackwell Ultra's is 3x), none before.
		r.fp4 = r.fp8
		if g.ComputeCapability >= 10 {
			r.fp4 = 2 * r.fp8
		}
	}
	if r.hbm <= 0 {
		r.hbm = r.bf16 / 295
	}
	if r.sms <= 0 {
		r.sms = 132
	}
	r.fp32 = r.bf16 / 2
	r.fp32Core = r.bf16 * fp32CorePerBF16(g.ComputeCapability)
	r.nvls = g.ComputeCapability >= 9
	r.nvlinkBus, r.nvlsAlg = nvlinkRates(g.ComputeCapability)
	return r
}

// fp32CorePerBF16 is a GPU's FP32 CUDA-core rate over its dense bf16 tensor
// rate, both per SM per clock: 64 FP32 lanes per SM on A100 (NVIDIA A100
// Tensor Core GPU Architecture whitepaper: 19.5 TFLOP/s FP32 against 312
// bf16), 128 from Hopper on (NVIDIA H100 Tensor Core GPU Architecture
// whitepaper: 128 FP32 cores per SM; Blackwell keeps 128 per SM), each an
// FMA of two FLOPs, against the 2,048, 4,096 and 8,192 bf16 FLOPs per SM
// per clock of expPerBF16's note. H100 SXM: 61.8 TFLOP/s at the clock of its
// bf16 peak (its datasheet's 67 is at the boost clock); B200 70.
func fp32CorePerBF16(cc float64) float64 {
	switch {
	case cc >= 10:
		return 256.0 / 8192
	case cc >= 9:
		return 256.0 / 4096
	}
	return 128.0 / 2048
}

// expPerBF16 is a GPU's SFU exponential rate over its dense bf16 tensor
// rate, both per SM per clock: 16 MUFU.EX2 per SM per clock on A100, H100
// and B200 (FlashAttention-4, Zadouri et al. 2026, arXiv 2603.05451 §2: the
// exponential unit stayed at 16 ops/clock/SM from Hopper to Blackwell),
// twice that on Blackwell Ultra (NVIDIA, "Making Softmax More Efficient with
// NVIDIA Blackwell Ultra": doubled SFU throughput); bf16 dense FLOPs per SM
// per clock 2,048 (A100: 312 TFLOP/s over 108 SMs at 1.41 GHz), 4,096
// (H100: 989 over 132 at 1.83 GHz) and 8,192 (B200: 2,250 over 148 at
// 1.86 GHz). H100: 3.9 tera-exponentials/s; GB200 4.9, published as 5.
func expPerBF16(cc float64) float64 {
	switch {
	case cc >= 10.3 && cc < 11:
		return 32.0 / 8192
	case cc >= 10:
		return 16.0 / 8192
	case cc >= 9:
		return 16.0 / 4096
	}
	return 16.0 / 2048
}

// tensorShare is the share of its datasheet tensor-core peaks a GPU
// sustains under dense tensor-core work: a datasheet peak is SMs × FLOPs per
// SM per clock × the rated clock, and a GPU that would draw more than its
// power limit at that clock runs slower, so its sustained rate is the
// power limit over the power one TFLOP/s draws (wPerTFLOP, fitted). The
// Blackwell family shows it: GB300 has GB200's 2.5 PFLOP/s bf16 and
// 5 PFLOP/s fp8 dense peaks (GB200 and GB300 NVL72 datasheets) on 160 SMs
// instead of 148 at a lower clock, with a 1,400 W limit instead of 1,200 W
// (NVIDIA, "Inside NVIDIA Blackwell Ultra", 2025), and Megatron-Bridge
// measures the same plans about 1.2× faster on it (testdata/measured:
// Llama 3 70B and 3.1 405B fp8, 25.11 to 26.06); B200 (1,000 W for 2.25
// PFLOP/s) has still less power per FLOP. Memory-bound work, exponentials
// and communication draw less power and are not scaled. No power limit
// given, or no fitted constant: 1.
func tensorShare(g spec.GPU, wPerTFLOP float64) float64 {
	if g.TDPWatts <= 0 || wPerTFLOP <= 0 || g.BF16TFLOPs <= 0 {
		return 1
	}
	return math.Min(1, g.TDPWatts/(g.BF16TFLOPs*wPerTFLOP))
}

// networkBus is the share of a NIC's line rate (cluster.network_gbps) NCCL's
// collectives reach across nodes: 24 GB/s on 200 Gb/s HDR InfiniBand ("the
// peak for 200G HDR is 24GB/s", NVIDIA/nccl#412; "On an Nvidia DGX-A100
// system we have 8x200Gbit/s IB cards and we measure 192GB/s AllReduce
// BusBW", NVIDIA/nccl#812), 48-49 GB/s on 400 Gb/s NDR ConnectX-7 ("should
// achieve up to 48-49GB/s per NIC", NVIDIA/nccl-tests#267): 0.96.
const networkBus = 0.96

// nvlinkRates are NVLink's measured collective rates as shares of the line
// rate (cluster.nvlink_gbps, one direction), by compute capability. They are
// measurements, not fitted: a collective driven by the SMs moves 128-byte
// payloads with protocol overhead, so NCCL's bus bandwidth is about 80% of
// the line rate on every NVLink generation; NVLink SHARP reduces in the
// NVSwitch and reaches a higher all-reduce rate than a ring on 5 or more GPUs.
//
//   - A100 (NVLink 3, 12 links of 25 GB/s = 300 GB/s): ~230 GB/s bus
//     bandwidth on 8 GPUs with large messages (S. Jeaugey, NCCL maintainer,
//     NVIDIA/nccl-tests#149: "240GB/s on A100, but some other bottlenecks on
//     the GPUs limits it to ~230GB/s"; NCCL src/graph/topo.h SM80_NVLINK_BW
//     20.0 GB/s per link): 230/300.
//   - H100/H200 (NVLink 4, 18 links, 450 GB/s): 370 GB/s bus bandwidth for
//     ring collectives ("With the protocol overhead (~20%) NCCL can get an
//     effective NVLink bandwidth of 370GB/s", NVIDIA/nccl-tests#212; ring
//     365-370 GB/s on 2 to 8 GPUs, NVIDIA/nccl#1455; topo.h SM90_NVLINK_BW
//     20.6 GB/s per link): 370/450. NVLink SHARP all-reduce on 8 GPUs:
//     algorithm bandwidth ~275 GB/s (busBw ~480, nccl-tests#212): 275/450.
//   - B200/GB200/B300/GB300 (NVLink 5, 18 links of 50 GB/s, 900 GB/s):
//     topo.h SM100_NVLINK_BW 40.1 GB/s per link = 722 GB/s (NCCL's own
//     "maxBw 721.8" on B200, NVIDIA/nccl#1807): 0.80. NVLink SHARP
//     all-reduce on 8 B200: busBw 830 GB/s (nccl#1807), algorithm bandwidth
//     830/(2·7/8) = 474 GB/s: 474/900.
func nvlinkRates(cc float64) (bus, nvlsAlg float64) {
	switch {
	case cc >= 10:
		return 0.80, 474.0 / 900
	case cc >= 9:
		return 370.0 / 450, 275.0 / 450
	case cc >= 8 && cc < 8.6:
		return 230.0 / 300, 0
	}
	return 0.80, 0 // NCCL's per-link model elsewhere: 20 GB/s of 25 (SM70), 12 of 14 (SM86)
}

// gemmTile is a CTA tile a GEMM library picks from; eff is its throughput
// relative to the largest one (smaller tiles reuse less of each operand).
type gemmTile struct{ m, n, eff float64 }

var gemmTiles = [...]gemmTile{{128, 256, 1}, {128, 128, 0.93}, {64, 128, 0.8}}

// kHalf is the reduction depth at which a GEMM's main loop runs at half
// speed: prologue and epilogue cost about 64 steps of K.
const kHalf = 64

// op is a timed piece of work: seconds of GEMM, attention, memory-bound
// work and fixed kernel cost. ideal is a lower bound of its time that is
// proportional to its FLOPs: every GEMM and attention kernel at the
// calibrated efficiency of a large, well-shaped one (the shape factors are at
// most 1), nothing else; it is not part of total.
//
// host is the CPU time to issue its kernels eagerly (HostOpS each, none
// when CUDA-graphed); it is not part of total: the stage clock compares it
// with the GPU time (the host runs ahead of the GPU until a
// synchronisation) and puts the GPU's wait for the host in idle, which is.
type op struct{ gemm, attn, mem, fixed, idle, ideal, host float64 }

func (o op) total() float64 { return o.gemm + o.attn + o.mem + o.fixed + o.idle }

func (o op) plus(p op) op {
	return op{o.gemm + p.gemm, o.attn + p.attn, o.mem + p.mem, o.fixed + p.fixed, o.idle + p.idle, o.ideal + p.ideal, o.host + p.host}
}

func (o op) times(x float64) op {
	return op{o.gemm * x, o.attn * x, o.mem * x, o.fixed * x, o.idle * x, o.ideal * x, o.host * x}
}

// captured is o replayed from a CUDA graph: one graph launch replaces the
// host's per-kernel work, and the kernels' fixed cost shrinks to
// GraphKernelRel of it.
func (cm *computeModel) captured(o op) op {
	o.host = 0
	o.fixed *= cm.cal.GraphKernelRel
	return o
}

// kernels is the fixed cost of k kernels: GPU-side (launch gap, ramp-up and
// tail) and the host's issue time.
func (cm *computeModel) kernels(k float64) op {
	return op{fixed: k * cm.cal.KernelS, host: k * cm.cal.HostOpS}
}

// computeModel times operations on one GPU.
type computeModel struct {
	r   gpuRates
	cal Calibration
	fp8 bool // the decoder's linear layers run in fp8 (or, with fp4, in NVFP4)
	fp4 bool // precision "fp4": the quantized GEMMs are NVFP4
	// fp32: precision "fp32". Transformer Engine's GEMMs of fp32 operands
	// run on the TF32 tensor cores (cublaslt_gemm.cu: "Use TF32 only for pure
	// FP32 GEMM", CUBLAS_COMPUTE_32F_FAST_TF32), PyTorch's own on the CUDA
	// cores (torchFP32).
	fp32   bool
	ab     float64
	graphs cudaGraphs
	// routerFusion: kernels.moe_router_fusion.
	routerFusion bool
	// sharedExpertOverlap: model.moe.shared_expert_overlap (the shared
	// expert runs in the dispatcher, beside the all-to-all).
	sharedExpertOverlap bool
	// unfused: core attention runs unfused (kernels.attention_backend
	// "unfused" or "local", see fusedAttention); attnDropout: its
	// probabilities go through dropout.
	unfused, attnDropout bool
	// globalPermute: the alltoall dispatcher with more than one local
	// expert, which permutes the routed tokens by destination rank before
	// the all-to-all and again by local expert after it (see moeBlock).
	globalPermute bool
	// fusedGroupedMLP: the routed experts run as Transformer Engine's fused
	// grouped MLP (see fusedGroupedMLP in settings.go).
	fusedGroupedMLP bool
	// fp8Padding: the routed experts pad each expert's tokens to the fp8
	// recipe's alignment themselves (see fp8ExpertPadding in settings.go).
	fp8Padding bool
	// mainGradAccum is the width in bytes of the main gradients a weight-
	// gradient GEMM accumulates into (kernels.gradient_accumulation_fusion),
	// 0 without the fusion.
	mainGradAccum float64
}

// wgradOut is the bytes per element a weight-gradient GEMM's output moves.
// With gradient accumulation fusion (Megatron's default,
// --no-gradient-accumulation-fusion turns it off) Transformer Engine's
// linears write the weight gradient into the parameter's main_grad with
// accumulate=True, so the GEMM reads and writes the main gradient
// (fuse_wgrad_accumulation=config.gradient_accumulation_fusion,
// megatron/core/extensions/transformer_engine.py at d98e8a64; TE v2.9
// module/grouped_linear.py backward: general_grouped_gemm(...,
// accumulate=accumulate_wgrad_into_param_main_grad) into main_grads) on
// every microbatch. A GEMM with a long token reduction hides it; an
// expert's with a few hundred tokens is bound by it. Without the fusion
// the GEMM writes a 16-bit gradient (the later add into main_grad is not
// timed).
func (cm *computeModel) wgradOut() float64 {
	if cm.mainGradAccum > 0 {
		return 2 * cm.mainGradAccum
	}
	return cm.ab
}

// gemm is g independent GEMMs (a grouped GEMM when g > 1) of an M×K by K×N
// product, in fp8 when fp8, else at the activation width: its time and its
// ideal (FLOPs at the calibrated peak fraction). Its output is written at
// the activation width (gemmAs).
func (cm *computeModel) gemm(g, M, N, K float64, fp8, grouped bool) (t, ideal float64) {
	return cm.gemmAs(g, M, N, K, fp8, grouped, 0, cm.ab)
}

// torchFP32 is cm for the GEMMs PyTorch runs itself rather than Transformer
// Engine (the batched GEMMs of unfused core attention, torch.baddbmm and
// torch.bmm; the output layer, Megatron's ColumnParallelLinear over
// torch.matmul): in fp32 training they run on the CUDA cores, since PyTorch
// keeps TF32 off for matmuls (torch.backends.cuda.matmul.allow_tf32 is False
// by default from PyTorch 1.12) and Megatron-LM does not turn it on (no
// allow_tf32 or set_float32_matmul_precision at d98e8a64). Other precisions:
// cm itself.
func (cm *computeModel) torchFP32() *computeModel {
	if !cm.fp32 {
		return cm
	}
	t := *cm
	t.r.fp32 = cm.r.fp32Core
	return &t
}

// peak is the dense datasheet peak a GEMM runs against: the quantized one
// (fp8, or NVFP4 with precision "fp4") for a quantized GEMM, else the
// precision's 16-bit one, TF32 in fp32 training.
func (cm *computeModel) peak(quantized bool) float64 {
	switch {
	case quantized && cm.fp4:
		return cm.r.fp4
	case quantized:
		return cm.r.fp8
	case cm.fp32:
		return cm.r.fp32
	}
	return cm.r.bf16
}

// teGroupedGEMMStreams is how many of a grouped linear's per-expert GEMMs
// Transformer Engine runs at once: nvte_multi_stream_cublas_gemm launches
// GEMM i as its own cuBLAS GEMM on compute stream i mod
// nvte_get_num_compute_streams(), a constant 4 (v2.9
// common/gemm/cublaslt_gemm.cu multi_stream_cublas_gemm,
// common/util/multi_stream.cpp get_num_compute_streams).
const teGroupedGEMMStreams = 4

// gemmAs is gemm with at most concurrent of the g GEMMs running at once (0:
// all, one kernel over the groups) and its output moving outB bytes per
// element through HBM (written; read and written where it accumulates).
//
// Tiles are spread over the SMs in waves; GEMMs on concurrent streams
// share the SMs, so the CTAs in flight are at most concurrent GEMMs' tiles:
// a per-expert GEMM of a few tokens (a small expert-parallel degree or
// micro batch) leaves SMs idle that one grouped kernel would fill.
func (cm *computeModel) gemmAs(g, M, N, K float64, fp8, grouped bool, concurrent, outB float64) (t, ideal float64) {
	if g <= 0 || M <= 0 || N <= 0 || K <= 0 {
		return 0, 0
	}
	peak, eff, inB := cm.peak(fp8), cm.cal.GEMMEff, cm.ab
	if fp8 {
		eff, inB = cm.cal.FP8GEMMEff, cm.qb()
		if cm.fp4 {
			eff = cm.cal.FP4Eff()
		}
	}
	peak *= cm.r.tensor
	ideal = 2 * g * M * N * K / (peak * eff)
	if grouped && cm.cal.GroupedRel > 0 {
		eff *= math.Min(cm.cal.GroupedRel, 1)
	}
	best := 0.0
	for _, t := range gemmTiles {
		perGEMM := math.Ceil(M/t.m) * math.Ceil(N/t.n)
		tiles := g * perGEMM
		inFlight := cm.r.sms
		if concurrent > 0 {
			inFlight = math.Min(inFlight, math.Min(g, concurrent)*perGEMM)
		}
		waves := math.Ceil(tiles / inFlight)
		if e := t.eff * g * M * N / (waves * cm.r.sms * t.m * t.n); e > best {
			best = e
		}
	}
	best *= K / (K + kHalf)
	flops := 2 * g * M * N * K
	compute := flops / (peak * eff * best)
	mem := g * ((M*K+K*N)*inB + M*N*outB) / cm.r.hbm
	return math.Max(compute, mem), ideal
}

// groupedKernel is how the per-expert GEMMs of a grouped linear run.
type groupedKernel int

const (
	// teMultiStream: Transformer Engine's GroupedLinear (Megatron's
	// TEGroupedMLP, --moe-grouped-gemm): general_grouped_gemm runs
	// nvte_multi_stream_cublas_gemm, one cuBLAS GEMM per local expert, GEMM i
	// on compute stream i mod teGroupedGEMMStreams (TE v2.9
	// common/gemm/cublaslt_gemm.cu).
	teMultiStream groupedKernel = iota
	// oneGroupedKernel: one kernel over every expert's tiles (Transformer
	// Engine's fused grouped MLP, see fusedGroupedMLP in settings.go).
	oneGroupedKernel
)

// groupedGEMM is the grouped GEMM of g experts, each an M×K by K×N
// product (M: the expert's tokens; K, N: its weight), run by kernel, its
// output moving outB bytes per element: its time and ideal.
//
// Each expert's GEMM runs at the dense rate of its own shape: the tiles of
// one expert do not span another's rows, so an expert's tokens round up to
// whole tiles, and each expert reads its own weight, so few tokens per
// expert leave the GEMM on the memory roofline; its weight gradient
// (M = the weight's rows, K = the expert's tokens) shortens the reduction
// as the tokens per expert fall. That is what published grouped kernels
// measure (testdata/gemm/grouped.md, TestGroupedGEMMKernels with GroupedRel
// off): DeepGEMM's contiguous FP8 grouped GEMMs on H800 reach 1.04-1.06x
// the dense GEMM of the same M, N and K (README at 55ab91f7), its
// per-expert weight-gradient GEMMs 0.98-1.00x (DeepGEMM PR #95).
// The calibration's GroupedRel, fitted on training steps, scales the
// efficiency on top (gemmAs).
func (cm *computeModel) groupedGEMM(g, M, N, K float64, fp8 bool, kernel groupedKernel, outB float64) (t, ideal float64) {
	concurrent := 0.0
	if kernel == teMultiStream {
		concurrent = teGroupedGEMMStreams
	}
	return cm.gemmAs(g, M, N, K, fp8, true, concurrent, outB)
}

// linear is a linear layer of M tokens, K inputs and N outputs: forward,
// and backward (the data gradient M×N·N×K and the weight gradient K×M·M×N).
// g > 0 makes it the grouped GEMM of g routed experts; g < 0 is -g plain GEMMs.
func (cm *computeModel) linear(g, M, K, N float64, fp8 bool) (fwd, bwd op) {
	return cm.linearAs(g, M, K, N, fp8, false, true)
}

// linearAs is linear with the grouped GEMMs of g routed experts run as one
// grouped kernel each (fusedGroup), and without the on-the-fly fp8 cast of
// its input when another kernel's epilogue writes it in fp8 (castIn false).
func (cm *computeModel) linearAs(g, M, K, N float64, fp8, fusedGroup, castIn bool) (fwd, bwd op) {
	grouped := g > 0
	g = math.Abs(g)
	kernel := teMultiStream
	if fusedGroup {
		kernel = oneGroupedKernel
	}
	gemm := func(M, N, K, outB float64) (t, ideal float64) {
		if grouped {
			return cm.groupedGEMM(g, M, N, K, fp8, kernel, outB)
		}
		return cm.gemmAs(g, M, N, K, fp8, false, 0, outB)
	}
	f, fi := gemm(M, N, K, cm.ab)
	d, di := gemm(M, K, N, cm.ab)
	// The weight gradient accumulates into the parameter's main gradient
	// (wgradOut bytes per element: read and written).
	w, wi := gemm(K, N, M, cm.wgradOut())
	// Transformer Engine's GroupedLinear runs the routed experts' GEMMs
	// as one cuBLAS GEMM per local expert on a few streams
	// (nvte_multi_stream_cublas_gemm), so the host issues g of them.
	k := 1.0
	if grouped && !fusedGroup {
		k = g
	}
	fwd = cm.kernels(k).plus(op{gemm: f, ideal: fi})
	bwd = cm.kernels(2 * k).plus(op{gemm: d + w, ideal: di + wi})
	if fp8 {
		// Transformer Engine quantises each fp8 GEMM's activation input
		// (forward) and output gradient (backward) on the fly: read the
		// 16-bit tensor, write it in fp8 row-wise and column-wise (the
		// weight-gradient GEMM reads the transpose), one kernel each.
		// Weights are cast once per step (or gathered in fp8). The cost
		// grows against the GEMM's FLOPs as K or N shrink: narrow experts.
		// NVFP4 writes half a byte and a scale byte per 16 elements per
		// usage, its columnwise copy through a random Hadamard transform
		// (Transformer Engine's NVFP4BlockScaling: RHT on the wgrad
		// operands), in the same pass.
		if castIn {
			fwd = fwd.plus(cm.elementwise(g*M*K*(cm.ab+2*cm.qb()), 1))
		}
		bwd = bwd.plus(cm.elementwise(g*M*N*(cm.ab+2*cm.qb()), 1))
	}
	return fwd, bwd
}

// flash is fused (flash) attention of b sequences, heads query heads, sq
// queries each attending causally to sk keys on average as a full causal
// square of side sq·cp would, head dims dqk and dv: forward and backward
// (the backward's five matrix products against the forward's two, 2.5×).
//
// Each score also costs one exponential on the SFUs, in the forward's
// softmax and again where the backward recomputes the probabilities. The
// second matrix product of a tile needs the softmax of the first one, so
// the exponentials add to the tensor-core time instead of hiding under it
// (NVIDIA, "Making Softmax More Efficient with NVIDIA Blackwell Ultra": on
// GB200 the tensor cores idle between BMM1 and BMM2 while the SFUs
// normalise the scores). On Blackwell the two are equal at a 128-wide head
// (a 128×128 tile: 1,024 clocks of MMA at 8,192 FLOPs per SM per clock,
// 1,024 clocks of exponentials at 16; FlashAttention-4 §2), which bounds a
// cuDNN-style forward near half the bf16 peak (FlashAttention-4 reports
// cuDNN 9.13 at about 1,230 TFLOP/s on B200, 1,605/1.3) where Hopper's
// exponentials take a third of the time; Blackwell Ultra's doubled SFU
// rate is its "2x attention-layer acceleration".
func (cm *computeModel) flash(b, heads, sq, skAvg, dqk, dv float64) (fwd, bwd op) {
	if b <= 0 || heads <= 0 || sq <= 0 {
		return op{}, op{}
	}
	flops := 2 * b * heads * sq * skAvg * (dqk + dv)
	exps := b * heads * sq * skAvg
	// Work units are 128-query blocks of one head; waves of them over the SMs.
	units := b * heads * math.Ceil(sq/128)
	waves := math.Ceil(units / cm.r.sms)
	wave := units / (waves * cm.r.sms)
	// Short key ranges leave the pipeline of K/V tiles shallow; narrow heads
	// do less work per byte.
	depth := skAvg / (skAvg + 256)
	width := 0.7 + 0.3*math.Min(1, dqk/128)
	peak := cm.r.bf16 * cm.r.tensor
	rate := peak * cm.cal.AttnEff * wave * depth * width
	ideal := flops / (peak * cm.cal.AttnEff)
	expT, expIdeal := 0.0, 0.0
	if cm.r.exp > 0 {
		expT, expIdeal = exps/(cm.r.exp*wave*depth), exps/cm.r.exp
	}
	fwd = cm.kernels(1).plus(op{attn: flops/rate + expT, ideal: ideal + expIdeal})
	bwd = cm.kernels(2).plus(op{attn: 2.5*flops/rate + expT, ideal: 2.5*ideal + expIdeal})
	return fwd, bwd
}

// unfusedAttention is core attention without a fused kernel: Transformer
// Engine's UnfusedDotProductAttention (and Megatron's local
// DotProductAttention) run BMM1 (torch.baddbmm of Q and Kᵀ into the whole
// b·heads·sq·sk score tensor: the causal mask is applied by the softmax, so
// the full square is computed), a fused scale-mask-softmax kernel writing the
// 16-bit probabilities, dropout when attention dropout is on, and BMM2
// (torch.bmm of the probabilities and V). The backward runs BMM2's two
// gradients (dP = dO·Vᵀ, dV = Pᵀ·dO), the softmax backward (reads P and dP,
// writes dS) and BMM1's two (dQ = dS·K, dK = dSᵀ·Q). Source: Transformer
// Engine v2.3 pytorch/attention/dot_product_attention/backends.py
// (UnfusedDotProductAttention.forward) and softmax.py (FusedScaleMaskSoftmax).
// The score tensor is written to and read from HBM by every step, which the
// batched GEMMs' roofline and the softmax's traffic carry.
func (cm *computeModel) unfusedAttention(b, heads, sq, sk, dqk, dv float64) (fwd, bwd op) {
	if b <= 0 || heads <= 0 || sq <= 0 {
		return op{}, op{}
	}
	g, e := b*heads, cm.ab
	torch := cm.torchFP32()
	bmm := func(M, N, K float64) op {
		t, ideal := torch.gemm(g, M, N, K, false, false)
		return cm.kernels(1).plus(op{attn: t, ideal: ideal})
	}
	scores := g * sq * sk * e
	fwd = bmm(sq, sk, dqk).plus(cm.elementwise(2*scores, 1)).plus(bmm(sq, dv, sk))
	bwd = bmm(sq, sk, dv).plus(bmm(sk, dv, sq)).plus(cm.elementwise(3*scores, 1)).
		plus(bmm(sq, dqk, sk)).plus(bmm(sk, dqk, sq))
	if cm.attnDropout {
		// The dropout mask (one byte per score) and the dropped
		// probabilities: written forward, read backward.
		fwd = fwd.plus(cm.elementwise(scores+g*sq*sk, 1))
		bwd = bwd.plus(cm.elementwise(2*scores+g*sq*sk, 1))
	}
	return fwd, bwd
}

// elementwise is memory-bound work moving bytes through HBM in kernels kernels.
func (cm *computeModel) elementwise(bytes, kernels float64) op {
	return cm.kernels(kernels).plus(op{mem: bytes / cm.r.hbm})
}

// layerTime is one decoder layer's time for one microbatch on one GPU.
type layerTime struct {
	fwd, bwd op
	// recompute is the forward work recomputation repeats in the backward.
	recompute op
	// attnFwd is the attention forward (overlap window of the cp ring);
	// gemmFwd/gemmBwd the GEMMs (overlap window of tp communication).
	attnFwd, attnBwd, gemmFwd, gemmBwd float64
	// colBwd is the backward GEMMs of the column-parallel linears (QKV or
	// MLA's up-projections, FC1 of the MLP or shared expert): the window
	// their asynchronous tensor-parallel collectives run in (tpAsync).
	colBwd float64
	// shared is the shared expert's GPU time, forward and backward (MoE
	// layers): the work model.moe.shared_expert_overlap runs beside the
	// expert all-to-all.
	shared float64
}

// layerShape is what the compute model needs of a decoder layer.
type layerShape struct {
	T, Tsp         float64 // tokens on this GPU's sequence shard; of its sequence-parallel shard
	b, s, cp, tp   float64
	h, f, fe, fs   float64
	gated          float64
	heads, dqk, dv float64
	q, kv          float64 // query and key/value widths (all heads)
	experts, topk  float64
	ep, etp        float64
	dropout        bool
	mla            *spec.MLA
	// rope: rotary position embeddings (model.position_embedding rope or
	// yarn); ropeFused: Megatron applies them with fused kernels
	// (kernels.apply_rope_fusion).
	rope, ropeFused bool
	recompute       string
	recomputeModule map[string]bool
	// windowed is the share of decoder layers with sliding-window
	// attention, window its left and right extents (model.window_size).
	windowed float64
	window   [2]float64
}

// attentionBlock times the attention half of a layer: input norm, the QKV
// (or MLA) projections, RoPE, flash attention, output projection, residual.
func (cm *computeModel) attentionBlock(ls layerShape) (f, bw, flashF, flashB op, gF, gB, colB float64) {
	T, tp := ls.T, ls.tp
	// The projections, M×K by K×N each; col marks the column-parallel ones
	// (output split over tp), the window of their asynchronous backward
	// collectives. The rest are row-parallel or, MLA's down-projections,
	// not split.
	type projection struct {
		M, K, N float64
		col     bool
	}
	var lins [5]projection
	n := 0
	add := func(p projection) { lins[n] = p; n++ }
	if ml := ls.mla; ml != nil {
		qk := float64(ml.QKHeadDim + ml.QKPosEmbHeadDim)
		if ml.QLoraRank != nil {
			r := float64(*ml.QLoraRank)
			add(projection{T, ls.h, r, false})
			add(projection{T, r, ls.heads * qk / tp, true})
		} else {
			add(projection{T, ls.h, ls.heads * qk / tp, true})
		}
		kvr := float64(ml.KVLoraRank)
		add(projection{T, ls.h, kvr + float64(ml.QKPosEmbHeadDim), false})
		add(projection{T, kvr, ls.heads * float64(ml.QKHeadDim+ml.VHeadDim) / tp, true})
		add(projection{T, ls.heads * float64(ml.VHeadDim) / tp, ls.h, false})
	} else {
		add(projection{T, ls.h, (ls.q + 2*ls.kv) / tp, true})
		add(projection{T, ls.q / tp, ls.h, false})
	}
	for _, l := range lins[:n] {
		a, b := cm.linear(-1, l.M, l.K, l.N, cm.fp8)
		f, bw = f.plus(a), bw.plus(b)
		if l.col {
			colB += b.gemm
		}
	}
	gF, gB = f.gemm, bw.gemm
	// Causal attention over the whole sequence, split by cp into
	// load-balanced chunks: each query attends to s/2 keys on average.
	if cm.unfused && ls.cp == 1 {
		flashF, flashB = cm.unfusedAttention(ls.b, ls.heads/tp, ls.s, ls.s, ls.dqk, ls.dv)
	} else {
		flashF, flashB = cm.flash(ls.b, ls.heads/tp, ls.s/ls.cp, ls.s/2, ls.dqk, ls.dv)
		if ls.windowed > 0 && ls.cp == 1 {
			// Sliding-window layers: the fused kernels skip the key tiles
			// outside the window (flash attention's and cuDNN's
			// window_size) and compute the ones it touches, windowKeys
			// keys a query. The layer time is the mean over the layers,
			// windowed and full in their share. The full causal layers'
			// masked halves of their diagonal tiles (64 keys a query, 3%
			// at 4,096 tokens) are inside the fitted AttnEff, which rows
			// of full causal layers set; timed explicitly (s/2 + 64 keys)
			// and refitted, the held-out median goes from 4.6% to 4.7%.
			wF, wB := cm.flash(ls.b, ls.heads/tp, ls.s, windowKeys(ls.s, ls.window[0], ls.window[1]), ls.dqk, ls.dv)
			flashF = flashF.times(1 - ls.windowed).plus(wF.times(ls.windowed))
			flashB = flashB.times(1 - ls.windowed).plus(wB.times(ls.windowed))
		}
	}
	f, bw = f.plus(flashF), bw.plus(flashB)
	// Element-wise: input norm (read h, write h), RoPE on q and k (read and
	// write), residual add (two reads, a write), fp8 cast of the
	// output-projection input, dropout mask.
	e := cm.ab
	bytes := ls.Tsp*ls.h*2*e + T*(ls.q+ls.kv)/tp*2*e + ls.Tsp*ls.h*3*e
	kernels := 4.0
	if ls.dropout {
		bytes += ls.Tsp * ls.h
	}
	ew := cm.elementwise(bytes, kernels)
	f = f.plus(ew)
	bw = bw.plus(ew.times(2))
	rf, rb := cm.ropeUnfused(ls)
	f, bw = f.plus(rf), bw.plus(rb)
	return f, bw, flashF, flashB, gF, gB, colB
}

// ropeUnfused is what Megatron's unfused RoPE (kernels.apply_rope_fusion
// false) launches and moves beyond the fused kernels the rest of the model
// times (one kernel per tensor reading and writing it), per layer forward
// and backward. Megatron-LM at d98e8a64,
// models/common/embeddings/rope_utils.py _apply_rotary_pos_emb_bshd: per
// rotated tensor cos and sin of the frequencies, each scaled and cast (6
// small kernels), t·cos, _rotate_half (negate, concatenate), ·sin, the sum
// and the concatenation with the unrotated part: 12 kernels passing over
// the tensor 13 times (each pass a read and a write, the sum two reads)
// where TE's fused kernel passes twice. Multi-latent attention
// (multi_latent_attention.py, qkv_up_proj_and_rope_apply) rotates only the
// 64-wide positional parts of q and k, after the interleaving concatenation
// (mla_rotary_interleaved: one kernel, two more passes), and then
// concatenates the query (reads 128 + 64, writes 192 per head), the key
// (the same, k's positional part broadcast) and copies the value out of the
// kv projection (128): 29 kernels and 1,984 values per token and head where
// fused_apply_mla_rope_for_q/_kv take 2 kernels and 960 (read q and kv,
// write query, key and value). The backward is autograd's of the same ops:
// the products, the negation, the concatenations' slices and the gradient
// sums, without the cos/sin work (about 21 kernels more than fused for MLA,
// 16 otherwise), moving about as much.
func (cm *computeModel) ropeUnfused(ls layerShape) (fwd, bwd op) {
	if !ls.rope || ls.ropeFused {
		return op{}, op{}
	}
	e := cm.ab
	if ls.mla != nil {
		bytes := ls.T * ls.heads / ls.tp * (1984 - 960) * e
		return cm.elementwise(bytes, 27), cm.elementwise(bytes, 21)
	}
	bytes := ls.T * (ls.q + ls.kv) / ls.tp * 11 * e
	return cm.elementwise(bytes, 22), cm.elementwise(bytes, 16)
}

// windowKeys is the mean number of keys a fused attention kernel computes
// per query in causal attention over a sequence of s tokens with a window
// of left earlier and right later tokens (-1: unbounded). The kernels skip
// only whole tiles: a 128-query block computes every 128-key tile its
// band touches, masked entries included (FlashAttention-2, Dao 2023, §3.1:
// blocks whose entries are all masked are skipped, the diagonal block is
// computed and masked; cuDNN's sliding-window kernels time the same way:
// cudnn-frontend benchmark/sdpa_benchmark_training results for GPT-OSS,
// window 128, take time linear in s). Query block b touches
// min(b, ceil(w/128)) tiles on a side with window w besides its own; a
// full causal layer computes about s/2 + 64 keys per query, a window of
// 128 two tiles, 256 keys, where a query attends to 129.
func windowKeys(s, left, right float64) float64 {
	if s <= 0 {
		return 0
	}
	const tile = 128.0
	blocks := math.Ceil(s / tile)
	side := func(w float64) float64 {
		c := math.Ceil(w / tile)
		if w < 0 || c >= blocks-1 {
			return (blocks - 1) / 2 // every earlier (or later) tile: mean (n−1)/2
		}
		// Σ_b min(b, c) over blocks b = 0..n−1, divided by n.
		return (c*(c+1)/2 + (blocks-1-c)*c) / blocks
	}
	return math.Min(s, tile*(1+side(left)+side(right)))
}

// mlpBlock times a dense MLP (or a shared expert, norm excluded) of width
// f, on T tokens sharded by tp.
func (cm *computeModel) mlpBlock(ls layerShape, T, f, tp float64, norm bool) (fwd, bwd op) {
	a1, b1 := cm.linear(-1, T, ls.h, ls.gated*f/tp, cm.fp8)
	a2, b2 := cm.linear(-1, T, f/tp, ls.h, cm.fp8)
	fwd, bwd = a1.plus(a2), b1.plus(b2)
	e := cm.ab
	bytes := T * f / tp * (ls.gated + 1) * e // activation: read gated·f, write f
	kernels := 1.0
	if norm {
		bytes += ls.Tsp * ls.h * 5 * e // norm and residual add
		kernels += 2
		if ls.dropout {
			bytes += ls.Tsp * ls.h
		}
	}
	ew := cm.elementwise(bytes, kernels)
	return fwd.plus(ew), bwd.plus(ew.times(2))
}

// moeBlock times an MoE layer's MLP half: norm, router, permutation of the
// routed tokens, the grouped expert GEMMs, unpermutation, shared expert. The
// host's issue time of each part is dropped when a CUDA graph captures it
// (Megatron's --cuda-graph-modules: moe_router the norm and router,
// moe_preprocess the dispatcher's metadata, moe the whole block).
func (cm *computeModel) moeBlock(ls layerShape) (fwd, bwd op) {
	g := cm.graphs
	// Routed token-expert pairs this GPU computes (balanced routing).
	P := ls.T * ls.topk * ls.etp / ls.tp
	local := math.Max(ls.experts/ls.ep, 1)
	Me := P / local
	// With Transformer Engine's fused grouped MLP (fusedGroupedMLP) each
	// expert GEMM is one grouped kernel over the local experts, and FC1's
	// epilogue applies the SwiGLU, the routing probabilities and FC2's
	// MXFP8 quantisation: no activation pass and no FC2 input cast.
	fused := cm.fusedGroupedMLP
	// With one local expert Transformer Engine's grouped GEMM is a single
	// cuBLAS GEMM (nvte_multi_stream_cublas_gemm with num_gemms 1 runs one
	// nvte_cublas_gemm, the call te.Linear makes; v2.1
	// common/gemm/cublaslt_gemm.cu), and the runs of a coarse MoE with one
	// expert per GPU (Mixtral 8x7B and 8x22B at EP 8) measure none of the
	// grouped penalty (GroupedRel): g < 0 times it as one plain GEMM. The
	// penalty is not a kernel property (groupedGEMM) but an MoE cost the
	// model does not time otherwise, fitted on fine-grained MoEs (128 to
	// 384 experts) at 2 to 128 local experts; no published run of a
	// fine-grained MoE has one expert per GPU, so there the penalty stays.
	// (Exempting it made the solver prefer one expert per GPU for every
	// fine-grained MoE that many GPUs allow: DeepSeek-V3 at EP 256 on 256
	// B300, GPT-OSS-120B at EP 128 across 16 H100 nodes, plans no
	// published run uses, on a cost the model cannot name.)
	g1 := local
	if local == 1 && !fused && ls.experts <= coarseMoEExperts {
		g1 = -1
	}
	a1, b1 := cm.linearAs(g1, Me, ls.h, ls.gated*ls.fe/ls.etp, cm.fp8, fused, true)
	a2, b2 := cm.linearAs(g1, Me, ls.fe/ls.etp, ls.h, cm.fp8, fused, !fused)
	fwd, bwd = a1.plus(a2), b1.plus(b2)
	e := cm.ab
	// Norm, residual add, router GEMM (bf16 or fp32) and its fp32 softmax /
	// top-k of the logits.
	// The router's element-wise work is many small kernels: 72 forward
	// and backward, 31 with --moe-router-fusion (Megatron-LM,
	// docs/discussions/deepseek-v3-gb200-optimization, §2.1.4).
	ra, rb := cm.linear(-1, ls.Tsp, ls.h, ls.experts, false)
	rk := 72.0
	if cm.routerFusion {
		rk = 31
	}
	rew := cm.elementwise(ls.Tsp*ls.h*5*e+ls.Tsp*ls.experts*4*3, rk/3)
	ra, rb = ra.plus(rew), rb.plus(rew.times(2))
	if g.router || g.moe {
		ra, rb = cm.captured(ra), cm.captured(rb)
	}
	// The dispatcher's metadata: routing map, tokens per expert, sort indices.
	pre := cm.elementwise(ls.Tsp*ls.experts*4*2, 3)
	if g.preprocess || g.moe {
		pre = cm.captured(pre)
	}
	// Permute and unpermute the routed tokens, expert activation.
	permute := 2 * P * ls.h * 2 * e
	act := P * ls.fe / ls.etp * (ls.gated + 1) * e
	ew := cm.elementwise(permute+act, 5)
	if cm.globalPermute {
		// The alltoall dispatcher permutes twice each way: globally by
		// destination rank before the all-to-all (the token copied once
		// per routed expert) and, with more than one local expert, again
		// by local expert after it ("Permutation 2: Sort tokens by local
		// expert", sort_chunks_by_idxs in MoEAlltoAllTokenDispatcher,
		// token_dispatcher.py at d98e8a64), and the combine undoes both;
		// the flex dispatcher (DeepEP, HybridEP) fuses the global permute
		// into its communication kernel and permutes once
		// (Megatron-LM docs/discussions/deepseek-v3-gb200-optimization
		// §2.1.1: "The AlltoAll dispatcher using the NCCL backend requires
		// one global and one local permute before and after EP
		// communication ... The Flex Dispatcher of DeepEP or HybridEP fuses
		// the global permute into the communication kernel").
		gp := cm.elementwise(permute, 2)
		fwd, bwd = fwd.plus(gp), bwd.plus(gp.times(2))
	}
	fwd, bwd = fwd.plus(ew), bwd.plus(ew.times(2))
	if fused {
		fwd = fwd.plus(cm.elementwise(permute, 4)).plus(ew.times(-1))
	}
	if ls.fs > 0 {
		sf, sb := cm.mlpBlock(ls, ls.T, ls.fs, ls.tp, false)
		// The router's graph holds the shared expert unless it overlaps
		// the all-to-all: MoELayer.forward at Megatron-LM d98e8a64 runs
		// shared_experts_compute (only without moe_shared_expert_overlap)
		// before route inside the captured part, and the replay takes its
		// output from the graph's tensor store
		// (maybe_skip_or_early_return_by_cudagraph, moe_utils.py); the
		// guide's §2.3: "moe_router: capture the moe router part. Also
		// capture shared experts unless the shared experts overlap is
		// enabled".
		if g.router && !cm.sharedExpertOverlap {
			sf, sb = cm.captured(sf), cm.captured(sb)
		}
		fwd, bwd = fwd.plus(sf), bwd.plus(sb)
	}
	if cm.fp8Padding {
		// Fp8Padding copies the expert's input and probabilities into
		// segments padded to the alignment, Fp8Unpadding copies the output
		// back (one fused kernel each, TE's fused_multi_row_padding and
		// unpadding); the backward runs the two the other way round.
		pad := cm.elementwise(4*P*ls.h*e, 3)
		fwd, bwd = fwd.plus(pad), bwd.plus(pad)
	}
	if g.moe {
		fwd, bwd = cm.captured(fwd), cm.captured(bwd)
	}
	fwd, bwd = fwd.plus(ra).plus(pre), bwd.plus(rb).plus(pre)
	return fwd, bwd
}

// layer times one decoder layer.
func (cm *computeModel) layer(ls layerShape, moe bool) layerTime {
	var lt layerTime
	af, ab, flF, flB, gF, gB, colB := cm.attentionBlock(ls)
	if cm.graphs.attn {
		af, ab, flF, flB = cm.captured(af), cm.captured(ab), cm.captured(flF), cm.captured(flB)
	}
	var mf, mb op
	if moe {
		mf, mb = cm.moeBlock(ls)
		if ls.fs > 0 {
			sf, sb := cm.mlpBlock(ls, ls.T, ls.fs, ls.tp, false)
			lt.shared = sf.total() + sb.total()
		}
	} else {
		mf, mb = cm.mlpBlock(ls, ls.T, ls.f, ls.tp, true)
		if cm.graphs.mlp {
			mf, mb = cm.captured(mf), cm.captured(mb)
		}
	}
	lt.fwd, lt.bwd = af.plus(mf), ab.plus(mb)
	lt.attnFwd, lt.attnBwd = flF.attn, flB.attn
	lt.gemmFwd, lt.gemmBwd = gF+mf.gemm, gB+mb.gemm
	lt.colBwd = colB
	if f := ls.f; !moe || ls.fs > 0 {
		if moe {
			f = ls.fs
		}
		_, fc1 := cm.linear(-1, ls.T, ls.h, ls.gated*f/ls.tp, cm.fp8)
		lt.colBwd += fc1.gemm
	}
	switch ls.recompute {
	case "full":
		lt.recompute = lt.fwd
	case "selective":
		// Megatron's recompute_modules (default core_attn): each module's
		// forward runs again in the backward.
		rm := ls.recomputeModule
		if rm["core_attn"] {
			lt.recompute = lt.recompute.plus(flF)
		}
		if rm["mlp"] && !moe || rm["moe"] && moe {
			lt.recompute = lt.recompute.plus(mf)
		}
		if rm["layernorm"] {
			lt.recompute = lt.recompute.plus(cm.elementwise(2*ls.Tsp*ls.h*2*cm.ab, 2))
		}
		if rm["moe_act"] && moe {
			P := ls.T * ls.topk * ls.etp / ls.tp
			lt.recompute = lt.recompute.plus(cm.elementwise(P*ls.fe/ls.etp*(ls.gated+1)*cm.ab, 1))
		}
		if rm["shared_experts"] && moe && ls.fs > 0 {
			sf, _ := cm.mlpBlock(ls, ls.T, ls.fs, ls.tp, false)
			lt.recompute = lt.recompute.plus(sf)
		}
		if rm["mla_up_proj"] && ls.mla != nil {
			kvr := float64(ls.mla.KVLoraRank)
			a, _ := cm.linear(-1, ls.T, kvr, ls.heads*float64(ls.mla.QKHeadDim+ls.mla.VHeadDim)/ls.tp, cm.fp8)
			lt.recompute = lt.recompute.plus(a)
		}
	}
	return lt
}

// outputLayer times the last stage's final norm, output layer (bf16) and
// vocab-parallel cross-entropy (fp32 logits read and written a few times).
func (cm *computeModel) outputLayer(T, Tsp, h, vocab, tp float64) (fwd, bwd op) {
	fwd, bwd = cm.torchFP32().linear(-1, T, h, vocab/tp, false)
	ce := cm.elementwise(T*vocab/tp*(cm.ab+4*2)+Tsp*h*2*cm.ab, 6)
	return fwd.plus(ce), bwd.plus(ce)
}

// optimizerStep times Adam on n locally sharded parameters of a GPU that
// holds all parameters: read the gradient, read and write the fp32 master
// weights and both moments (per the state bytes), write the 16-bit weights;
// zero the local gradient buffer of all parameters.
func (cm *computeModel) optimizerStep(shard, all float64, st BytesPerParam) op {
	bytes := shard*(st.Gradients+2*st.Optimizer+st.Weights) + all*st.Gradients
	return cm.elementwise(bytes, 8)
}
