package estimate

import "parc.dev/parc/internal/spec"

// ParamSplit counts parameters by how a GPU holds them: sharded over the
// tensor-parallel group, replicated on every tensor-parallel rank, or routed
// experts (sharded over etp·ep).
type ParamSplit struct {
	TPSharded  int64 `json:"tp_sharded"`
	Replicated int64 `json:"replicated"`
	Experts    int64 `json:"experts"`
}

// Total is the number of parameters, unsharded.
func (p ParamSplit) Total() int64 { return p.TPSharded + p.Replicated + p.Experts }

func (p ParamSplit) plus(q ParamSplit) ParamSplit {
	return ParamSplit{p.TPSharded + q.TPSharded, p.Replicated + q.Replicated, p.Experts + q.Experts}
}

func (p ParamSplit) times(n int64) ParamSplit {
	return ParamSplit{p.TPSharded * n, p.Replicated * n, p.Experts * n}
}

// modelShape is the model's dimensions as int64, with Megatron's defaults
// resolved (from spec.Derived).
type modelShape struct {
	h, a, g, d, q, kv, f, fe, fs, experts, topk, vocab, maxPos, layers, mtp int64
	gated                                                                   int64 // fc1 width multiplier: 2 with SwiGLU
	norm                                                                    int64 // parameters per norm element: 2 LayerNorm, 1 RMSNorm
	bias, qkvBias, qkNorm, tied, learnedPos                                 bool
	mla                                                                     *spec.MLA
	moeLayers                                                               []bool
	routerBias                                                              bool
	// perLayer is layerParams(false), layerParams(true), counted once;
	// perLayerTensors likewise layerTensors(false), layerTensors(true).
	perLayer        [2]ParamSplit
	perLayerTensors [2]tensorCount
}

func newModelShape(s *spec.Spec, d spec.Derived) modelShape {
	m := s.Model
	sh := modelShape{
		h: int64(m.Hidden), a: int64(m.Heads), g: int64(d.QueryGroups), d: int64(d.KVChannels),
		f: int64(d.FFNHidden), vocab: int64(d.PaddedVocab), maxPos: int64(d.MaxPositions),
		layers: int64(m.Layers), mtp: int64(m.MTPLayers), gated: 1, norm: 2,
		bias: m.Bias, qkvBias: m.QKVBias, qkNorm: m.QKLayernorm, tied: m.TieEmbeddings,
		learnedPos: m.PositionEmbedding == "learned_absolute", mla: m.MLA,
	}
	sh.q, sh.kv = sh.d*sh.a, sh.d*sh.g
	if m.GatedMLP() {
		sh.gated = 2
	}
	if m.Normalization == "rmsnorm" {
		sh.norm = 1
	}
	if m.MoE != nil {
		sh.fe = int64(d.MoEFFNHidden)
		sh.fs = int64(m.MoE.SharedFFNHidden)
		sh.experts = int64(m.MoE.Experts)
		sh.topk = int64(m.MoE.TopK)
		sh.moeLayers = d.MoELayers
		if len(sh.moeLayers) != m.Layers {
			sh.moeLayers = spec.MoELayerPattern(m.Layers, m.MoE.LayerFreq, m.MoE.DenseLayers)
		}
		sh.routerBias = m.Bias
	}
	sh.perLayer = [2]ParamSplit{sh.layerParams(false), sh.layerParams(true)}
	for i, moe := range []bool{false, true} {
		d, e := sh.layerTensors(moe)
		sh.perLayerTensors[i] = tensorCount{d, e}
	}
	return sh
}

// layerOf is layerParams(moe), counted once per model.
func (sh *modelShape) layerOf(moe bool) ParamSplit {
	if moe {
		return sh.perLayer[1]
	}
	return sh.perLayer[0]
}

func (sh *modelShape) isMoE(layer int) bool {
	return layer >= 0 && layer < len(sh.moeLayers) && sh.moeLayers[layer]
}

func (sh modelShape) moeCount() int64 {
	n := int64(0)
	for _, m := range sh.moeLayers {
		if m {
			n++
		}
	}
	return n
}

