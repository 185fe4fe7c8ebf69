package estimate

import (
	"math"

	"parc.dev/parc/internal/spec"
)

// This file holds Megatron-LM's own estimates, term by term as
// megatron/training/theoretical_memory_usage.py and
// megatron/training/training.py::num_floating_point_operations compute them
// (NVIDIA/Megatron-LM d98e8a64ddf34856e74b24714e3bedb2f5a39553). Every
// quantity is a float64, as the Python divisions make them floats; the order of
// the operations follows the source so the numbers agree to the last bits.

// Formulas Megatron picks for the activation memory.
const (
	// MegatronFormulaSPSelective is compute_activation_memory (Korthikanti et
	// al. 2022, Table 2, sequence parallel + selective recompute).
	MegatronFormulaSPSelective = "sp-selective"
	// MegatronFormulaWithoutSP is compute_activation_memory_without_sp,
	// used in every other case.
	MegatronFormulaWithoutSP = "without-sp"
)

// MegatronMemory is what Megatron's report_theoretical_memory prints for the
// most loaded rank (the first pipeline stage), in bytes (Megatron prints MiB).
type MegatronMemory struct {
	WeightsAndOptimizer float64 `json:"weights_optimizer_bytes"`
	Activations         float64 `json:"activations_bytes"`
	Total               float64 `json:"total_bytes"`
	Formula             string  `json:"formula"`
}

// megatronArgs are the Megatron arguments the two estimates read, taken from
// the spec the way the megatron target emits them.
type megatronArgs struct {
	hidden, heads, queryGroups, kvChannels float64
	layers                                 int
	ffn, moeFFN, sharedFFN, paddedVocab    float64
	experts                                float64 // 0 = no MoE (args.num_experts is None)
	topk                                   float64
	moePattern                             []bool
	mtpLayers                              int
	swiglu, rmsnorm, untied, addBiasLinear bool
	// gated is a gated MLP (swiglu or quick_geglu: spec.Model.GatedMLP).
	// The FLOP count takes it, as Megatron-Bridge's does (flop_utils.py:
	// ffn_expansion_factor 3 with gated_linear_unit); Megatron-LM's
	// training.py and theoretical_memory_usage.py read args.swiglu alone,
	// so the weight formula keeps swiglu.
	gated                                 bool
	mla                                   *spec.MLA
	tp, pp, cp, ep, etp, world, dp        float64
	vpp                                   int // 1 = None
	distributedOptimizer                  bool
	seq, micro, globalBatch, microbatches float64
	sequenceParallel, selectiveRecompute  bool
	hasMoE                                bool
}

func newMegatronArgs(s *spec.Spec, d spec.Derived) megatronArgs {
	m, p, t := s.Model, s.Parallel, s.Train
	a := megatronArgs{
		hidden:               float64(m.Hidden),
		heads:                float64(m.Heads),
		queryGroups:          float64(d.QueryGroups),
		kvChannels:           float64(d.KVChannels),
		layers:               m.Layers,
		ffn:                  float64(d.FFNHidden),
		paddedVocab:          float64(d.PaddedVocab),
		mtpLayers:            m.MTPLayers,
		swiglu:               m.Activation == "swiglu",
		gated:                m.GatedMLP(),
		rmsnorm:              m.Normalization == "rmsnorm",
		untied:               !m.TieEmbeddings,
		addBiasLinear:        m.Bias,
		mla:                  m.MLA,
		tp:                   float64(p.TP),
		pp:                   float64(p.PP),
		cp:                   float64(p.CP),
		ep:                   float64(p.EP),
		etp:                  float64(d.ETP),
		world:                float64(d.World),
		vpp:                  d.VPP,
		distributedOptimizer: t.DistributedOptimizer && !t.EmergingOptimizer(), // validate_args: the layer-wise one instead
		seq:                  float64(t.SeqLength),
		micro:                float64(t.MicroBatch),
		globalBatch:          float64(t.GlobalBatch),
		microbatches:         float64(d.Microbatches),
		sequenceParallel:     d.SP,
		selectiveRecompute:   t.Recompute == "selective",
	}
	// args.data_parallel_size = world // (tp·pp·cp).
	a.dp = math.Floor(a.world / (a.tp * a.pp * a.cp))
	if m.MoE != nil {
		a.hasMoE = true
		a.experts = float64(m.MoE.Experts)
		a.topk = float64(m.MoE.TopK)
		a.moeFFN = float64(d.MoEFFNHidden)
		a.sharedFFN = float64(m.MoE.SharedFFNHidden)
		a.moePattern = d.MoELayers
		if len(a.moePattern) != m.Layers {
			a.moePattern = spec.MoELayerPattern(m.Layers, m.MoE.LayerFreq, m.MoE.DenseLayers)
		}
	}
	return a
}

