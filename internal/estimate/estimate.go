package estimate

import (
	"math"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// Estimate is the cost of one training step of a plan. Bytes are bytes (not
// GiB) and per GPU unless a name says otherwise. It marshals to the explain
// JSON contract (design.md) and adds fields.
type Estimate struct {
	Params       Params              `json:"params"`
	Memory       Memory              `json:"memory"`
	Pipeline     Pipeline            `json:"pipeline"`
	Comms        map[string]AxisComm `json:"comms"`
	FLOPsPerStep float64             `json:"flops_per_step"` // Megatron's formula, whole global batch
	StepTimeS    float64             `json:"step_time_s"`
	TokensPerS   float64             `json:"tokens_per_s"`
	MFU          float64             `json:"mfu"` // model FLOPs / (step time · world · dense bf16 peak)
	Compute      Compute             `json:"compute"`
	Assumptions  Assumptions         `json:"assumptions"`
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
	PerGPUPeakBytes int64   `json:"per_gpu_peak_bytes"`
	Weights         int64   `json:"weights"`
	Gradients       int64   `json:"gradients"`
	Optimizer       int64   `json:"optimizer"`
	Activations     int64   `json:"activations"`
	PeakStage       int     `json:"peak_stage"`
	GPUBytes        int64   `json:"gpu_bytes"`
	FractionOfGPU   float64 `json:"fraction_of_gpu"`
	// Megatron-LM's own theoretical memory for the same plan (first stage).
	MegatronTheoreticalBytes      int64  `json:"megatron_theoretical_bytes"`
	MegatronWeightsOptimizerBytes int64  `json:"megatron_weights_optimizer_bytes"`
	MegatronActivationsBytes      int64  `json:"megatron_activations_bytes"`
	MegatronFormula               string `json:"megatron_formula"`
	// Model says how the first stage was estimated: "megatron" where
	// Megatron-LM's theoretical_memory_usage.py applies (a dense model, no
	// context parallelism, no full recompute, bf16/fp16, and either sequence
	// parallelism with selective recompute or no sequence parallelism) —
	// parc then reports exactly Megatron's figure — and "parc" elsewhere,
	// where parc's own activation model covers what Megatron's does not.
	Model string `json:"model"`
	// RefinedFirstStageBytes is parc's own estimate of the first stage, with
	// the model's real attention and MLP widths, biases and the real
	// schedule, also where Model is "megatron".
	RefinedFirstStageBytes int64         `json:"refined_first_stage_bytes"`
	Stages                 []StageMemory `json:"stages"`
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
	Total                int64 `json:"total"`
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
	Pattern       string  `json:"pattern"`
	BytesPerStep  int64   `json:"bytes_per_step"`
	BytesPerLayer int64   `json:"bytes_per_layer,omitempty"` // per layer and microbatch (tp, cp, ep, etp)
	Link          string  `json:"link"`
	BandwidthGBps float64 `json:"bandwidth_gbps"`
	TimeS         float64 `json:"time_s"`
	ExposedS      float64 `json:"exposed_s"`
	Stage         int     `json:"stage"`
}

// Compute is the arithmetic side of the step.
type Compute struct {
	PeakTFLOPs      float64 `json:"peak_tflops"` // per GPU at the training precision
	Efficiency      float64 `json:"efficiency"`
	FLOPsPerGPU     float64 `json:"flops_per_gpu_per_step"` // slowest stage, recompute included
	TimeS           float64 `json:"time_s"`                 // busy compute per step, slowest stage
	MicrobatchTimeS float64 `json:"microbatch_time_s"`      // slowest stage, exposed per-microbatch comms included
	SlowestStage    int     `json:"slowest_stage"`
}

// Assumptions states what the numbers rest on.
type Assumptions struct {
	ComputeEfficiency float64       `json:"compute_efficiency"`
	FusedAttention    bool          `json:"fused_attention"`
	Sharding          Sharding      `json:"sharding"`
	StateBytes        BytesPerParam `json:"state_bytes_per_param"`
	ActivationBytes   float64       `json:"activation_bytes"`
	GradReduceBytes   float64       `json:"grad_reduce_bytes"`
	Notes             []string      `json:"notes"`
}

// Options tune the estimate.
type Options struct {
	// ComputeEfficiency is the fraction of the GPU's peak the model's
	// kernels reach (GEMMs dominate).
	ComputeEfficiency float64
	// BubbleWarn is the bubble fraction above which pipeline-bubble warns.
	BubbleWarn float64
	// NearLimit is the fraction of GPU memory above which memory-near-limit warns.
	NearLimit float64
	// FusedAttention: attention runs in a fused kernel (flash / cuDNN), so the
	// s² attention scores are not stored.
	FusedAttention bool
	// Sharding overrides what train.distributed_optimizer implies.
	Sharding Sharding
	// RefinedMemoryOnly uses parc's own activation model for every stage,
	// also where Megatron's theoretical memory applies (see Memory.Model).
	RefinedMemoryOnly bool
}

// DefaultOptions are parc's stated assumptions.
func DefaultOptions() Options {
	return Options{ComputeEfficiency: 0.6, BubbleWarn: 0.25, NearLimit: 0.9, FusedAttention: true}
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
	if o.ComputeEfficiency <= 0 || o.ComputeEfficiency > 1 {
		o.ComputeEfficiency = DefaultOptions().ComputeEfficiency
	}
	if o.Sharding == "" {
		o.Sharding = ShardNone
		switch {
		case s.Train.FSDP:
			o.Sharding = ShardFull
		case s.Train.DistributedOptimizer:
			o.Sharding = ShardOptimizer
		}
	}
	var def map[string]string // computed only when links lacks a family
	link := func(fam string) string {
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

	c := newCostModel(s, d, o)
	e := &Estimate{Comms: map[string]AxisComm{}}
	c.params(e)
	c.memory(e)
	c.pipeline(e)
	c.time(e, link)
	e.Assumptions = c.assumptions(o)
	return e, c.diagnose(e, at, o)
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
	megatron                 MegatronMemory
	o                        Options
	stageParams              []ParamSplit
	inFlight                 [][]int
	efficiency               float64
}

func newCostModel(s *spec.Spec, d spec.Derived, o Options) *costModel {
	p := s.Parallel
	c := &costModel{
		s: s, d: d, o: o, sh: newModelShape(s, d),
		tp: max(p.TP, 1), pp: max(p.PP, 1), vpp: max(d.VPP, p.VPP, 1), cp: max(p.CP, 1), ep: max(p.EP, 1),
		etp: max(d.ETP, 1), dp: max(d.DP, 1), edp: max(d.EDP, 1), m: max(d.Microbatches, 1),
		g: max(d.MicrobatchGroup, 1), world: max(d.World, 1), sharding: o.Sharding,
		state: AdamBytes(s.Train.Precision), efficiency: o.ComputeEfficiency,
	}
	if c.pp == 1 {
		c.vpp = 1
	}
	if d.MicrobatchGroup < 1 {
		c.g = c.pp
	}
	c.am = newActivationModel(s, d, c.sh, o.FusedAttention)
	c.stages = stageLayout(s, d, c.pp, c.vpp)
	c.megatron = MegatronTheoreticalMemory(s, d)
	for r := range c.pp {
		c.stageParams = append(c.stageParams, c.sh.stageParams(c.stages, r))
		c.inFlight = append(c.inFlight, InFlight(c.pp, c.vpp, c.m, c.g, r))
	}
	return c
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
	e.Memory.GPUBytes = int64(c.s.Cluster.GPU.MemoryGiB * (1 << 30))
	peak := -1.0
	for r := range c.pp {
		dense, expert := c.stageParams[r].denseExpertPerGPU(int64(c.tp), int64(c.etp), int64(c.ep))
		st := StateBytes(float64(dense), c.state, c.sharding, denseShards)
		ex := StateBytes(float64(expert), c.state, c.sharding, expertShards)
		w, g, opt := st.Weights+ex.Weights, st.Gradients+ex.Gradients, st.Optimizer+ex.Optimizer
		if c.sharding == ShardFull {
			// The layer being computed and the one prefetched are gathered in full.
			w += 2 * c.largestLayerPerGPU() * c.state.Weights
		}
		act := c.am.stageActivations(c.sh, c.stages, r, c.inFlight[r])
		total := w + g + opt + act.Total()
		layers := 0
		for _, ch := range c.stages[r] {
			layers += ch.Count
		}
		sm := StageMemory{
			Stage: r, Layers: layers, Params: dense + expert, InFlight: c.inFlight[r],
			Weights: round(w), Gradients: round(g), Optimizer: round(opt), Activations: round(act.Total()),
			ActivationsLayers: round(act.Layers), ActivationsEmbedding: round(act.Embedding),
			ActivationsLogits: round(act.Logits), ActivationsRecompute: round(act.Recompute),
			Total: round(total),
		}
		e.Memory.Stages = append(e.Memory.Stages, sm)
	}
	e.Memory.Model = "parc"
	if len(e.Memory.Stages) > 0 {
		e.Memory.RefinedFirstStageBytes = e.Memory.Stages[0].Total
		if !c.o.RefinedMemoryOnly && c.megatronApplies() {
			e.Memory.Model = "megatron"
			e.Memory.Stages[0] = c.megatronFirstStage(e.Memory.Stages[0])
		}
	}
	for r, sm := range e.Memory.Stages {
		if total := float64(sm.Total); total > peak {
			peak = total
			e.Memory.PeakStage = r
			e.Memory.PerGPUPeakBytes = sm.Total
			e.Memory.Weights, e.Memory.Gradients, e.Memory.Optimizer, e.Memory.Activations =
				sm.Weights, sm.Gradients, sm.Optimizer, sm.Activations
		}
	}
	if e.Memory.GPUBytes > 0 {
		e.Memory.FractionOfGPU = float64(e.Memory.PerGPUPeakBytes) / float64(e.Memory.GPUBytes)
	}
	e.Memory.MegatronTheoreticalBytes = round(c.megatron.Total)
	e.Memory.MegatronWeightsOptimizerBytes = round(c.megatron.WeightsAndOptimizer)
	e.Memory.MegatronActivationsBytes = round(c.megatron.Activations)
	e.Memory.MegatronFormula = c.megatron.Formula
}

// largestLayerPerGPU is the largest decoder layer's share of one GPU (tp/ep
// sharded but not data-parallel sharded).
func (c *costModel) largestLayerPerGPU() float64 {
	var best int64
	for _, moe := range []bool{false, true} {
		if moe && c.sh.experts == 0 {
			continue
		}
		best = max(best, c.sh.layerParams(moe).perGPU(int64(c.tp), int64(c.etp), int64(c.ep)))
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
		ComputeEfficiency: o.ComputeEfficiency, FusedAttention: o.FusedAttention || c.cp > 1,
		Sharding: c.sharding, StateBytes: c.state, ActivationBytes: c.am.ab, GradReduceBytes: 4,
		Notes: []string{
			"weights, fp32 main gradients and Adam state (fp32 master weights and two moments) as Megatron keeps them",
			"activations after Korthikanti et al. 2022 with the model's real shapes; the most loaded pipeline stage counts",
			"step time = (m + (p-1)/v) x slowest microbatch (compute + exposed tp/cp/ep/pp comms) + exposed data-parallel comms",
			"tp, ep and etp collectives are exposed; cp ring exchange overlaps attention; grad reduce and param gather overlap only when train.overlap_grad_reduce / overlap_param_gather",
			"peak FLOP/s: bf16 and fp16 at cluster.gpu.bf16_tflops, fp8 at twice that, fp32 (TF32) at half; MFU against the bf16 peak",
		},
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
// covers the plan: it models dense layers only, ignores context parallelism,
// full recompute and fp8/fp32 state, and its "without-sp" branch badly
// overestimates sequence parallelism without selective recompute.
func (c *costModel) megatronApplies() bool {
	t := c.s.Train
	return c.sh.experts == 0 && c.cp == 1 && t.Recompute != "full" &&
		(t.Precision == "bf16" || t.Precision == "fp16") && c.sharding != ShardFull &&
		(!c.d.SP || t.Recompute == "selective")
}

// megatronFirstStage replaces the first stage's figures by Megatron's own:
// weights and optimizer split in parc's proportions (the same bytes per
// parameter), activations as Megatron computes them.
func (c *costModel) megatronFirstStage(st StageMemory) StageMemory {
	wo := c.megatron.WeightsAndOptimizer
	state := float64(st.Weights + st.Gradients + st.Optimizer)
	if state > 0 {
		st.Weights = round(wo * float64(st.Weights) / state)
		st.Gradients = round(wo * float64(st.Gradients) / state)
		st.Optimizer = round(wo) - st.Weights - st.Gradients
	}
	st.Activations = round(c.megatron.Activations)
	st.ActivationsLayers, st.ActivationsEmbedding, st.ActivationsLogits, st.ActivationsRecompute = st.Activations, 0, 0, 0
	st.Total = round(c.megatron.Total)
	return st
}
