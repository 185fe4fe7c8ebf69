package estimate

import (
	"math"

	"parc.dev/parc/internal/spec"
)

// Sharding says how much of the model state the data-parallel ranks split.
type Sharding string

const (
	// ShardNone replicates weights, gradients and optimizer state (plain DDP).
	ShardNone Sharding = "none"
	// ShardOptimizer splits the optimizer state over the data-parallel ranks
	// (Megatron's distributed optimizer, ZeRO-1).
	ShardOptimizer Sharding = "optimizer"
	// ShardGrads splits gradients and optimizer state (ZeRO-2; Megatron-FSDP's
	// optim_grads, the Llama 3 paper's FSDP without resharding parameters).
	ShardGrads Sharding = "grads"
	// ShardFull splits weights, gradients and optimizer state (ZeRO-3 / FSDP;
	// Megatron-FSDP's optim_grads_params).
	ShardFull Sharding = "full"
)

// BytesPerParam is what mixed-precision Adam keeps per parameter.
type BytesPerParam struct {
	Weights   float64 `json:"weights"`
	Gradients float64 `json:"gradients"`
	Optimizer float64 `json:"optimizer"`
}

// Total is the bytes per parameter of the whole model state.
func (b BytesPerParam) Total() float64 { return b.Weights + b.Gradients + b.Optimizer }

// AdamBytes is Megatron's state per parameter for a precision: bf16/fp16/fp8
// training keeps 16-bit weights, fp32 main gradients, and fp32 master weights
// plus the two Adam moments (2 + 4 + 12 = 18 bytes, the β of
// theoretical_memory_usage.py); fp32 training keeps fp32 weights and
// gradients and the two moments (4 + 4 + 8).
func AdamBytes(precision string) BytesPerParam {
	if precision == "fp32" {
		return BytesPerParam{Weights: 4, Gradients: 4, Optimizer: 8}
	}
	return BytesPerParam{Weights: 2, Gradients: 4, Optimizer: 12}
}

// State is model state in bytes.
type State struct {
	Weights   float64 `json:"weights"`
	Gradients float64 `json:"gradients"`
	Optimizer float64 `json:"optimizer"`
}

// Total is the sum of the three.
func (s State) Total() float64 { return s.Weights + s.Gradients + s.Optimizer }

// StateBytes is the model state one GPU keeps for params parameters when the
// data-parallel group of the given size shards it as sh says.
func StateBytes(params float64, b BytesPerParam, sh Sharding, shards int) State {
	n := float64(max(shards, 1))
	st := State{Weights: params * b.Weights, Gradients: params * b.Gradients, Optimizer: params * b.Optimizer}
	switch sh {
	case ShardOptimizer:
		st.Optimizer /= n
	case ShardGrads:
		st.Gradients /= n
		st.Optimizer /= n
	case ShardFull:
		st.Weights /= n
		st.Gradients /= n
		st.Optimizer /= n
	}
	return st
}

// activationModel sizes the activations one GPU stores for one microbatch,
// after Korthikanti et al. 2022 (§4, Table 2), generalised to the real shapes.
type activationModel struct {
	tokens                  float64 // s/cp · b: tokens of one microbatch on this GPU's sequence shard
	s                       float64 // s/cp
	h, q, kv, a, f, fe, fs  float64
	experts, topk, gated, v float64
	t, etp, rep             float64 // rep = t with sequence parallelism, else 1
	fused                   bool
	ab, gb                  float64 // bytes per activation element, per saved GEMM input
	recompute               string
	method                  string
	groupLayers             int
	dropout                 bool            // hidden dropout > 0: a 1-byte mask per residual
	modules                 map[string]bool // recompute_modules with selective recompute
	perLayer                [2]float64      // layer(false), layer(true), computed once
}