// attentionParams are the self-attention block's parameters with its input norm.
func (sh modelShape) attentionParams() ParamSplit {
	var p ParamSplit
	p.Replicated += sh.norm * sh.h // input norm
	if sh.mla != nil {
		// Megatron's theoretical-memory count of MLA (norms included), all
		// treated as tensor-parallel.
		ml := sh.mla
		qk := int64(ml.QKHeadDim + ml.QKPosEmbHeadDim)
		if ml.QLoraRank == nil {
			p.TPSharded += sh.h * sh.a * qk
		} else {
			p.TPSharded += int64(*ml.QLoraRank) * (sh.h + sh.a*qk + sh.norm)
		}
		p.TPSharded += int64(ml.KVLoraRank)*(sh.h+sh.a*int64(ml.QKHeadDim+ml.VHeadDim)+sh.norm) +
			sh.h*int64(ml.QKPosEmbHeadDim) + sh.a*int64(ml.VHeadDim)*sh.h
		if sh.bias {
			p.Replicated += sh.h
		}
		return p
	}
	p.TPSharded += sh.h*(sh.q+2*sh.kv) + sh.q*sh.h // QKV and output projection
	if sh.bias || sh.qkvBias {
		p.TPSharded += sh.q + 2*sh.kv // column-parallel bias, sharded
	}
	if sh.bias {
		p.Replicated += sh.h // row-parallel bias, replicated
	}
	if sh.qkNorm {
		p.Replicated += 2 * sh.norm * sh.d
	}
	return p
}

// mlpParams are an MLP of width f (fc1, fc2 and their biases), without norm.
func (sh modelShape) mlpParams(f int64) (sharded, replicated int64) {
	sharded = sh.h*f*sh.gated + f*sh.h
	if sh.bias {
		sharded += f * sh.gated
		replicated += sh.h
	}
	return sharded, replicated
}

// layerParams are one decoder layer's parameters.
func (sh modelShape) layerParams(moe bool) ParamSplit {
	p := sh.attentionParams()
	p.Replicated += sh.norm * sh.h // pre-MLP norm
	if !moe {
		s, r := sh.mlpParams(sh.f)
		p.TPSharded += s
		p.Replicated += r
		return p
	}
	p.Replicated += sh.h * sh.experts // router
	if sh.routerBias {
		p.Replicated += sh.experts
	}
	s, r := sh.mlpParams(sh.fe)
	p.Experts += (s + r) * sh.experts
	if sh.fs > 0 {
		s, r := sh.mlpParams(sh.fs)
		p.TPSharded += s
		p.Replicated += r
	}
	return p
}

// routedPerExpert is one routed expert's parameters.
func (sh modelShape) routedPerExpert() int64 {
	s, r := sh.mlpParams(sh.fe)
	return s + r
}

// mtpLayerParams is one multi-token-prediction layer: a decoder layer like
// the last one, the eh projection (2h→h) and three norms.
func (sh modelShape) mtpLayerParams() ParamSplit {
	p := sh.layerParams(sh.isMoE(int(sh.layers) - 1))
	p.TPSharded += 2 * sh.h * sh.h
	p.Replicated += 3 * sh.norm * sh.h
	return p
}

func (sh modelShape) wordEmbeddings() int64 { return sh.vocab * sh.h }

func (sh modelShape) positionEmbeddings() int64 {
	if sh.learnedPos {
		return sh.maxPos * sh.h
	}
	return 0
}

// stageParams are the parameters pipeline rank r holds (all its virtual
// stages), unsharded by tp/ep.
func (sh modelShape) stageParams(stages [][]spec.LayerRange, r int) ParamSplit {
	var p ParamSplit
	for _, chunk := range stages[r] {
		for l := chunk.First; l < chunk.First+chunk.Count; l++ {
			p = p.plus(sh.layerOf(sh.isMoE(l)))
		}
	}
	pp := len(stages)
	if r == 0 {
		p.TPSharded += sh.wordEmbeddings()
		p.Replicated += sh.positionEmbeddings()
	}
	if r == pp-1 {
		p.Replicated += sh.norm * sh.h // final norm
		if !sh.tied || pp > 1 {
			// the output layer, or the last stage's copy of the tied embeddings
			p.TPSharded += sh.wordEmbeddings()
		}
		p = p.plus(sh.mtpLayerParams().times(sh.mtp))
		if sh.mtp > 0 && r > 0 && !sh.tied {
			// The MTP layers embed the shifted tokens with an embedding of
			// their own on the stage that runs them, a copy of the first
			// stage's (GPTModel.__init__ builds LanguageModelEmbedding when
			// pre_process or mtp_process; LanguageModule counts it as "a
			// duplicated copy of the pre_process" embedding). With tied
			// embeddings it is the copy the output layer already uses.
			p.TPSharded += sh.wordEmbeddings()
			p.Replicated += sh.positionEmbeddings()
		}
	}
	return p
}

