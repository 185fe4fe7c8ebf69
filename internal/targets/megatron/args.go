package megatron

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
)

// argList builds the argument vector: flags and their values as separate
// elements, and for each element the spec field it came from (so a value
// Megatron cannot take can be blamed on the user's field).
type argList struct {
	args  []string
	paths []string
}

func (a *argList) flag(name string) { a.add("", name) }

func (a *argList) add(path string, words ...string) {
	for _, w := range words {
		a.args = append(a.args, w)
		a.paths = append(a.paths, path)
	}
}

func (a *argList) int(name string, v int) { a.add("", name, strconv.Itoa(v)) }

func (a *argList) float(name string, v float64) { a.add("", name, Float(v)) }

// str adds a flag whose value comes from the spec field at path.
func (a *argList) str(path, name string, values ...string) {
	a.add("", name)
	a.add(path, values...)
}

// list adds a flag whose values are the elements of the list field at
// path: each is blamed at its own element, path[i].
func (a *argList) list(path, name string, values ...string) {
	a.add("", name)
	for i, v := range values {
		a.add(fmt.Sprintf("%s[%d]", path, i), v)
	}
}

// Float formats v the way Python's float() reads back exactly: the shortest
// representation that round-trips ("0.0003", "1e-05", "8").
func Float(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Args returns the pretrain_gpt.py arguments the plan implies: flags and
// values as separate elements, in a fixed order (parallelism, model, MoE,
// precision, recomputation, optimizer, batch and schedule, data, checkpoints,
// logging), followed by launch.extra_args. The diagnostics are errors when the
// plan cannot be expressed to Megatron-Core (an order it cannot build, a value
// with a line break, an extra argument that contradicts a generated one).
// at places diagnostics; nil means diag.NoPos.
//
// A field added for issue 13 is emitted only when it differs from Megatron's
// own default, so the argument list says what the plan changes.
func Args(p *plan.Plan, at diag.Locator) ([]string, diag.List) {
	if at == nil {
		at = diag.NoPos
	}
	e := &emitter{s: &p.Spec, d: &p.Derived, at: at}
	e.parallelism()
	e.modelShape()
	e.moe()
	e.precision()
	e.recompute()
	e.optimizer()
	e.schedule()
	e.data()
	e.kernels()
	e.checkpoints()
	e.logging()
	e.extraArgs()
	return e.args, e.diags
}

// emitter builds the argument list section by section.
type emitter struct {
	argList
	s     *spec.Spec
	d     *spec.Derived
	at    diag.Locator
	diags diag.List
}

// boolFlag adds name when v is set.
func (a *argList) boolFlag(name string, v bool) {
	if v {
		a.flag(name)
	}
}

// choice adds name with value v unless v is Megatron's default def (or empty:
// a spec built in Go without the schema's defaults).
func (a *argList) choice(name, v, def string) {
	if v != "" && v != def {
		a.add("", name, v)
	}
}

// parallelism emits the parallel degrees, the pipeline split and the rank
// order.
func (e *emitter) parallelism() {
	a, s, d := &e.argList, e.s, e.d
	m, par := &s.Model, &s.Parallel
	a.int("--tensor-model-parallel-size", par.TP)
	a.int("--pipeline-model-parallel-size", par.PP)
	if par.Layout != nil {
		// The layout gives the virtual stages itself; Megatron accepts only
		// one of the two (validate_args).
		a.str("parallel.layout", "--pipeline-model-parallel-layout", *par.Layout)
	}
	if par.VPP > 1 {
		if par.Layout == nil {
			a.int("--num-virtual-stages-per-pipeline-rank", par.VPP)
		}
		if par.MicrobatchGroupSize != nil {
			a.int("--microbatch-group-size-per-virtual-pipeline-stage", *par.MicrobatchGroupSize)
		}
		if !par.OverlapP2P {
			a.flag("--no-overlap-p2p-communication")
		}
	}
	if par.FirstStageLayers != nil {
		a.int("--decoder-first-pipeline-num-layers", *par.FirstStageLayers)
	}
	if par.LastStageLayers != nil {
		a.int("--decoder-last-pipeline-num-layers", *par.LastStageLayers)
	}
	if par.AccountForEmbedding {
		a.flag("--account-for-embedding-in-pipeline-split")
	}
	if par.AccountForLoss {
		a.flag("--account-for-loss-in-pipeline-split")
	}
	a.int("--context-parallel-size", par.CP)
	// With cp = 1 a communication type other than Megatron's default and the
	// hierarchical sizes still go out: validate_args checks them whatever the
	// CP size (arguments.py at d98e8a64), as internal/check does.
	if par.CP > 1 || par.CPCommType != "" && par.CPCommType != "p2p" {
		a.add("", "--cp-comm-type", par.CPCommType)
	}
	if len(par.HierarchicalCP) > 0 {
		a.flag("--hierarchical-context-parallel-sizes")
		for _, n := range par.HierarchicalCP {
			a.add("", strconv.Itoa(n))
		}
	}
	// A dense model with an expert tensor-parallel size still builds the
	// expert grid (initialize_model_parallel), so a given etp goes out.
	if m.MoE != nil || par.EP > 1 || par.ETP != nil {
		a.int("--expert-model-parallel-size", par.EP)
		a.int("--expert-tensor-parallel-size", d.ETP)
	}
	if d.SP {
		a.flag("--sequence-parallel")
	}
	if par.Order == spec.OrderPPDP { // check admits only the two orders Megatron builds
		a.flag(spec.OrderPPDPFlag)
	}
	a.add("", "--distributed-backend", "nccl")
	if par.DistributedOptimizerInstances > 1 {
		a.int("--num-distributed-optimizer-instances", par.DistributedOptimizerInstances)
	}
	a.boolFlag("--tp-comm-overlap", spec.TPCommOverlapOn(s))
	if par.TPCommOverlapCfg != nil {
		a.str("parallel.tp_comm_overlap_cfg", "--tp-comm-overlap-cfg", *par.TPCommOverlapCfg)
	}
	a.boolFlag("--overlap-moe-expert-parallel-comm", par.OverlapMoEExpertParallelComm)
	a.boolFlag("--delay-wgrad-compute", par.DelayWgradCompute)
	a.boolFlag("--defer-embedding-wgrad-compute", par.DeferEmbeddingWgradCompute)
	if par.WgradDeferralLimit != 0 {
		a.int("--wgrad-deferral-limit", par.WgradDeferralLimit)
	}
}

// modelShape emits the transformer's shape, attention and embeddings.
func (e *emitter) modelShape() {
	a, s, d := &e.argList, e.s, e.d
	m, tr := &s.Model, &s.Train
	a.int("--num-layers", m.Layers)
	a.int("--hidden-size", m.Hidden)
	a.int("--ffn-hidden-size", d.FFNHidden)
	a.int("--num-attention-heads", m.Heads)
	// Query groups given with MLA go out too: validate_args refuses them
	// beside --multi-latent-attention (arguments.py:1974 at d98e8a64), as
	// internal/check does (mla-query-groups).
	if m.MLA == nil && d.QueryGroups != m.Heads || m.MLA != nil && m.QueryGroups != nil {
		a.flag("--group-query-attention")
		a.int("--num-query-groups", d.QueryGroups)
	}
	// Megatron derives kv_channels = hidden/heads itself and asserts heads
	// divide hidden when --kv-channels is absent (arguments.py:1331); a
	// head dimension parc would otherwise derive by truncation is not written.
	if m.KVChannels != nil || m.Heads > 0 && m.Hidden%m.Heads == 0 {
		a.int("--kv-channels", d.KVChannels)
	}
	a.int("--seq-length", tr.SeqLength)
	a.int("--max-position-embeddings", d.MaxPositions)
	a.add("", "--position-embedding-type", m.PositionEmbedding)
	if m.PositionEmbedding == "rope" || m.PositionEmbedding == "yarn" {
		a.int("--rotary-base", m.RotaryBase)
		a.float("--rotary-percent", m.RotaryPercent)
	}
	yarn := m.MLA != nil || m.PositionEmbedding == "yarn"
	switch f := m.RopeScalingFactor; {
	case m.RotaryScalingFactor != nil:
		// YaRN's factor, for MLA or position_embedding "yarn".
		a.float("--rotary-scaling-factor", *m.RotaryScalingFactor)
	case f != nil && yarn:
		// MLA uses YaRN RoPE (MLATransformerConfig.rope_type); its scaling
		// factor is rotary_scaling_factor.
		a.float("--rotary-scaling-factor", *f)
	case f != nil && m.PositionEmbedding == "rope":
		// Llama 3.1-style scaling (apply_rope_scaling in rope_utils).
		a.flag("--use-rope-scaling")
		a.float("--rope-scaling-factor", *f)
	}
	if m.RopeType != nil {
		a.add("", "--rope-type", *m.RopeType)
	}
	if m.Mscale != 0 && m.Mscale != 1 {
		a.float("--mscale", m.Mscale)
	}
	if m.MscaleAllDim != 0 {
		a.float("--mscale-all-dim", m.MscaleAllDim)
	}
	if m.YarnOriginalMaxPositionEmbeddings != nil {
		a.int("--yarn-original-max-position-embeddings", *m.YarnOriginalMaxPositionEmbeddings)
	}
	if m.YarnBetaFast != nil {
		a.float("--yarn-beta-fast", *m.YarnBetaFast)
	}
	if m.YarnBetaSlow != nil {
		a.float("--yarn-beta-slow", *m.YarnBetaSlow)
	}
	a.boolFlag("--apply-layernorm-1p", m.ApplyLayernorm1p)
	for _, f := range ActivationFlags {
		if m.Activation == f.Dest {
			a.flag(f.Flag)
		}
	}
	if m.GLULinearOffset != 0 {
		a.float("--glu-linear-offset", m.GLULinearOffset)
	}
	if m.ActivationFuncClampValue != nil {
		a.float("--activation-func-clamp-value", *m.ActivationFuncClampValue)
	}
	switch m.Normalization {
	case "rmsnorm":
		a.add("", "--normalization", "RMSNorm")
	default:
		a.add("", "--normalization", "LayerNorm")
	}
	a.float("--norm-epsilon", m.NormEpsilon)
	if !m.TieEmbeddings {
		a.flag("--untie-embeddings-and-output-weights")
	}
	if !m.Bias {
		a.flag("--disable-bias-linear")
	}
	if m.QKVBias {
		a.flag("--add-qkv-bias")
	}
	if m.QKLayernorm {
		a.flag("--qk-layernorm")
	}
	if len(m.WindowSize) == 2 {
		a.add("", "--window-size", fmt.Sprintf("%d,%d", m.WindowSize[0], m.WindowSize[1]))
		if m.WindowAttnSkipFreq != nil {
			a.int("--window-attn-skip-freq", *m.WindowAttnSkipFreq)
		}
	}
	if m.SoftmaxType != "" && m.SoftmaxType != "vanilla" {
		a.add("", "--softmax-type", m.SoftmaxType)
	}
	if mla := m.MLA; mla != nil {
		a.flag("--multi-latent-attention")
		if mla.QLoraRank != nil {
			a.int("--q-lora-rank", *mla.QLoraRank)
		}
		a.int("--kv-lora-rank", mla.KVLoraRank)
		a.int("--qk-head-dim", mla.QKHeadDim)
		a.int("--qk-pos-emb-head-dim", mla.QKPosEmbHeadDim)
		a.int("--v-head-dim", mla.VHeadDim)
	}
	if m.MTPLayers > 0 {
		a.int("--mtp-num-layers", m.MTPLayers)
	}
	a.float("--attention-dropout", tr.AttentionDropout)
	a.float("--hidden-dropout", tr.HiddenDropout)
	a.float("--init-method-std", tr.InitMethodStd)
	a.add("", "--transformer-impl", "transformer_engine")
}

// moe emits the mixture-of-experts layers and their router.
func (e *emitter) moe() {
	a, m, d := &e.argList, &e.s.Model, e.d
	if moe := m.MoE; moe != nil {
		a.int("--num-experts", moe.Experts)
		a.int("--moe-router-topk", moe.TopK)
		a.int("--moe-ffn-hidden-size", d.MoEFFNHidden)
		if moe.SharedFFNHidden > 0 {
			a.int("--moe-shared-expert-intermediate-size", moe.SharedFFNHidden)
		}
		a.add("", "--moe-layer-freq", MoELayerFreq(d.MoELayers, moe.LayerFreq, moe.DenseLayers))
		if moe.GroupedGEMM {
			a.flag("--moe-grouped-gemm")
		}
		a.add("", "--moe-token-dispatcher-type", moe.Dispatcher)
		a.add("", "--moe-router-load-balancing-type", moe.RouterLoadBalancing)
		switch moe.RouterLoadBalancing {
		case "aux_loss", "seq_aux_loss", "global_aux_loss":
			a.float("--moe-aux-loss-coeff", moe.AuxLossCoeff)
		}
		a.add("", "--moe-router-score-function", moe.ScoreFunction)
		if moe.RouterPreSoftmax {
			a.flag("--moe-router-pre-softmax")
		}
		if moe.ExpertBias {
			a.flag("--moe-router-enable-expert-bias")
		}
		if moe.CapacityFactor != nil {
			a.float("--moe-expert-capacity-factor", *moe.CapacityFactor)
		}
		a.boolFlag("--moe-pad-expert-input-to-capacity", moe.PadExpertInputToCapacity)
		if moe.RouterDtype != nil {
			a.add("", "--moe-router-dtype", *moe.RouterDtype)
		}
		if moe.RouterNumGroups != nil {
			a.int("--moe-router-num-groups", *moe.RouterNumGroups)
		}
		if moe.RouterGroupTopK != nil {
			a.int("--moe-router-group-topk", *moe.RouterGroupTopK)
		}
		if moe.RouterTopKScalingFactor != nil {
			a.float("--moe-router-topk-scaling-factor", *moe.RouterTopKScalingFactor)
		}
		if r := moe.RouterBiasUpdateRate; r != 0 && r != 1e-3 {
			a.float("--moe-router-bias-update-rate", r)
		}
		a.boolFlag("--moe-router-force-load-balancing", moe.RouterForceLoadBalancing)
		a.boolFlag("--moe-router-padding-for-quantization", moe.RouterPaddingForQuantization)
		if moe.Dispatcher == "flex" {
			// Always said: "flex" alone silently means DeepEP.
			a.add("", "--moe-flex-dispatcher-backend", moe.FlexBackend())
		} else {
			a.choice("--moe-flex-dispatcher-backend", moe.FlexDispatcherBackend, "deepep")
		}
		a.boolFlag("--moe-shared-expert-overlap", moe.SharedExpertOverlap)
		if moe.ExpertRankCapacityFactor != nil {
			a.float("--moe-expert-rank-capacity-factor", *moe.ExpertRankCapacityFactor)
		}
		a.boolFlag("--moe-paged-stash", moe.PagedStash)
		if f := moe.PagedStashBufferFactor(); f != spec.MegatronPagedStashBufferFactor {
			a.float("--moe-paged-stash-buffer-size-factor-cuda", f)
		}
	}
}

// precision emits the training dtype and the FP8 or FP4 recipe.
func (e *emitter) precision() {
	a, tr := &e.argList, &e.s.Train
	switch tr.Precision {
	case "bf16":
		a.flag("--bf16")
	case "fp16":
		a.flag("--fp16")
	case "fp8":
		// FP8 GEMMs inside a bf16 model (Megatron's FP8 examples), or an
		// fp16 or fp32 one (train.fp8_base).
		switch tr.FP8Base {
		case "fp16":
			a.flag("--fp16")
		case "fp32":
		default:
			a.flag("--bf16")
		}
		a.add("", "--fp8-format", tr.FP8Format)
		a.add("", "--fp8-recipe", tr.FP8Recipe)
	case "fp4":
		// NVFP4 GEMMs inside a bf16 model (TransformerConfig.fp4: e2m1,
		// the one format Megatron offers; fp4_recipe nvfp4, its default).
		a.flag("--bf16")
		a.add("", "--fp4-format", "e2m1")
		a.add("", "--fp4-recipe", tr.FP4Recipe)
	}
	// Megatron parses the delayed-scaling options whatever the precision.
	if tr.FP8AmaxHistoryLen > 1 {
		a.int("--fp8-amax-history-len", tr.FP8AmaxHistoryLen)
	}
	a.choice("--fp8-amax-compute-algo", tr.FP8AmaxComputeAlgo, "most_recent")
	if tr.FP8Margin != 0 {
		a.int("--fp8-margin", tr.FP8Margin)
	}
	a.boolFlag("--fp8-param-gather", tr.FP8ParamGather)
	a.boolFlag("--fp4-param-gather", tr.FP4ParamGather)
	a.boolFlag("--grad-reduce-in-bf16", tr.GradReduceInBF16)
}

// recompute emits activation recomputation, and CPU activation offloading
// (Megatron turns cpu_offloading on when the layer count is positive).
func (e *emitter) recompute() {
	a, tr := &e.argList, &e.s.Train
	if tr.CPUOffloadingNumLayers > 0 {
		a.int("--cpu-offloading-num-layers", tr.CPUOffloadingNumLayers)
	}
	// Fine-grained activation offloading: each option only when it differs
	// from Megatron's default (TransformerConfig at d98e8a64).
	a.boolFlag("--fine-grained-activation-offloading", tr.FineGrainedActivationOffloading)
	if len(tr.OffloadModules) > 0 {
		a.list("train.offload_modules", "--offload-modules", tr.OffloadModules...)
	}
	if n := tr.MinOffloadedTensorSize; n != 1<<20 {
		a.add("", "--min-offloaded-tensor-size", strconv.FormatInt(n, 10))
	}
	if f := tr.ActivationOffloadFraction; f != 1 {
		a.float("--activation-offload-fraction", f)
	}
	if n := tr.DeltaOffloadBytesAcrossPPRanks; n != 0 {
		a.add("", "--delta-offload-bytes-across-pp-ranks", strconv.FormatInt(n, 10))
	}
	if n := tr.FineGrainedOffloadingMaxInflight; n != nil {
		a.int("--fine-grained-offloading-max-inflight-offloads", *n)
	}
	a.boolFlag("--delay-offload-until-cuda-graph", tr.DelayOffloadUntilCUDAGraph)
	switch tr.Recompute {
	case "selective":
		a.add("", "--recompute-granularity", "selective")
		if tr.RecomputeModules != nil {
			a.list("train.recompute_modules", "--recompute-modules", tr.RecomputeModules...)
		}
	case "full":
		a.add("", "--recompute-granularity", "full")
		a.add("", "--recompute-method", tr.RecomputeMethod)
		n := 1
		if tr.RecomputeLayers != nil {
			n = *tr.RecomputeLayers
		}
		a.int("--recompute-num-layers", n)
	}
}

// optimizer emits the optimizer, its sharding and its communication
// overlap.
func (e *emitter) optimizer() {
	a, tr := &e.argList, &e.s.Train
	// Optimizer and its communication overlap. Megatron-FSDP (v1, the
	// default) runs on the distributed optimizer and switches it on itself;
	// passing it says so. optim_grads_params is also Megatron's default
	// sharding strategy, written out so the plan reads as what it is.
	a.choice("--optimizer", tr.Optimizer, "adam")
	a.choice("--muon-tp-mode", tr.MuonTPMode, "duplicated")
	if tr.EmergingOptimizer() && !tr.LayerWiseParamLayout {
		a.flag("--no-use-layer-wise-param-layout")
	}
	if tr.DistributedOptimizer || tr.FSDP {
		a.flag("--use-distributed-optimizer")
	}
	if tr.FSDP {
		a.flag("--use-megatron-fsdp")
		strategy := tr.DataParallelShardingStrategy
		if strategy == "" {
			strategy = "optim_grads_params"
		}
		a.add("", "--data-parallel-sharding-strategy", strategy)
		a.boolFlag("--fsdp-double-buffer", tr.FSDPDoubleBuffer)
		a.boolFlag("--fsdp-manual-registration", tr.FSDPManualRegistration)
		a.choice("--megatron-fsdp-main-params-dtype", tr.MegatronFSDPMainParamsDtype, "fp32")
		a.choice("--megatron-fsdp-main-grads-dtype", tr.MegatronFSDPMainGradsDtype, "auto")
		a.choice("--megatron-fsdp-grad-comm-dtype", tr.MegatronFSDPGradCommDtype, "auto")
	}
	a.boolFlag("--use-nccl-ub", tr.NCCLUB)
	if tr.PrecisionAwareOptim {
		a.flag("--use-precision-aware-optimizer")
	}
	a.choice("--main-grads-dtype", tr.MainGradsDtype, "fp32")
	a.choice("--main-params-dtype", tr.MainParamsDtype, "fp32")
	a.choice("--exp-avg-dtype", tr.ExpAvgDtype, "fp32")
	a.choice("--exp-avg-sq-dtype", tr.ExpAvgSqDtype, "fp32")
	a.boolFlag("--optimizer-cpu-offload", tr.OptimizerCPUOffload)
	// Megatron's default is 1.0; 0 without the offload is a spec built in Go
	// without the schema's defaults.
	if f := tr.OptimizerOffloadFraction; f != 1 && (f != 0 || tr.OptimizerCPUOffload) {
		a.float("--optimizer-offload-fraction", tr.OptimizerOffloadFraction)
	}
	a.boolFlag("--overlap-cpu-optimizer-d2h-h2d", tr.OverlapCPUOptimizerD2HH2D)
	if tr.OverlapGradReduce {
		a.flag("--overlap-grad-reduce")
	}
	if tr.OverlapParamGather {
		a.flag("--overlap-param-gather")
	}
	a.boolFlag("--overlap-param-gather-with-optimizer-step", tr.OverlapParamGatherWithOptimizerStep)
	if tr.DDPBucketSize != nil {
		a.add("", "--ddp-bucket-size", strconv.FormatInt(*tr.DDPBucketSize, 10))
	}
	if tr.DDPNumBuckets != nil {
		a.add("", "--ddp-num-buckets", strconv.FormatInt(*tr.DDPNumBuckets, 10))
	}
	a.float("--lr", tr.LR)
	a.float("--min-lr", tr.MinLR)
	a.add("", "--lr-decay-style", tr.LRDecayStyle)
	a.float("--weight-decay", tr.WeightDecay)
	a.float("--clip-grad", tr.ClipGrad)
	a.float("--adam-beta1", tr.AdamBeta1)
	a.float("--adam-beta2", tr.AdamBeta2)
	if tr.AdamEps != 0 && tr.AdamEps != 1e-8 {
		a.float("--adam-eps", tr.AdamEps)
	}
	if tr.WeightDecayIncrStyle != "" && tr.WeightDecayIncrStyle != "constant" {
		a.add("", "--weight-decay-incr-style", tr.WeightDecayIncrStyle)
	}
	if tr.StartWeightDecay != nil {
		a.float("--start-weight-decay", *tr.StartWeightDecay)
	}
	if tr.EndWeightDecay != nil {
		a.float("--end-weight-decay", *tr.EndWeightDecay)
	}
	if tr.DecoupledLR != nil {
		a.float("--decoupled-lr", *tr.DecoupledLR)
	}
	if tr.DecoupledMinLR != nil {
		a.float("--decoupled-min-lr", *tr.DecoupledMinLR)
	}
	a.int("--seed", tr.Seed)
}

// schedule emits the batch sizes, the training length and the LR schedule.
func (e *emitter) schedule() {
	a, tr := &e.argList, &e.s.Train
	// Batch sizes and training length. Iteration-based and sample-based
	// options cannot be mixed (validate_args, T1/T2).
	a.int("--micro-batch-size", tr.MicroBatch)
	if tr.StepBatchSizeSchedule != nil {
		// Megatron rejects --global-batch-size beside it (validate_args).
		a.str("train.step_batch_size_schedule", "--step-batch-size-schedule", *tr.StepBatchSizeSchedule)
	} else {
		a.int("--global-batch-size", tr.GlobalBatch)
	}
	a.boolFlag("--deterministic-mode", tr.DeterministicMode)
	if len(tr.RampupBatchSize) > 0 {
		a.flag("--rampup-batch-size")
		for _, n := range tr.RampupBatchSize {
			a.add("", strconv.Itoa(n))
		}
	}
	if tr.Iters != nil {
		a.int("--train-iters", *tr.Iters)
	}
	if tr.Samples != nil {
		a.int("--train-samples", *tr.Samples)
	}
	// Only what the spec sets: each warmup option excludes the others
	// (validate_args), so none is written at its default.
	if tr.LRWarmupIters != 0 {
		a.int("--lr-warmup-iters", tr.LRWarmupIters)
	}
	if tr.LRWarmupSamples != 0 {
		a.int("--lr-warmup-samples", tr.LRWarmupSamples)
	}
	if tr.LRWarmupFraction != nil {
		a.float("--lr-warmup-fraction", *tr.LRWarmupFraction)
	}
	if tr.LRWarmupInit != 0 {
		a.float("--lr-warmup-init", tr.LRWarmupInit)
	}
	if tr.LRDecayIters != nil {
		a.int("--lr-decay-iters", *tr.LRDecayIters)
	}
	if tr.LRDecaySamples != nil {
		a.int("--lr-decay-samples", *tr.LRDecaySamples)
	}
	if tr.LRWSDDecayIters != nil {
		a.int("--lr-wsd-decay-iters", *tr.LRWSDDecayIters)
	}
	if tr.LRWSDDecaySamples != nil {
		a.int("--lr-wsd-decay-samples", *tr.LRWSDDecaySamples)
	}
	a.choice("--lr-wsd-decay-style", tr.LRWSDDecayStyle, "exponential")
	if tr.ExitDurationInMins != nil {
		a.int("--exit-duration-in-mins", *tr.ExitDurationInMins)
	}
	if tr.MTPLossScalingFactor != 0.1 && e.s.Model.MTPLayers > 0 {
		a.float("--mtp-loss-scaling-factor", tr.MTPLossScalingFactor)
	}
	a.boolFlag("--calculate-per-token-loss", tr.CalculatePerTokenLoss)
	if !tr.CheckForNaNInLossAndGrad {
		a.flag("--no-check-for-nan-in-loss-and-grad")
	}
	a.boolFlag("--manual-gc", tr.ManualGC)
	if tr.ManualGCInterval != 0 {
		a.int("--manual-gc-interval", tr.ManualGCInterval)
	}
	if n := tr.DistributedTimeoutMinutes; n != 0 && n != 10 {
		a.int("--distributed-timeout-minutes", n)
	}
}

// data emits the data source and the tokenizer: exactly one data source (T6).
func (e *emitter) data() {
	a, s := &e.argList, e.s
	m := &s.Model
	data := &s.Data
	if len(data.Paths) > 0 {
		a.list("data.paths", "--data-path", data.Paths...)
		a.str("data.split", "--split", data.Split)
	} else {
		a.flag("--mock-data")
	}
	if data.CachePath != nil {
		a.str("data.cache_path", "--data-cache-path", *data.CachePath)
	}
	a.int("--num-workers", data.NumWorkers)
	if !data.CreateAttentionMaskInDataloader {
		a.flag("--no-create-attention-mask-in-dataloader")
	}
	if !data.MmapBinFiles {
		a.flag("--no-mmap-bin-files")
	}
	tok := &data.Tokenizer
	a.add("", "--tokenizer-type", tok.Type)
	if tok.Model != nil {
		a.str("data.tokenizer.model", "--tokenizer-model", *tok.Model)
	}
	if tok.VocabFile != nil {
		a.str("data.tokenizer.vocab_file", "--vocab-file", *tok.VocabFile)
	}
	if tok.MergeFile != nil {
		a.str("data.tokenizer.merge_file", "--merge-file", *tok.MergeFile)
	}
	if tok.TiktokenPattern != nil {
		a.add("", "--tiktoken-pattern", *tok.TiktokenPattern)
	}
	if n := tok.TiktokenNumSpecialTokens; n != 1000 {
		a.int("--tiktoken-num-special-tokens", n)
	}
	if tok.Type == "NullTokenizer" {
		a.int("--vocab-size", m.Vocab)
	}
	a.int("--make-vocab-size-divisible-by", m.MakeVocabDivisibleBy)
}

// ActivationFlags are Megatron's activation flags, each named by its
// argparse dest, which is also the model.activation value it gives (gelu,
// Megatron's default, has none), in the precedence
// core_transformer_config_from_args (argument_utils.py at d98e8a64) gives
// them: --squared-relu over --quick-geglu, and either of those with
// --swiglu is asserted against (rule S17).
var ActivationFlags = []struct{ Dest, Flag string }{
	{"squared_relu", "--squared-relu"}, {"quick_geglu", "--quick-geglu"}, {"swiglu", "--swiglu"},
}

// kernels emits the fused kernels, the attention backend and CUDA graphs.
func (e *emitter) kernels() {
	a, k := &e.argList, &e.s.Kernels
	a.choice("--attention-backend", k.AttentionBackend, "auto")
	a.choice("--transformer-impl", k.TransformerImpl, "transformer_engine")
	for _, f := range []struct {
		on   bool
		flag string
	}{
		{k.MaskedSoftmaxFusion, "--no-masked-softmax-fusion"},
		{k.GradientAccumulationFusion, "--no-gradient-accumulation-fusion"},
		{spec.BiasGeluFusionOn(e.s), "--no-bias-gelu-fusion"},
		{k.BiasSwigluFusion, "--no-bias-swiglu-fusion"},
		{spec.BiasDropoutFusionOn(e.s), "--no-bias-dropout-fusion"},
		{k.ApplyRopeFusion, "--no-rope-fusion"},
	} {
		if !f.on {
			a.flag(f.flag)
		}
	}
	a.boolFlag("--cross-entropy-loss-fusion", k.CrossEntropyLossFusion)
	a.choice("--cross-entropy-fusion-impl", k.CrossEntropyFusionImpl, "native")
	a.boolFlag("--moe-permute-fusion", k.MoEPermuteFusion)
	a.boolFlag("--moe-router-fusion", k.MoERouterFusion)
	a.boolFlag("--use-transformer-engine-op-fuser", k.UseTransformerEngineOpFuser)
	a.choice("--cuda-graph-impl", k.CUDAGraphImpl, "none")
	if len(k.CUDAGraphModules) > 0 {
		a.list("kernels.cuda_graph_modules", "--cuda-graph-modules", k.CUDAGraphModules...)
	}
	if len(k.CUDAGraphScope) > 0 {
		a.list("kernels.cuda_graph_scope", "--cuda-graph-scope", k.CUDAGraphScope...)
	}
	if n := k.CUDAGraphWarmupSteps; n != 3 {
		a.int("--cuda-graph-warmup-steps", n)
	}
}

// checkpoints emits saving and loading. With preemption handling, Megatron
// saves a checkpoint when it gets SIGTERM (--exit-signal-handler) and the
// requeued job resumes from it.
func (e *emitter) checkpoints() {
	a, s, tr := &e.argList, e.s, &e.s.Train
	preempt := s.Cluster.Slurm != nil && s.Cluster.Slurm.PreemptSignalSeconds != nil
	if tr.FSDP && s.Checkpoint == nil {
		// Megatron-FSDP asserts this format even when nothing is saved.
		a.add("", "--ckpt-format", "fsdp_dtensor")
	}
	if ck := s.Checkpoint; ck != nil {
		if ck.Save != nil {
			a.str("checkpoint.save", "--save", *ck.Save)
			a.int("--save-interval", ck.Interval)
		}
		switch {
		case ck.Load != nil:
			a.str("checkpoint.load", "--load", *ck.Load)
		case preempt && ck.Save != nil:
			a.str("checkpoint.save", "--load", *ck.Save)
		}
		a.add("", "--ckpt-format", ck.Format)
		if ck.AsyncSave {
			a.flag("--async-save")
			if ck.Format == "torch_dist" {
				// Without it validate_args switches async saving off.
				a.flag("--use-persistent-ckpt-worker")
			}
		}
	}
	if preempt {
		a.flag("--exit-signal-handler")
	}
}

// logging emits logging and evaluation.
func (e *emitter) logging() {
	a, lg := &e.argList, &e.s.Logging
	a.int("--log-interval", lg.Interval)
	if lg.EvalInterval != nil {
		a.int("--eval-interval", *lg.EvalInterval)
	}
	a.int("--eval-iters", lg.EvalIters)
	if lg.TensorboardDir != nil {
		a.str("logging.tensorboard_dir", "--tensorboard-dir", *lg.TensorboardDir)
	}
	if lg.WandbProject != nil {
		a.str("logging.wandb_project", "--wandb-project", *lg.WandbProject)
	}
	if lg.WandbExpName != nil {
		a.str("logging.wandb_exp_name", "--wandb-exp-name", *lg.WandbExpName)
	}
	if lg.LogThroughput {
		a.flag("--log-throughput")
	}
}

// extraArgs appends launch.extra_args after checking them against the
// generated arguments, and rejects values megatron.args cannot hold.
func (e *emitter) extraArgs() {
	a, s, at := &e.argList, e.s, e.at
	e.diags = append(e.diags, ExtraArgConflicts(a.args, s.Launch.ExtraArgs, isPretrainGPT(s.Launch.Program), at, s.Launch.ExtensionArgs...)...)
	a.add("launch.extra_args", s.Launch.ExtraArgs...)
	r := diag.NewReporter(at)

	// Nothing a spec says may become an option: a value from a spec field
	// (a path, a name) that starts with "-" would be read by Megatron's
	// argparse as an option — "--train-iters=9" in data.paths overriding the
	// generated --train-iters, "--no-save-optim" as checkpoint.save. Every
	// value added with str is covered, so a new field is too.
	flag := ""
	for i, w := range a.args {
		field := a.paths[i]
		if field == "" && strings.HasPrefix(w, "--") {
			flag = w
		}
		if field != "" && field != "launch.extra_args" && strings.HasPrefix(w, "-") {
			hint := fmt.Sprintf("to name a file or directory whose name starts with -, write %q", "./"+w)
			switch {
			case strings.HasPrefix(field, "logging.wandb_"):
				hint = "use a name that does not start with -"
			case field == "data.split":
				hint = `write the split as weights that do not start with -, e.g. "969,30,1"`
			case field == "train.step_batch_size_schedule":
				hint = `write the schedule as STEP:GBS pairs, e.g. "0:256 1000:512"`
			}
			r.Errorf(field, "option-like-value", hint,
				"%s = %q starts with \"-\": Megatron's argument parser would read it as an option, not as the value of %s", field, w, flag)
		}
	}
	for i, w := range a.args {
		if strings.ContainsAny(w, "\n\r\x00") {
			field := a.paths[i]
			if field == "" {
				field = "launch.extra_args"
			}
			r.Errorf(field, "megatron-arg-line-break", "remove the line break",
				"the value %q cannot be passed to Megatron: megatron.args holds one argument per line", w)
		}
	}
	e.diags = append(e.diags, r.List...)
}

// isPretrainGPT reports whether the workers run Megatron's own GPT entry
// point, whose options are exactly those of Megatron's parser.
func isPretrainGPT(program string) bool { return path.Base(program) == "pretrain_gpt.py" }

// MoELayerFreq renders --moe-layer-freq: the integer k when the pattern is
// "every k-th layer" (no leading dense layers), else a Python list expression
// such as "([0]*3+[1]*58)" that Megatron evaluates (moe_freq_type), built run
// by run from the per-layer pattern.
func MoELayerFreq(pattern []bool, freq, dense int) string {
	if dense == 0 && freq >= 1 {
		return strconv.Itoa(freq)
	}
	var runs []string
	for i := 0; i < len(pattern); {
		j := i
		for j < len(pattern) && pattern[j] == pattern[i] {
			j++
		}
		v := "0"
		if pattern[i] {
			v = "1"
		}
		runs = append(runs, fmt.Sprintf("[%s]*%d", v, j-i))
		i = j
	}
	return "(" + strings.Join(runs, "+") + ")"
}