func newActivationModel(s *spec.Spec, d spec.Derived, sh modelShape, fused bool, set settings) activationModel {
	p, tr := s.Parallel, s.Train
	cp := float64(max(p.CP, 1))
	am := activationModel{
		s: float64(tr.SeqLength) / cp, h: float64(sh.h), q: float64(sh.q), kv: float64(sh.kv),
		a: float64(sh.a), f: float64(sh.f), fe: float64(sh.fe), fs: float64(sh.fs),
		experts: float64(sh.experts), topk: float64(sh.topk), gated: float64(sh.gated),
		v: float64(sh.vocab), t: float64(max(p.TP, 1)), etp: float64(max(d.ETP, 1)), rep: 1,
		fused: fused || p.CP > 1, ab: 2, gb: 2, recompute: tr.Recompute, method: tr.RecomputeMethod,
		groupLayers: 1, dropout: tr.HiddenDropout > 0, modules: map[string]bool{},
	}
	if tr.Recompute == "selective" {
		am.modules = set.recomputeModules
	}
	am.tokens = am.s * float64(tr.MicroBatch)
	if d.SP {
		am.rep = am.t
	}
	switch tr.Precision {
	case "fp32":
		am.ab, am.gb = 4, 4
	case "fp8":
		am.gb = 1 // Transformer Engine saves the fp8 copy of a GEMM's input
	}
	if sh.mla != nil {
		ml := sh.mla
		am.q = float64(int64(ml.QKHeadDim+ml.QKPosEmbHeadDim) * sh.a)
		am.kv = float64(int64(ml.QKHeadDim+ml.QKPosEmbHeadDim+ml.VHeadDim)*sh.a) / 2
	}
	if tr.RecomputeLayers != nil {
		am.groupLayers = max(*tr.RecomputeLayers, 1)
	}
	am.perLayer = [2]float64{am.layer(false), am.layer(true)}
	return am
}

// layerOf is layer(moe), computed once per plan.
func (am *activationModel) layerOf(moe bool) float64 {
	if moe {
		return am.perLayer[1]
	}
	return am.perLayer[0]
}

// attention is the self-attention block with its input norm (Korthikanti:
// 11sbh + 5as²b, plus 2sbh for the norm).
func (am activationModel) attention() float64 {
	T := am.tokens
	m := am.ab*T*am.h/am.rep + // norm input
		am.ab*T*(am.q+2*am.kv)/am.t + // Q, K, V
		am.gb*T*am.q/am.t // output-projection input
	if !am.modules["layernorm"] {
		m += am.gb * T * am.h / am.rep // QKV GEMM input (the norm's output)
	}
	if am.dropout {
		m += T * am.h / am.rep // dropout mask (1 byte)
	}
	switch {
	case am.fused:
		m += 4 * T * am.a / am.t // fp32 softmax statistics of fused attention
	case am.recompute == "none":
		// softmax output, its dropout mask and output: (2+1+2)·a·s²·b
		m += (2*am.ab + 1) * am.a / am.t * am.s * am.s * (T / am.s)
	}
	return m
}

// denseMLP is the MLP block with its input norm (Korthikanti: 19sbh + 2sbh).
func (am activationModel) denseMLP() float64 {
	T := am.tokens
	m := am.ab * T * am.h / am.rep // norm input
	if am.dropout {
		m += T * am.h / am.rep // dropout mask
	}
	if am.modules["mlp"] {
		return m // recomputed from its input in the backward
	}
	if !am.modules["layernorm"] {
		m += am.gb * T * am.h / am.rep // fc1 input
	}
	return m + am.ab*T*am.f*am.gated/am.t + // activation-function input
		am.gb*T*am.f/am.t // fc2 input
}