// totalParams counts every parameter of the model once (a tied output layer
// is the embedding itself).
func (sh modelShape) totalParams() ParamSplit {
	var p ParamSplit
	for l := range int(sh.layers) {
		p = p.plus(sh.layerOf(sh.isMoE(l)))
	}
	p.TPSharded += sh.wordEmbeddings()
	p.Replicated += sh.positionEmbeddings() + sh.norm*sh.h
	if !sh.tied {
		p.TPSharded += sh.wordEmbeddings()
	}
	return p.plus(sh.mtpLayerParams().times(sh.mtp))
}

// perGPU is how many of p one GPU holds.
func (p ParamSplit) perGPU(tp, etp, ep int64) int64 {
	return p.TPSharded/tp + p.Replicated + p.Experts/(etp*ep)
}

// denseExpertPerGPU splits a GPU's share into the parameters reduced over the
// dense data-parallel group and those reduced over the expert one.
func (p ParamSplit) denseExpertPerGPU(tp, etp, ep int64) (dense, expert int64) {
	return p.TPSharded/tp + p.Replicated, p.Experts / (etp * ep)
}

// layerTensors counts the parameter tensors of one decoder layer as
// Megatron-Core builds it (a fused norm-linear's norm weight is a tensor of
// its own): the input and pre-MLP norms (weight, and bias with LayerNorm),
// the attention's linear layers (MLA's down and up projections with their
// norms, or one QKV projection; q/k norms), the MLP's two linears, and for
// an MoE layer the router, the shared expert and, in the expert buffer, two
// linears per local expert (TEGroupedMLP keeps one weight per expert; expert
// is one local expert's count), biases where the model has them.
func (sh modelShape) layerTensors(moe bool) (dense, expert int64) {
	b := int64(0)
	if sh.bias {
		b = 1
	}
	dense = 2 * sh.norm // input and pre-MLP norms
	switch {
	case sh.mla != nil:
		dense += 3 + sh.norm // kv down, kv norm, kv up, output projection
		if sh.mla.QLoraRank != nil && *sh.mla.QLoraRank > 0 {
			dense += 2 + sh.norm // q down, q norm, q up
		} else {
			dense++ // q projection
		}
		dense += b
	default:
		dense += 2 + b // QKV and output projections, the output's bias
		if sh.bias || sh.qkvBias {
			dense++
		}
		if sh.qkNorm {
			dense += 2 * sh.norm
		}
	}
	if !moe {
		return dense + 2 + 2*b, 0
	}
	dense++ // router
	if sh.routerBias {
		dense++
	}
	if sh.fs > 0 {
		dense += 2 + 2*b
	}
	return dense, 2 + 2*b
}

// tensorCount is how many parameter tensors a rank holds in its dense and
// its expert data-parallel buffer.
type tensorCount struct{ dense, expert int64 }

// of is the count of the expert buffer where expert, else the dense one's.
func (t tensorCount) of(expert bool) int64 {
	if expert {
		return t.expert
	}
	return t.dense
}

// stageTensors counts the parameter tensors pipeline rank r holds in its
// dense and expert data-parallel buffers (layerTensors, with the embedding,
// position embedding, output layer and final norm where stageParams puts
// them; MTP layers as decoder layers).
func (sh modelShape) stageTensors(stages [][]spec.LayerRange, r int, localExperts int64) tensorCount {
	var dense, expert int64
	add := func(moe bool) {
		t := sh.perLayerTensors[0]
		if moe {
			t = sh.perLayerTensors[1]
		}
		dense, expert = dense+t.dense, expert+t.expert*localExperts
	}
	for _, chunk := range stages[r] {
		for l := chunk.First; l < chunk.First+chunk.Count; l++ {
			add(sh.isMoE(l))
		}
	}
	pp := len(stages)
	if r == 0 {
		dense++
		if sh.learnedPos {
			dense++
		}
	}
	if r == pp-1 {
		dense += sh.norm // final norm
		if !sh.tied || pp > 1 {
			dense++
		}
		for range sh.mtp {
			add(sh.isMoE(int(sh.layers) - 1))
		}
	}
	return tensorCount{dense, expert}
}
