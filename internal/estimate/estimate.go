package estimate

import (
	"fmt"
	"math"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// Estimate is the cost of one training step of a plan. Bytes are bytes (not
// GiB) and per GPU unless a name says otherwise. It marshals to the explain
// JSON contract (docs/architecture.md, "Contracts") and adds fields.
type Estimate struct {
	Params       Params              `json:"params"`
	Memory       Memory              `json:"memory"`
	Pipeline     Pipeline            `json:"pipeline"`
	Comms        map[string]AxisComm `json:"comms"`
	FLOPsPerStep float64             `json:"flops_per_step"` // Megatron's formula, whole global batch
	// ModelFLOPsPerStep is the count model TFLOP/s and MFU divide
	// (ModelFLOPs: Megatron-Bridge's tables' count), FLOPsPerStep but for
	// sliding-window layers.
	ModelFLOPsPerStep float64 `json:"model_flops_per_step"`
	StepTimeS         float64 `json:"step_time_s"`
	TokensPerS        float64 `json:"tokens_per_s"`
	// MFU is model FLOPs (ModelFLOPsPerStep) / (step time · world · dense peak of the precision
	// the GEMMs run in: fp8 for fp8 training, bf16 for bf16/fp16, TF32 for fp32).
	MFU float64 `json:"mfu"`
	// ModelTFLOPsPerGPU is the model FLOPs per step (ModelFLOPsPerStep:
	// Megatron's formula with sliding-window layers at their window) / step
	// time / GPUs, in TFLOP/s, as Megatron-Bridge's performance tables define it.
	ModelTFLOPsPerGPU float64     `json:"model_tflops_per_gpu"`
	Compute           Compute     `json:"compute"`
	Assumptions       Assumptions `json:"assumptions"`
	// FasterSettings are the settings that, each on its own, would shorten
	// this plan's step (FasterSettings); filled where a user reads the plan
	// (vet, explain, compile), not for the solver's candidates.
	FasterSettings []FasterSetting `json:"faster_settings,omitempty"`
	// FasterTogether is FasterSettings applied together (FasterTogether),
	// nil unless two or more of them add up.
	FasterTogether *FasterCombination `json:"faster_together,omitempty"`
	// Run is the whole run's steps, tokens, time and GPU-hours
	// (TrainingRunOf); filled where a user reads the plan, nil when the
	// spec bounds no run.
	Run *TrainingRun `json:"run,omitempty"`
	// Accuracy is how far the model was from published measurements of
	// this kind of model on this GPU (AccuracyOf); filled where a user
	// reads the plan, like FasterSettings. Nil: no such measurements.
	Accuracy *Accuracy `json:"accuracy,omitempty"`
}

// Params counts parameters.
type Params struct {
	Total     int64 `json:"total"`
	PerGPUMax int64 `json:"per_gpu_max"`
	// Active is what one token passes through: routed experts count top-k of E.
	Active int64 `json:"active"`
	// Embedding is the word and position embeddings plus an untied output layer.
	Embedding int64 `json:"embedding"`
	// Experts is the routed experts' parameters (0 for dense models).
	Experts int64 `json:"experts"`
	// Megatron is the total theoretical_memory_usage.py prints (it ignores
	// biases and position embeddings).
	Megatron int64 `json:"megatron_total"`
}

// Memory is peak memory per GPU on the most loaded pipeline stage.
type Memory struct {
	PerGPUPeakBytes int64 `json:"per_gpu_peak_bytes"`
	Weights         int64 `json:"weights"`
	Gradients       int64 `json:"gradients"`
	Optimizer       int64 `json:"optimizer"`
	Activations     int64 `json:"activations"`
	// CommBuffers: the peak stage's StageMemory.CommBuffers.
	CommBuffers   int64   `json:"comm_buffers,omitempty"`
	PeakStage     int     `json:"peak_stage"`
	GPUBytes      int64   `json:"gpu_bytes"`
	FractionOfGPU float64 `json:"fraction_of_gpu"`
	// Megatron-LM's own theoretical memory for the same plan (first stage).
	MegatronTheoreticalBytes      int64  `json:"megatron_theoretical_bytes"`
	MegatronWeightsOptimizerBytes int64  `json:"megatron_weights_optimizer_bytes"`
	MegatronActivationsBytes      int64  `json:"megatron_activations_bytes"`
	MegatronFormula               string `json:"megatron_formula"`
	// Model names the model the stages come from: always "parc" (Megatron's
	// formula is reported beside it, never mixed in).
	Model string `json:"model"`
	// RefinedFirstStageBytes is parc's estimate of the first stage (the
	// stage Megatron's formula describes), for comparison with it.
	RefinedFirstStageBytes int64 `json:"refined_first_stage_bytes"`
	// MegatronApplies: Megatron's formula covers the plan (see megatronApplies),
	// so its figure is a meaningful reference.
	MegatronApplies bool          `json:"megatron_applies"`
	Stages          []StageMemory `json:"stages"`
}

// StageMemory is one pipeline rank's memory per GPU.
type StageMemory struct {
	Stage  int   `json:"stage"`
	Layers int   `json:"layers"`
	Params int64 `json:"params"`
	// InFlight is the number of microbatches (per virtual stage) whose
	// activations are alive at the peak.
	InFlight             []int `json:"in_flight"`
	Weights              int64 `json:"weights"`
	Gradients            int64 `json:"gradients"`
	Optimizer            int64 `json:"optimizer"`
	Activations          int64 `json:"activations"`
	ActivationsLayers    int64 `json:"activations_layers"`
	ActivationsEmbedding int64 `json:"activations_embedding"`
	ActivationsLogits    int64 `json:"activations_logits"`
	ActivationsRecompute int64 `json:"activations_recompute"`
	// ActivationsOffloaded is the activations CPU offloading
	// (train.cpu_offloading_num_layers) holds in host memory per microbatch,
	// or fine-grained offloading (train.fine_grained_activation_offloading)
	// at the peak; Activations is what stays on the GPU.
	ActivationsOffloaded int64 `json:"activations_offloaded,omitempty"`
	// ActivationsDeferredWgrad is the part of ActivationsLogits that
	// parallel.defer_embedding_wgrad_compute keeps until the pipeline flush:
	// the deferred microbatches' output-layer inputs and logits gradients.
	ActivationsDeferredWgrad int64 `json:"activations_deferred_wgrad,omitempty"`
	// CommBuffers is the flex token dispatcher's DeepEP or HybridEP buffer
	// (commbuf.go), allocated outside PyTorch's allocator; part of Total.
	CommBuffers int64 `json:"comm_buffers,omitempty"`
	Total       int64 `json:"total"`
}

// Pipeline is the schedule and its bubble.
type Pipeline struct {
	Schedule        string  `json:"schedule"`
	Stages          int     `json:"stages"`
	VirtualStages   int     `json:"virtual_stages"`
	Microbatches    int     `json:"microbatches"`
	MicrobatchGroup int     `json:"microbatch_group_size"`
	BubbleFraction  float64 `json:"bubble_fraction"`
	BubbleTimeS     float64 `json:"bubble_time_s"`
	// LayersPerStage[r][v] is the number of decoder layers of rank r, virtual stage v.
	LayersPerStage [][]int `json:"layers_per_stage"`
}

// AxisComm is what one parallel axis moves per training step on the GPU of
// the stage that moves the most.
type AxisComm struct {
	Group         string  `json:"group"` // the process-group family
	Size          int     `json:"size"`
	Collective    string  `json:"collective"` // one of the Collective* names
	BytesPerStep  int64   `json:"bytes_per_step"`
	BytesPerLayer int64   `json:"bytes_per_layer,omitempty"` // per layer and microbatch (tp, cp, ep, etp)
	Link          string  `json:"link"`
	BandwidthGBps float64 `json:"bandwidth_gbps"`
	TimeS         float64 `json:"time_s"`
	ExposedS      float64 `json:"exposed_s"`
	Stage         int     `json:"stage"`
	// Buckets is how many collectives each of the data-parallel reduction
	// and gather takes on Stage (dp, edp: Megatron's DDP buckets, or
	// Megatron-FSDP's units), BucketParams the DDP bucket size in
	// parameters, or the buffer's parameters where they fit in one bucket
	// (always without overlap_grad_reduce, where Megatron's size is
	// unbounded); 0 with Megatron-FSDP.
	Buckets      float64 `json:"buckets,omitempty"`
	BucketParams int64   `json:"bucket_params,omitempty"`
}

// Compute is the arithmetic side of the step.
type Compute struct {
	PeakTFLOPs float64 `json:"peak_tflops"` // dense, per GPU, at the precision the GEMMs run in
	// Efficiency is the achieved fraction of that peak over the compute time
	// (FLOPsPerGPU / TimeS / peak), the outcome of the per-operation model.
	Efficiency      float64 `json:"efficiency"`
	FLOPsPerGPU     float64 `json:"flops_per_gpu_per_step"` // slowest stage, recompute included
	TimeS           float64 `json:"time_s"`                 // busy compute per step, slowest stage
	MicrobatchTimeS float64 `json:"microbatch_time_s"`      // slowest stage, exposed per-microbatch comms included
	// ForwardMicrobatchS is the slowest stage's forward pass of one
	// microbatch (compute, as the backward waits for it), what an
	// evaluation step repeats.
	ForwardMicrobatchS float64 `json:"forward_microbatch_s"`
	SlowestStage       int     `json:"slowest_stage"`
	// TimeS by kind of work (slowest stage, per step).
	GEMMS           float64 `json:"gemm_s"`
	AttentionS      float64 `json:"attention_s"`
	MemoryBoundS    float64 `json:"memory_bound_s"`
	KernelOverheadS float64 `json:"kernel_overhead_s"`
	// HostBoundS is the time the GPU waits for the host to issue kernels
	// (eager work whose host time exceeds its GPU time; graphs remove it).
	HostBoundS float64 `json:"host_bound_s"`
	// OptimizerS is the optimizer step (memory-bound), once per step.
	OptimizerS float64 `json:"optimizer_s"`
	// SlowestNodeWaitS is what each step waits for its slowest node
	// (Calibration.StepJitterS): 0 on one node.
	SlowestNodeWaitS float64 `json:"slowest_node_wait_s,omitempty"`
	// OptimizerHostS is the part of OptimizerS the host takes with
	// train.optimizer_cpu_offload: Adam on the offloaded elements and,
	// without overlap, their copies.
	OptimizerHostS float64 `json:"optimizer_host_s,omitempty"`
	// OffloadExposedS is the time per step the GPU waits for activation
	// offloading's copies to or from host memory (train.cpu_offloading_num_layers,
	// or fine-grained offloading's reloads).
	OffloadExposedS float64 `json:"offload_exposed_s,omitempty"`
	// DeferredWgradS is the output layer's weight-gradient GEMMs that
	// parallel.defer_embedding_wgrad_compute moves to the pipeline flush, per
	// step; DeferredWgradExposedS the part of it the other stages' cooldown
	// does not hide (in the step time).
	DeferredWgradS        float64 `json:"deferred_wgrad_s,omitempty"`
	DeferredWgradExposedS float64 `json:"deferred_wgrad_exposed_s,omitempty"`
	// IdealTimeS is a lower bound of TimeS proportional to the stage's
	// FLOPs: every GEMM and attention kernel at the calibrated efficiency of
	// a large one, nothing else. For a solver's bounds: it scales exactly
	// with tokens and divides exactly by tp·cp.
	IdealTimeS float64 `json:"ideal_time_s"`
	// MicrobatchBoundS is a lower bound of MicrobatchTimeS proportional to
	// the microbatch's tokens: the ideal compute, the memory-bound work, and
	// the bandwidth part of the tp, ep, etp and pp traffic compute cannot hide.
	MicrobatchBoundS float64 `json:"microbatch_bound_s"`
}

// Assumptions states what the numbers rest on.
type Assumptions struct {
	Calibration     Calibration   `json:"calibration"`
	FusedAttention  bool          `json:"fused_attention"`
	Sharding        Sharding      `json:"sharding"`
	StateBytes      BytesPerParam `json:"state_bytes_per_param"`
	ActivationBytes float64       `json:"activation_bytes"`
	GradReduceBytes float64       `json:"grad_reduce_bytes"`
	Notes           []string      `json:"notes"`
}

// Options tune the estimate.
type Options struct {
	// Calibration is the time model's free constants (zero: the fitted ones).
	Calibration Calibration
	// BubbleWarn is the bubble fraction above which pipeline-bubble warns.
	BubbleWarn float64
	// NearLimit is the fraction of GPU memory above which memory-near-limit warns.
	NearLimit float64
	// FusedAttention: attention runs in a fused kernel (flash / cuDNN), so the
	// s² attention scores are not stored.
	FusedAttention bool
	// Sharding overrides what train.distributed_optimizer implies.
	Sharding Sharding
	// VerifyHints makes the memory and bubble hints suggest only values
	// that, set on the spec, pass every check (and, for memory, fit): each
	// candidate is estimated again. The solver, which never shows these
	// hints, leaves it off.
	VerifyHints bool
}

// DefaultOptions are parc's stated assumptions.
func DefaultOptions() Options {
	return Options{Calibration: DefaultCalibration(), BubbleWarn: 0.25, NearLimit: 0.9, FusedAttention: true}
}

// Run estimates s with the default options. links maps a process-group
// family ("tp", "cp", "ep", "etp", "dp", "dp-cp", "edp", "pp", "embd") to
// LinkNVLink or LinkNetwork; missing families (or a nil map) fall back to
// DefaultLinks.
func Run(s *spec.Spec, d spec.Derived, links map[string]string, at diag.Locator) (*Estimate, diag.List) {
	return RunWith(s, d, links, at, DefaultOptions())
}

// RunWith estimates s with the given options.
func RunWith(s *spec.Spec, d spec.Derived, links map[string]string, at diag.Locator, o Options) (*Estimate, diag.List) {
	if at == nil {
		at = diag.NoPos
	}
	given := o.Sharding != ""
	o = resolveOptions(s, o)
	link := linkOf(s, d, links)

	c := newCostModel(s, d, o)
	c.shardingGiven = given
	e := &Estimate{Comms: map[string]AxisComm{}}
	c.params(e)
	c.memory(e)
	c.pipeline(e)
	c.time(e, link)
	e.Assumptions = c.assumptions(o)
	return e, c.diagnose(e, at, o)
}

// linkOf is the link of each process-group family: links's, else
// DefaultLinks's (computed only when links lacks a family), else the network.
func linkOf(s *spec.Spec, d spec.Derived, links map[string]string) func(string) string {
	var def map[string]string
	return func(fam string) string {
		if l, ok := links[fam]; ok && (l == LinkNVLink || l == LinkNetwork) {
			return l
		}
		if def == nil {
			def = DefaultLinks(s, d)
		}
		if l, ok := def[fam]; ok {
			return l
		}
		return LinkNetwork
	}
}

// resolveOptions fills the calibration and the sharding the spec implies.
func resolveOptions(s *spec.Spec, o Options) Options {
	if o.Calibration == (Calibration{}) {
		o.Calibration = DefaultCalibration()
	}
	if o.Sharding == "" {
		o.Sharding = ShardNone
		switch {
		case s.Train.FSDP:
			// Megatron-FSDP's --data-parallel-sharding-strategy.
			switch s.Train.DataParallelShardingStrategy {
			case "optim_grads":
				o.Sharding = ShardGrads
			case "optim":
				o.Sharding = ShardOptimizer
			case "no_shard":
				o.Sharding = ShardNone
			default:
				o.Sharding = ShardFull
			}
		case s.Train.DistributedOptimizer:
			o.Sharding = ShardOptimizer
		}
	}
	return o
}

// costModel holds the resolved degrees and shapes.
type costModel struct {
	s                        *spec.Spec
	d                        spec.Derived
	sh                       modelShape
	am                       activationModel
	stages                   [][]spec.LayerRange
	tp, pp, vpp, cp, ep, etp int
	dp, edp, m, g, world     int
	sharding                 Sharding
	state                    BytesPerParam
	o                        Options
	stageParams              []ParamSplit
	stageTensors             []tensorCount // parameter tensors of every rank's dense and expert buffers
	inFlight                 [][]int
	cal                      Calibration
	cm                       computeModel
	ls                       layerShape
	set                      settings
	dense, moe               layerTime // timed once, on first use
	mtpDense, mtpMoE         layerTime // the MTP layers' (bf16 under NVFP4), with dense and moe
	timed                    bool
	computeS                 []float64       // busy compute per step of every rank
	shardingGiven            bool            // Options.Sharding was set by the caller, not derived from the spec
	baseline                 map[string]bool // the spec's own errors (remedy.go)
}

func newCostModel(s *spec.Spec, d spec.Derived, o Options) *costModel {
	c := new(costModel)
	c.init(s, d, o)
	return c
}

// init sets c up for s (a search's parts keep c on the stack: search.go).
func (c *costModel) init(s *spec.Spec, d spec.Derived, o Options) {
	p := s.Parallel
	*c = costModel{
		s: s, d: d, o: o, sh: newModelShape(s, d),
		tp: max(p.TP, 1), pp: max(p.PP, 1), vpp: max(d.VPP, p.VPP, 1), cp: max(p.CP, 1), ep: max(p.EP, 1),
		etp: max(d.ETP, 1), dp: max(d.DP, 1), edp: max(d.EDP, 1), m: max(d.Microbatches, 1),
		g: max(d.MicrobatchGroup, 1), world: max(d.World, 1), sharding: o.Sharding,
		cal: o.Calibration, set: readSettings(s),
	}
	c.state = c.set.stateBytes(s.Train.Precision)
	if c.pp == 1 {
		c.vpp = 1
	}
	if d.MicrobatchGroup < 1 {
		c.g = c.pp
	}
	c.am = newActivationModel(s, d, c.sh, o.FusedAttention, c.set)
	c.cm = computeModel{r: newGPURates(s.Cluster.GPU), cal: c.cal, fp8: s.Train.QuantizedGEMMs(), fp4: s.Train.Precision == "fp4", fp32: s.Train.Precision == "fp32", ab: c.am.ab, graphs: c.set.graphs,
		routerFusion: s.Kernels.MoERouterFusion, sharedExpertOverlap: s.Model.MoE != nil && s.Model.MoE.SharedExpertOverlap, unfused: !fusedAttention(s, o.FusedAttention), attnDropout: s.Train.AttentionDropout > 0,
		fusedGroupedMLP: fusedGroupedMLP(s, max(d.ETP, 1)), fp8Padding: fp8ExpertPadding(s),
		globalPermute: s.Model.MoE != nil && s.Model.MoE.Dispatcher == "alltoall" && s.Model.MoE.Experts > max(s.Parallel.EP, 1)}
	if s.Kernels.GradientAccumulationFusion {
		c.cm.mainGradAccum = c.state.Gradients
	}
	c.ls = c.newLayerShape()
	c.stages = stageLayout(s, d, c.pp, c.vpp)
	c.cm.r.tensor = tensorShare(s.Cluster.GPU, c.cal.TensorWPerTFLOP)
	c.stageParams, c.inFlight = make([]ParamSplit, 0, c.pp), make([][]int, c.pp) // inFlight: memory's
	c.stageTensors = make([]tensorCount, 0, c.pp)
	for r := range c.pp {
		c.stageParams = append(c.stageParams, c.sh.stageParams(c.stages, r))
		c.stageTensors = append(c.stageTensors, c.sh.stageTensors(c.stages, r, c.sh.experts/int64(max(c.ep, 1))))
	}
}

// newLayerShape is the decoder layer's per-GPU shape the compute model times.
func (c *costModel) newLayerShape() layerShape {
	tr := c.s.Train
	sh := c.sh
	ls := layerShape{
		T: c.am.tokens, Tsp: c.am.tokens / c.am.rep, b: float64(tr.MicroBatch), s: float64(tr.SeqLength),
		cp: float64(c.cp), tp: float64(c.tp), h: float64(sh.h), f: float64(sh.f), fe: float64(sh.fe),
		fs: float64(sh.fs), gated: float64(sh.gated), heads: float64(sh.a), dqk: float64(sh.d), dv: float64(sh.d),
		q: float64(sh.q), kv: float64(sh.kv), experts: float64(sh.experts), topk: float64(sh.topk),
		ep: float64(c.ep), etp: float64(c.etp), dropout: tr.HiddenDropout > 0, mla: sh.mla,
		recompute: tr.Recompute, recomputeModule: c.set.recomputeModules,
		rope: ropeEmbeddings(c.s.Model.PositionEmbedding), ropeFused: c.s.Kernels.ApplyRopeFusion && c.s.Model.RopeFusionApplies(),
	}
	if ml := sh.mla; ml != nil {
		ls.dqk, ls.dv = float64(ml.QKHeadDim+ml.QKPosEmbHeadDim), float64(ml.VHeadDim)
	}
	if m := &c.s.Model; len(m.WindowSize) == 2 && m.Layers > 0 {
		ls.windowed = float64(m.WindowedLayers()) / float64(m.Layers)
		ls.window = [2]float64{float64(m.WindowSize[0]), float64(m.WindowSize[1])}
	}
	return ls
}

func (c *costModel) params(e *Estimate) {
	total := c.sh.totalParams()
	e.Params.Total = total.Total()
	e.Params.Experts = total.Experts
	if c.sh.experts > 0 {
		e.Params.Active = e.Params.Total - total.Experts + c.sh.routedPerExpert()*c.sh.topk*c.sh.moeCount()
	} else {
		e.Params.Active = e.Params.Total
	}
	e.Params.Embedding = c.sh.wordEmbeddings() + c.sh.positionEmbeddings()
	if !c.sh.tied {
		e.Params.Embedding += c.sh.wordEmbeddings()
	}
	for _, p := range c.stageParams {
		e.Params.PerGPUMax = max(e.Params.PerGPUMax, p.perGPU(int64(c.tp), int64(c.etp), int64(c.ep)))
	}
	e.Params.Megatron = c.megatronTotalParams()
}

// megatronTotalParams is num_total_parameters of theoretical_memory_usage.py.
func (c *costModel) megatronTotalParams() int64 {
	sh := c.sh
	var attn int64
	if sh.mla != nil {
		attn = sh.attentionParams().TPSharded
	} else {
		attn = 2 * sh.h * sh.d * (sh.a + sh.g)
	}
	norms := 2 * sh.h * sh.norm
	// 2·h·f·γ with γ = 3/2 for SwiGLU: h·f·(gated+1), gated being 2 or 1.
	mlp := func(f int64) int64 { return sh.h * f * (sh.gated + 1) }
	dense := attn + mlp(sh.f) + norms
	moe := attn + norms
	if sh.experts > 0 {
		moe += mlp(sh.fs) + mlp(sh.fe)*sh.experts + sh.h*sh.experts
		if sh.routerBias {
			moe += sh.experts
		}
	}
	nm := sh.moeCount()
	total := dense*(sh.layers-nm) + moe*nm + sh.norm*sh.h
	if sh.isMoE(int(sh.layers) - 1) {
		total += moe * sh.mtp
	} else {
		total += dense * sh.mtp
	}
	emb := sh.wordEmbeddings()
	if !sh.tied {
		emb *= 2
	}
	return total + emb
}

// dataParallelShards is the size of the group that shards dense (and expert)
// state: Megatron's distributed optimizer uses the dp-cp group (the expert
// data-parallel group for experts), split by distributed_optimizer_instances.
func (c *costModel) dataParallelShards() (dense, expert int) {
	inst := max(c.s.Parallel.DistributedOptimizerInstances, 1)
	return max(c.dp*c.cp/inst, 1), max(c.edp/inst, 1)
}

func (c *costModel) memory(e *Estimate) {
	denseShards, expertShards := c.dataParallelShards()
	e.Memory.GPUBytes = c.s.Cluster.GPU.Bytes()
	peak := -1.0
	e.Memory.Stages = make([]StageMemory, 0, c.pp)
	for r := range c.pp {
		dense, expert := c.stageParams[r].denseExpertPerGPU(int64(c.tp), int64(c.etp), int64(c.ep))
		st := StateBytes(float64(dense), c.state, c.sharding, denseShards)
		ex := StateBytes(float64(expert), c.state, c.sharding, expertShards)
		w, g, opt := st.Weights+ex.Weights, st.Gradients+ex.Gradients, st.Optimizer+ex.Optimizer
		opt += c.embeddingStateExtra(r, denseShards) + c.soapStateBytes(r)
		if c.sharding == ShardFull {
			// The layer being computed and the one prefetched are gathered in full.
			w += 2 * c.largestLayerPerGPU() * c.state.Weights
		}
		if c.sharding == ShardFull || c.sharding == ShardGrads {
			// Gradients are reduce-scattered layer by layer: the layer whose
			// gradients are being computed and the one being reduced hold
			// them in full. Megatron-FSDP allocates two unit-sized gradient
			// buffers (param_and_grad_buffer.py, ParamAndGradBuffer: the
			// "fsdp_grads" FixedPoolAllocator of UB_BUFFER_NUM = 2 with
			// fsdp_double_buffer; the "at least two FSDP units" of
			// docs/user-guide/features/megatron_fsdp.md otherwise).
			g += 2 * c.largestLayerPerGPU() * c.state.Gradients
		}
		if c.quantizedParams() {
			// fp8_param_gather keeps the linear layers' weights in fp8 only;
			// embeddings and the output layer stay 16-bit (one more byte).
			w += c.embeddingParamsPerGPU(r) / c.weightShards(denseShards)
		}
		w += c.quantizedWeightCopies(r, dense+expert)
		if c.pp > 1 && c.vpp > 1 {
			// The chunks' microbatches differ in size: the peak is where
			// the schedule holds the most bytes, not always where it
			// holds the most microbatches (pipeline.go, peakInFlight).
			c.inFlight[r] = peakInFlight(c.pp, c.vpp, c.m, c.g, r, c.am.chunkWeights(c.sh, c.stages, r))
		} else {
			c.inFlight[r] = InFlight(c.pp, c.vpp, c.m, c.g, r)
		}
		act := c.am.stageActivations(c.sh, c.stages, r, c.inFlight[r])
		saved, offloaded := c.offloadedBytes(r) // offload.go
		act.Layers -= saved
		offloaded += act.Offloaded      // fine-grained offloading
		buffers := c.commBufferBytes(r) // commbuf.go
		total := w + g + opt + act.Total() + buffers
		layers := 0
		for _, ch := range c.stages[r] {
			layers += ch.Count
		}
		sm := StageMemory{
			Stage: r, Layers: layers, Params: dense + expert, InFlight: c.inFlight[r],
			Weights: round(w), Gradients: round(g), Optimizer: round(opt), Activations: round(act.Total()),
			ActivationsLayers: round(act.Layers), ActivationsEmbedding: round(act.Embedding),
			ActivationsLogits: round(act.Logits), ActivationsRecompute: round(act.Recompute),
			ActivationsOffloaded: round(offloaded), ActivationsDeferredWgrad: round(act.DeferredWgrad),
			CommBuffers: round(buffers), Total: round(total),
		}
		e.Memory.Stages = append(e.Memory.Stages, sm)
	}
	// One model decides fit: parc's, on every stage. Megatron's own formula
	// is a reference line beside it (MegatronTheoreticalBytes).
	e.Memory.Model = "parc"
	e.Memory.MegatronApplies = c.megatronApplies()
	if len(e.Memory.Stages) > 0 {
		e.Memory.RefinedFirstStageBytes = e.Memory.Stages[0].Total
	}
	for r, sm := range e.Memory.Stages {
		if total := float64(sm.Total); total > peak {
			peak = total
			e.Memory.PeakStage = r
			e.Memory.PerGPUPeakBytes = sm.Total
			e.Memory.Weights, e.Memory.Gradients, e.Memory.Optimizer, e.Memory.Activations =
				sm.Weights, sm.Gradients, sm.Optimizer, sm.Activations
			e.Memory.CommBuffers = sm.CommBuffers
		}
	}
	if e.Memory.GPUBytes > 0 {
		e.Memory.FractionOfGPU = float64(e.Memory.PerGPUPeakBytes) / float64(e.Memory.GPUBytes)
	}
	// Megatron's formula here, not in init: StepTime does not read it.
	mt := MegatronTheoreticalMemory(c.s, c.d)
	e.Memory.MegatronTheoreticalBytes = round(mt.Total)
	e.Memory.MegatronWeightsOptimizerBytes = round(mt.WeightsAndOptimizer)
	e.Memory.MegatronActivationsBytes = round(mt.Activations)
	e.Memory.MegatronFormula = mt.Formula
}

// largestLayerPerGPU is the largest decoder layer's share of one GPU (tp/ep
// sharded but not data-parallel sharded).
func (c *costModel) largestLayerPerGPU() float64 {
	var best int64
	for _, moe := range []bool{false, true} {
		if moe && c.sh.experts == 0 {
			continue
		}
		best = max(best, c.sh.layerOf(moe).perGPU(int64(c.tp), int64(c.etp), int64(c.ep)))
	}
	return float64(best)
}

func (c *costModel) pipeline(e *Estimate) {
	e.Pipeline = Pipeline{
		Schedule: ScheduleNone, Stages: c.pp, VirtualStages: c.vpp, Microbatches: c.m,
		MicrobatchGroup: c.g, BubbleFraction: BubbleFraction(c.pp, c.vpp, c.m),
	}
	switch {
	case c.pp > 1 && c.vpp > 1:
		e.Pipeline.Schedule = ScheduleInterleaved
	case c.pp > 1:
		e.Pipeline.Schedule = Schedule1F1B
	}
	for _, chunks := range c.stages {
		row := make([]int, len(chunks))
		for v, ch := range chunks {
			row[v] = ch.Count
		}
		e.Pipeline.LayersPerStage = append(e.Pipeline.LayersPerStage, row)
	}
}

func (c *costModel) assumptions(o Options) Assumptions {
	a := Assumptions{
		Calibration: c.cal, FusedAttention: !c.cm.unfused, // what the model timed and stored (fusedAttention: the spec's backend, or the option)
		Sharding: c.sharding, StateBytes: c.state, ActivationBytes: c.am.ab, GradReduceBytes: 4,
		Notes: []string{
			"weights, main gradients and Adam state (master weights and two moments) as Megatron keeps them, at the widths the spec sets",
			"activations after Korthikanti et al. 2022 with the model's real shapes; the most loaded pipeline stage counts",
			"compute per operation: GEMMs by per-GPU shape (tile and wave quantization, roofline), flash attention, memory-bound work at HBM bandwidth, a fixed cost per kernel",
			"step time = m x the slowest stage's microbatch (compute + exposed tp/cp/ep/pp comms, the collectives inside any wait for the host) + each other stage's microbatch / v (pipeline fill and drain) + exposed data-parallel comms + optimizer step + the wait for the slowest node (0 on one node)",
			"collectives: latency per ring step + bytes at NCCL's measured bus bandwidth of the link; expert all-to-all split between NVLink and network by where the peers are",
			fmt.Sprintf("tensor-parallel collectives, the expert all-to-all and the data-parallel reductions and gathers (every microbatch's where gradients are sharded) that overlap compute keep %.0f%% of their time exposed, for the SMs their kernels take from the compute beside them, or more where that compute is shorter; the context-parallel ring and the pipeline's transfers only what the compute does not cover", 100*OverlapResidual),
		},
	}
	if c.s.Model.MoE != nil {
		a.Notes = append(a.Notes, "MoE routing timed balanced: every expert gets its share of the routed tokens, as in benchmark runs that force it; with natural routing the busiest expert rank sets the pace, which the step time does not include")
	}
	if c.ls.rope && !c.ls.ropeFused && c.s.Kernels.ApplyRopeFusion {
		a.Notes = append(a.Notes, "rotary embeddings timed unfused although kernels.apply_rope_fusion is set: YaRN's concentration factor (from model.rotary_scaling_factor, mscale and mscale_all_dim) is not 1, which Transformer Engine's fused RoPE cannot apply, so Megatron falls back to its unfused implementation")
	}
	if f := c.set.optOffload; f > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("optimizer_cpu_offload: the first %.0f%% of each rank's optimizer shard keeps its fp32 main weights and Adam moments in host memory (the optimizer column is what stays on the GPU), and the host runs Adam on it at %.2f ns per element and GPU (fitted on Megatron-Bridge's DGX H100 measurement; another host's CPUs run it at another speed)",
			100*f, hostAdamS*1e9))
	}
	if c.cm.fp32 {
		a.Notes = append(a.Notes, fmt.Sprintf("fp32: Transformer Engine's linear layers on the TF32 tensor cores (%.0f TFLOP/s); core attention unfused, as Transformer Engine's flash and fused attention take bf16 or fp16 only; PyTorch's own matmuls (that attention's batched GEMMs, the output layer) on the CUDA cores (%.0f TFLOP/s), PyTorch keeping TF32 off for them",
			c.cm.r.fp32/1e12, c.cm.r.fp32Core/1e12))
	}
	return a
}