// moeMLP is an MoE block: norm, router, the routed tokens this GPU's experts
// process (T·k·etp/t on average with balanced routing) and the shared expert.
func (am activationModel) moeMLP() float64 {
	T := am.tokens
	routed := T * am.topk * am.etp / am.t
	m := am.ab * T * am.h / am.rep // norm input
	if am.dropout {
		m += T * am.h / am.rep // dropout mask
	}
	if am.modules["moe"] {
		return m // recomputed from its input in the backward
	}
	m += am.ab*T*am.h/am.rep + // router and dispatcher input
		8*T*am.experts/am.rep + // fp32 router logits and probabilities
		routed*(am.gb*am.h+am.ab*am.fe*am.gated/am.etp+am.ab*am.h) // fc1 input, activation input, unpermute input
	if !am.modules["moe_act"] {
		m += routed * am.gb * am.fe / am.etp // fc2 input (the activation's output)
	}
	if am.fs > 0 && !am.modules["shared_experts"] {
		m += am.ab*T*am.fs*am.gated/am.t + am.gb*T*am.fs/am.t
	}
	return m
}

// layer is a decoder layer's activations with nothing recomputed.
func (am activationModel) layer(moe bool) float64 {
	if moe {
		return am.attention() + am.moeMLP()
	}
	return am.attention() + am.denseMLP()
}

// checkpoint is what full recompute keeps of a layer group: its input.
func (am activationModel) checkpoint() float64 { return am.ab * am.tokens * am.h / am.rep }

// embedding is the first stage's input: token ids (8 bytes each, as
// Megatron counts them) and the embedding dropout mask.
func (am activationModel) embedding() float64 {
	m := 8 * am.tokens
	if am.dropout {
		m += am.tokens * am.h / am.rep
	}
	return m
}

// logits is the last stage's output layer: final-norm input, output-layer
// input and the fp32 logits the cross-entropy keeps.
func (am activationModel) logits() float64 {
	return am.ab*am.tokens*am.h/am.rep + am.gb*am.tokens*am.h/am.rep + 4*am.tokens*am.v/am.t
}

// StageActivations is a stage's activation memory, by part.
type StageActivations struct {
	Layers    float64 `json:"layers"`
	Embedding float64 `json:"embedding"`
	Logits    float64 `json:"logits"`
	Recompute float64 `json:"recompute"` // the group full recompute rematerialises
}

// Total is the sum of the parts.
func (a StageActivations) Total() float64 { return a.Layers + a.Embedding + a.Logits + a.Recompute }

// stageActivations is rank r's peak activation memory; inFlight[c] is the
// number of microbatches of chunk c alive at the peak.
func (am *activationModel) stageActivations(sh modelShape, stages [][]spec.LayerRange, r int, inFlight []int) StageActivations {
	var out StageActivations
	for c, chunk := range stages[r] {
		n := float64(inFlight[c])
		if n == 0 || chunk.Count == 0 {
			continue
		}
		var stored, transient float64
		switch am.recompute {
		case "full":
			N := am.groupLayers
			if am.method == "block" {
				k := min(N, chunk.Count)
				for i := range chunk.Count {
					l := chunk.First + i
					if i < k {
						stored += am.checkpoint()
					} else {
						stored += am.layerOf(sh.isMoE(l))
					}
					if i < k {
						transient = math.Max(transient, am.layerOf(sh.isMoE(l)))
					}
				}
			} else {
				for g := 0; g < chunk.Count; g += N {
					stored += am.checkpoint()
					var group float64
					for l := chunk.First + g; l < chunk.First+min(g+N, chunk.Count); l++ {
						group += am.layerOf(sh.isMoE(l))
					}
					transient = math.Max(transient, group)
				}
			}
		default:
			for l := chunk.First; l < chunk.First+chunk.Count; l++ {
				stored += am.layerOf(sh.isMoE(l))
			}
		}
		out.Layers += n * stored
		out.Recompute = math.Max(out.Recompute, transient)
	}
	if r == 0 {
		out.Embedding = float64(inFlight[0]) * am.embedding()
	}
	if r == len(stages)-1 {
		out.Logits = am.logits()
		if sh.mtp > 0 {
			moe := sh.isMoE(int(sh.layers) - 1)
			out.Logits += float64(sh.mtp) * (am.layer(moe) + am.logits())
		}
	}
	return out
}