func (a megatronArgs) moeLayerCount() int {
	n := 0
	for _, moe := range a.moePattern {
		if moe {
			n++
		}
	}
	return n
}

func (a megatronArgs) lastLayerIsMoE() float64 {
	if a.hasMoE && len(a.moePattern) > 0 && a.moePattern[len(a.moePattern)-1] {
		return 1
	}
	return 0
}

// MegatronTheoreticalMemory is report_theoretical_memory's estimate for s.
func MegatronTheoreticalMemory(s *spec.Spec, d spec.Derived) MegatronMemory {
	a := newMegatronArgs(s, d)
	w := a.weightAndOptimizerMemory()
	var act float64
	formula := MegatronFormulaWithoutSP
	if a.sequenceParallel && a.selectiveRecompute {
		formula = MegatronFormulaSPSelective
		act = a.activationMemory()
	} else {
		act = a.activationMemoryWithoutSP()
	}
	return MegatronMemory{WeightsAndOptimizer: w, Activations: act, Total: w + act, Formula: formula}
}

// weightAndOptimizerMemory is compute_weight_and_optimizer_memory.
func (a megatronArgs) weightAndOptimizerMemory() float64 {
	h := a.hidden
	queryProjectionToHidden := a.kvChannels * a.heads / h
	numExperts := 1.0
	if a.hasMoE {
		numExperts = a.experts
	}
	gated := 1.0
	if a.swiglu {
		gated = 3.0 / 2
	}
	var numDense, numMoE float64
	if a.hasMoE {
		numMoE = float64(a.moeLayerCount())
		numDense = float64(a.layers) - numMoE
	} else {
		numDense = float64(a.layers)
	}
	moeFFN := 0.0
	if a.hasMoE {
		moeFFN = a.moeFFN
	}
	mtpMoE := a.lastLayerIsMoE() * float64(a.mtpLayers)
	mtpDense := (1 - a.lastLayerIsMoE()) * float64(a.mtpLayers)
	normSize := 2.0
	if a.rmsnorm {
		normSize = 1
	}
	var selfAttn float64
	if a.mla != nil {
		ml := a.mla
		var qTerm float64
		if ml.QLoraRank == nil {
			qTerm = h * a.heads * float64(ml.QKHeadDim+ml.QKPosEmbHeadDim)
		} else {
			qTerm = float64(*ml.QLoraRank) * (h + a.heads*float64(ml.QKHeadDim+ml.QKPosEmbHeadDim) + normSize)
		}
		selfAttn = qTerm +
			float64(ml.KVLoraRank)*(h+a.heads*float64(ml.QKHeadDim+ml.VHeadDim)+normSize) +
			h*float64(ml.QKPosEmbHeadDim) +
			(a.heads*float64(ml.VHeadDim))*h
	} else {
		selfAttn = 2 * h * h * ((1 + (a.queryGroups / a.heads)) * queryProjectionToHidden)
	}
	embeddingSize := h * a.paddedVocab
	finalLayernorm := normSize * h

	attention := selfAttn
	denseMLP := 2 * h * a.ffn * gated
	sharedExpert := 2 * h * a.sharedFFN * gated
	routedExpert := 2 * h * moeFFN * numExperts * gated // no latent MoE in parc specs
	layernorm := 2 * h * normSize
	router := 0.0
	if a.hasMoE {
		router = h * numExperts
		if a.addBiasLinear {
			router += numExperts
		}
	}
	tpShardedBlock := (attention+denseMLP)*numDense + (attention+sharedExpert)*numMoE
	replicatedBlock := layernorm*numDense + (layernorm+router)*numMoE + finalLayernorm
	expertBlock := routedExpert * numMoE
	tpShardedMTP := (attention+denseMLP)*mtpDense + (attention+sharedExpert)*mtpMoE
	replicatedMTP := layernorm*mtpDense + (layernorm+router)*mtpMoE
	expertMTP := routedExpert * mtpMoE

	tpSharded := ((tpShardedBlock / a.pp) + tpShardedMTP + embeddingSize) / a.tp
	replicated := (replicatedBlock / a.pp) + replicatedMTP
	expertSharded := ((expertBlock / a.pp) + expertMTP) / (a.etp * a.ep)
	if a.untied && a.pp == 1 {
		tpSharded += embeddingSize / a.tp
	}
	edp := math.Floor(a.world / (a.etp * a.ep * a.pp))
	bytesPerParam := func(dp float64) float64 {
		if !a.distributedOptimizer {
			return 18
		}
		return 6 + (12 / dp)
	}
	return (tpSharded+replicated)*bytesPerParam(a.dp) + expertSharded*bytesPerParam(edp)
}