// round converts a byte or parameter count to int64, saturating: an absurd
// spec must read as "too large", never wrap around to a negative number.
func round(x float64) int64 {
	switch {
	case math.IsNaN(x):
		return 0
	case x >= math.MaxInt64:
		return math.MaxInt64
	case x <= math.MinInt64:
		return math.MinInt64
	}
	return int64(math.Round(x))
}

// megatronApplies reports whether Megatron-LM's theoretical memory formula
// covers the plan: its weight term counts routed experts (sharded by ep and
// etp), but its activation term counts every layer as a dense one
// (args.ffn_hidden_size, no routed tokens: compute_activation_memory at
// d98e8a64), so MoE plans are left out; it also ignores context
// parallelism, full recompute and fp8/fp32 state, and its "without-sp"
// branch badly overestimates sequence parallelism without selective
// recompute.
func (c *costModel) megatronApplies() bool {
	t := c.s.Train
	return c.sh.experts == 0 && c.cp == 1 && t.Recompute != "full" &&
		(t.Precision == "bf16" || t.Precision == "fp16") && c.sharding != ShardFull &&
		(!c.d.SP || t.Recompute == "selective")
}

// quantizedParams reports whether the linear layers' weights are kept in fp8
// (fp8_param_gather) or NVFP4 (fp4_param_gather).
func (c *costModel) quantizedParams() bool { return c.set.paramWidth > 0 }