// pipelineFactors applies the interleaving penalty and the microbatch discount
// as both activation functions do.
func (a megatronArgs) pipelineFactors(mem float64) float64 {
	if a.vpp > 1 {
		mem *= 1 + ((a.pp - 1) / (a.pp * float64(a.vpp)))
	}
	if a.vpp <= 1 && a.pp > 1 {
		mem *= math.Min(1, a.microbatches/a.pp)
	}
	return mem
}

// activationMemory is compute_activation_memory (SP + selective recompute).
func (a megatronArgs) activationMemory() float64 {
	sbh := a.seq * a.micro * a.hidden
	mem := sbh * (18 + (4 * (a.ffn / a.hidden)))
	mem *= float64(a.layers)
	mem += 8 * a.seq * a.micro * a.pp
	mem += a.seq * a.micro * a.hidden * a.pp
	mem = a.pipelineFactors(mem)
	if a.pp == 1 {
		mem += a.seq * a.micro * a.hidden * 4 * (1 + (a.paddedVocab / a.hidden))
	}
	return mem / a.tp
}

// activationMemoryWithoutSP is compute_activation_memory_without_sp.
func (a megatronArgs) activationMemoryWithoutSP() float64 {
	perLayer := a.seq * a.micro * a.hidden * (10 + (24 / a.tp))
	mem := perLayer * float64(a.layers)
	mem += 8 * a.seq * a.micro * a.pp
	mem += a.seq * a.micro * a.hidden * a.pp
	mem = a.pipelineFactors(mem)
	if a.pp == 1 {
		logits := a.seq * a.micro * a.paddedVocab
		logits /= a.tp
		finalLN := a.seq * a.micro * a.hidden
		mem += (logits + finalLN) * 2
	}
	return mem * 1.05
}

// MegatronFLOPs is num_floating_point_operations for one global batch of s
// (BSHD, no packing): forward and backward, every GEMM counted three times.
func MegatronFLOPs(s *spec.Spec, d spec.Derived) float64 {
	megatron, _ := flopCounts(s, d)
	return megatron
}

// ModelFLOPs is the FLOP count of one global batch of s that Megatron-Bridge's
// performance tables divide by the step time and the GPUs for their model
// TFLOP/s (flop_utils.num_floating_point_operations, Megatron-Bridge
// src/megatron/bridge/training/utils/flop_utils.py at 067f987d, since
// baa0259b): Megatron's formula (MegatronFLOPs), except that a layer with
// sliding-window attention (model.window_size; which layers:
// window_attn_skip_freq) counts its core attention over the keys in its
// window, the exact causal mean W − W(W−1)/(2T) for a window of
// W = left + right + 1 keys over T tokens, where Megatron-LM's formula
// (d98e8a64) counts every layer over the whole causal sequence. The two are
// equal for a model without sliding windows; for GPT-OSS 120B at 4K the
// tables count 5% less (the 26.06-26.08 rows: tokens/s against model
// TFLOP/s give 0.95 of Megatron's count per token; TestModelFLOPsMatchTables).
func ModelFLOPs(s *spec.Spec, d spec.Derived) float64 {
	_, model := flopCounts(s, d)
	return model
}