// quantizedWeightCopies is the bytes of the quantized copies of rank r's linear
// weights (params: its parameters per GPU) that Transformer Engine keeps
// beyond the weights' own state bytes, one byte per linear parameter each
// (the embeddings and output layer stay 16-bit; scaling factors, a byte per
// 32 elements with MXFP8, are left out; none with fully sharded weights,
// which Megatron-FSDP gathers a layer at a time):
//   - 16-bit weights: the rowwise fp8 copy. Megatron passes
//     is_first_microbatch to its TE layers (schedules.py
//     set_is_first_microbatch; TELinear.forward at d98e8a64 passes None only
//     with disable_parameter_transpose_cache, which Megatron-LM has no flag
//     for), so TE quantizes each weight in the step's first microbatch,
//     caches it in the module's _fp8_workspaces for the other microbatches
//     and keeps it between steps (module/linear.py cache_name "weight" at
//     d0067d0d). Megatron-LM's functional tests measure it: the fp8 MoE
//     proxy gpt3_mcore_te_tp2_pp2_ep4_etp1_mtp_resume_torch_dist_fp8 keeps
//     0.64 GiB more allocated between steps than its bf16 twin, where two
//     bytes of its 0.36 B linear parameters per GPU are 0.67 GiB (H100).
//   - the columnwise copy, where the backward needs one of its own
//     (columnwiseWeightCopy), for 16-bit weights (the cache holds both usages)
//     and for weights kept in fp8 (fp8_param_gather: TE makes primary fp8
//     weights with both usages, module/base.py at d0067d0d,
//     quantizer.set_usage(rowwise=True, columnwise=torch.is_grad_enabled());
//     a Hopper transpose made in the forward is dropped only when the
//     optimizer step invalidates it, TransformerEngine PR #1596, so at the
//     backward's peak every fp8 weight of the stage has it).
//
// With precision fp4 the copies are NVFP4 (nvfp4Bytes a parameter), and the
// columnwise one always exists: NVFP4 GEMMs take only the TN layout, so the
// data gradient reads a transposed copy (Transformer Engine nvfp4.rst).
func (c *costModel) quantizedWeightCopies(r int, params int64) float64 {
	if !c.s.Train.QuantizedGEMMs() || c.sharding == ShardFull {
		return 0
	}
	width := quantizedWidth(c.s.Train.Precision)
	copies := 0.0
	if !c.quantizedParams() {
		if c.s.Kernels.DisableParameterTransposeCache {
			return 0
		}
		copies++
	}
	if c.columnwiseWeightCopy() {
		copies++
	}
	return width * copies * math.Max(0, float64(params)-c.embeddingParamsPerGPU(r))
}