// flopCounts is MegatronFLOPs and ModelFLOPs from one evaluation of the
// formula's terms.
func flopCounts(s *spec.Spec, d spec.Derived) (megatron, model float64) {
	a := newMegatronArgs(s, d)
	f := a.flopTerms()
	T := a.seq
	megatron = f.total(a.globalBatch*T, a.globalBatch*T*T)
	m := &s.Model
	if len(m.WindowSize) != 2 || m.MLA != nil || m.WindowSize[0] < 0 || m.WindowSize[1] < 0 {
		// Megatron-Bridge windows only the MHA/GQA branch; −1 is an
		// unbounded side (Megatron's window_size), no window to count.
		return megatron, megatron
	}
	W := float64(m.WindowSize[0] + m.WindowSize[1] + 1)
	if W >= T {
		return megatron, megatron
	}
	swa := W - W*(W-1)/(2*T) // mean keys per query, against T/2 unwindowed
	// The core term per token and layer is selfAttnCore·T (its /2 for the
	// causal mask is inside selfAttnCore); windowed, selfAttnCore·2·swa.
	return megatron, megatron - float64(m.WindowedLayers())*a.globalBatch*T*f.selfAttnCore*(T-2*swa)
}

// flopTerms are the per-token factors of Megatron's formula.
type flopTerms struct {
	hidden, ffn, ffnFactor, moeFFN, topk, sharedFFN float64
	denseLayers, moeLayers                          float64 // MTP layers included, as Megatron counts them
	mtpLayers, layers                               float64 // layers = L + mtp
	selfAttn, selfAttnCore, paddedVocab             float64
}

func (a megatronArgs) flopTerms() flopTerms {
	f := flopTerms{hidden: a.hidden, ffn: a.ffn, paddedVocab: a.paddedVocab}
	if a.hasMoE {
		f.moeLayers = float64(a.moeLayerCount())
		f.denseLayers = float64(a.layers) - f.moeLayers
		f.topk = a.topk
		f.moeFFN = a.moeFFN
		f.sharedFFN = a.sharedFFN
	} else {
		f.denseLayers = float64(a.layers)
		f.moeFFN = a.ffn
	}
	last := a.lastLayerIsMoE()
	f.mtpLayers = float64(a.mtpLayers)
	f.moeLayers += last * f.mtpLayers
	f.denseLayers += (1 - last) * f.mtpLayers
	f.layers = float64(a.layers) + f.mtpLayers
	f.ffnFactor = 2
	if a.gated {
		f.ffnFactor = 3
	}
	const fwdBwd, fma = 3, 2
	h := a.hidden
	if a.mla != nil {
		ml := a.mla
		var qTerm float64
		if ml.QLoraRank == nil {
			qTerm = h * a.heads * float64(ml.QKHeadDim+ml.QKPosEmbHeadDim)
		} else {
			qTerm = float64(*ml.QLoraRank) * (h + a.heads*float64(ml.QKHeadDim+ml.QKPosEmbHeadDim) + 1)
		}
		f.selfAttn = fwdBwd * fma * (qTerm +
			float64(ml.KVLoraRank)*(h+a.heads*float64(ml.QKHeadDim+ml.VHeadDim)+1) +
			h*float64(ml.QKPosEmbHeadDim) +
			(a.heads*float64(ml.VHeadDim))*h)
		f.selfAttnCore = fwdBwd * fma * (a.heads*float64(ml.QKHeadDim+ml.QKPosEmbHeadDim)/2 +
			a.heads*float64(ml.VHeadDim)/2)
	} else {
		q := a.kvChannels * a.heads
		k := a.kvChannels * a.queryGroups
		v := a.kvChannels * a.queryGroups
		f.selfAttn = fwdBwd * fma * (h*(q+k+v+0) + q*h)
		f.selfAttnCore = fwdBwd * fma * q / 2 * 2
	}
	return f
}

// total evaluates the formula for T tokens whose squared lengths sum to s2.
func (f flopTerms) total(tokens, s2 float64) float64 {
	const fwdBwd, fma = 3, 2
	selfAttn := f.selfAttn * f.layers
	core := f.selfAttnCore * f.layers
	return tokens*(fwdBwd*fma*f.hidden*((f.ffn*f.ffnFactor)*f.denseLayers+
		(f.moeFFN*f.topk*f.ffnFactor)*f.moeLayers+
		(f.sharedFFN*f.ffnFactor)*f.moeLayers)+
		selfAttn+
		fwdBwd*fma*f.mtpLayers*(3*f.hidden+2*f.hidden*f.hidden)+
		fwdBwd*fma*f.hidden*f.paddedVocab*(f.mtpLayers+1)) +
		s2*core
}