// columnwiseWeightCopy reports that an fp8 weight's columnwise usage, which the
// backward's data-gradient GEMM reads (TE docs, features/low_precision_
// training/performance_considerations, "Handling transposes"), is a tensor
// of its own: before Blackwell an fp8 GEMM reads both operands row by row,
// so it is a physical transpose; from Blackwell on per-tensor scaling reads
// the same bytes columnwise ("Blackwell supports columnwise access natively,
// so no transpose is needed"), but MXFP8's and blockwise scaling's
// columnwise quantization runs its blocks the other way ("rowwise and
// columnwise MXFP8 tensors are numerically different - one cannot derive one
// from the other": mxfp8.rst).
func (c *costModel) columnwiseWeightCopy() bool {
	if c.s.Train.Precision == "fp4" {
		return true
	}
	rc := c.s.Train.FP8Recipe
	return c.s.Cluster.GPU.ComputeCapability < 10 || rc == "mxfp8" || rc == "blockwise"
}

// embeddingParamsPerGPU is the word embeddings and output layer rank r holds
// per GPU (tensor-parallel shards).
func (c *costModel) embeddingParamsPerGPU(r int) float64 {
	var n int64
	if r == 0 {
		n += c.sh.wordEmbeddings() + c.sh.positionEmbeddings()*int64(c.tp)
	}
	if r == c.pp-1 && (!c.sh.tied || c.pp > 1) {
		n += c.sh.wordEmbeddings()
	}
	if r == c.pp-1 && r > 0 && c.sh.mtp > 0 && !c.sh.tied {
		n += c.sh.wordEmbeddings() // the MTP stage's own embedding (params.go stageParams)
	}
	return float64(n) / float64(c.tp)
}

// embeddingStateExtra is the optimizer state of rank r's embedding and
// output layer beyond what StateBytes counts for them (their share of
// c.state.Optimizer): with Muon or Lion they are stepped by Adam, which
// keeps a second fp32 moment; on the layer-wise optimizer's legacy path (no
// parameter layout) every parameter is stepped whole on one data-parallel
// rank, and the rank that steps the embedding holds all of its state
// (layer_wise_optimizer.py at d98e8a64), not its share.
func (c *costModel) embeddingStateExtra(r, shards int) float64 {
	t := &c.s.Train
	legacy := t.LayerWiseOptimizer() && !t.LayerWiseParamLayout && c.sharding == ShardOptimizer
	if !c.set.adamEmbedding && !legacy {
		return 0
	}
	emb, perParam := c.embeddingParamsPerGPU(r), c.state.Optimizer
	if c.set.adamEmbedding {
		perParam += 4 // Adam's second moment
	}
	held := StateBytes(emb, BytesPerParam{Optimizer: perParam}, c.sharding, shards).Optimizer
	if legacy {
		held = emb * perParam
	}
	return held - StateBytes(emb, BytesPerParam{Optimizer: c.state.Optimizer}, c.sharding, shards).Optimizer
}

// weightShards is how many ways the weights are split over data parallelism.
func (c *costModel) weightShards(dense int) float64 {
	if c.sharding == ShardFull {
		return float64(dense)
	}
	return 1
}
