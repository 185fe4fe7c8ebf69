package spec

// Derived holds the values Megatron-Core derives from the arguments, computed
// the way it computes them (megatron/training/arguments.py::validate_args,
// num_microbatches_calculator.py, vocab_utils.py). Derive never fails: where a
// division is not exact the result is truncated as Python's // does, and
// internal/check reports the rule that was broken.
type Derived struct {
	World           int  `json:"world_size"`
	DP              int  `json:"dp"`
	ETP             int  `json:"etp"`
	EDP             int  `json:"edp"`
	SP              bool `json:"sp"` // effective: off when tp == 1
	Microbatches    int  `json:"microbatches"`
	FFNHidden       int  `json:"ffn_hidden"`
	MoEFFNHidden    int  `json:"moe_ffn_hidden,omitempty"`
	KVChannels      int  `json:"kv_channels"`
	QueryGroups     int  `json:"query_groups"`
	PaddedVocab     int  `json:"padded_vocab"`
	MaxPositions    int  `json:"max_position_embeddings"`
	VPP             int  `json:"vpp"`
	MicrobatchGroup int  `json:"microbatch_group_size"`
	// MoELayers marks which decoder layers are MoE (nil for dense models).
	MoELayers []bool `json:"moe_layers,omitempty"`
	// Stages[r][v] is the chunk of layers held by pipeline rank r in virtual
	// stage v (nil when the layers cannot be split; check says why).
	Stages [][]LayerRange `json:"stages,omitempty"`
}

// LayerRange is a run of decoder layers [First, First+Count). Count may be 0.
type LayerRange struct {
	First int `json:"first"`
	Count int `json:"count"`
}

// LargestChunk is the most layers a model chunk (one virtual stage of one
// pipeline rank) of stages holds: the most full recomputation with the
// block method can rerun per chunk.
func LargestChunk(stages [][]LayerRange) int {
	most := 0
	for _, rank := range stages {
		for _, ch := range rank {
			most = max(most, ch.Count)
		}
	}
	return most
}

// Derive computes Megatron's derived values for s.
func Derive(s *Spec) Derived {
	m, p, t := s.Model, s.Parallel, s.Train
	d := Derived{World: s.Cluster.Nodes * s.Cluster.GPUsPerNode, VPP: p.VPP}

	d.ETP = p.TP
	if p.ETP != nil {
		d.ETP = *p.ETP
	}
	d.DP = div(d.World, p.TP*p.PP*p.CP)
	d.EDP = div(d.World, d.ETP*p.EP*p.PP)
	d.SP = p.TP > 1
	if p.SP != nil {
		d.SP = *p.SP && p.TP > 1
	}
	d.Microbatches = div(t.GlobalBatch, t.MicroBatch*d.DP)

	d.FFNHidden = 4 * m.Hidden
	if m.Activation == "swiglu" {
		// int((4 * h * 2 / 3) / 64) * 64, as Python evaluates it in floats.
		d.FFNHidden = int((float64(4*m.Hidden)*2/3)/64) * 64
	}
	if m.FFNHidden != nil {
		d.FFNHidden = *m.FFNHidden
	}
	d.KVChannels = div(m.Hidden, m.Heads)
	if m.KVChannels != nil {
		d.KVChannels = *m.KVChannels
	}
	d.QueryGroups = m.Heads
	if m.QueryGroups != nil {
		d.QueryGroups = *m.QueryGroups
	}
	mult := m.MakeVocabDivisibleBy * p.TP
	d.PaddedVocab = (m.Vocab + mult - 1) / mult * mult
	d.MaxPositions = t.SeqLength
	if m.MaxPositionEmbeddings != nil {
		d.MaxPositions = *m.MaxPositionEmbeddings
	}
	d.MicrobatchGroup = p.PP
	if p.MicrobatchGroupSize != nil {
		d.MicrobatchGroup = *p.MicrobatchGroupSize
	}
	if m.MoE != nil {
		d.MoEFFNHidden = d.FFNHidden
		if m.MoE.FFNHidden != nil {
			d.MoEFFNHidden = *m.MoE.FFNHidden
		}
		d.MoELayers = MoELayerPattern(m.Layers, m.MoE.LayerFreq, m.MoE.DenseLayers)
	}
	d.Stages = StageLayers(m.Layers, p)
	return d
}

// MoELayerPattern returns, for each decoder layer, whether it is an MoE layer:
// the first dense layers are dense, after that every freq-th layer is MoE
// (Megatron's --moe-layer-freq: layer i is MoE iff i % freq == 0).
func MoELayerPattern(layers, freq, dense int) []bool {
	out := make([]bool, layers)
	for i := range out {
		out[i] = moeLayer(i, freq, dense)
	}
	return out
}

// moeLayer reports whether decoder layer i is MoE under moe.layer_freq and
// moe.dense_layers (Megatron's --moe-layer-freq after the first dense ones).
func moeLayer(i, freq, dense int) bool { return i >= dense && freq > 0 && i%freq == 0 }

// HasDenseMLP reports whether a decoder layer runs Megatron's plain MLP: every
// layer of a dense model, an MoE model's dense layers (moe.dense_layers,
// moe.layer_freq). Shared experts are not counted.
func (m *Model) HasDenseMLP() bool {
	if m.MoE == nil {
		return true
	}
	for i := range m.Layers {
		if !moeLayer(i, m.MoE.LayerFreq, m.MoE.DenseLayers) {
			return true
		}
	}
	return false
}

// StageLayers splits the decoder layers over pipeline ranks and virtual stages
// as Megatron-Core does (transformer_block.py::get_num_layers_to_build and
// transformer_layer.py::get_transformer_layer_offset), or as parallel.layout
// places them (PipelineParallelLayerLayout.get_num_layers_to_build). It returns nil when the
// split is not possible; internal/check reports why.
func StageLayers(layers int, p Parallel) [][]LayerRange {
	pp, vpp := p.PP, p.VPP
	if pp < 1 || vpp < 1 || layers < 1 {
		return nil
	}
	if p.Layout != nil {
		return layoutStageLayers(layers, p)
	}
	if pp > layers+2 || vpp > layers+2 {
		// Every rank (even split) or middle rank (uneven) holds at least
		// one layer per virtual stage, the embedding and the loss counting
		// as one each at most: no split. Said before the pp·vpp table is
		// allocated, as the solver asks with pp up to the world size.
		return nil
	}
	counts := make([][]int, pp) // counts[r][v]
	for r := range counts {
		counts[r] = make([]int, vpp)
	}
	switch {
	case p.FirstStageLayers != nil || p.LastStageLayers != nil:
		first, last := 0, 0
		middleStages := pp
		if p.FirstStageLayers != nil {
			first = *p.FirstStageLayers
			middleStages--
		}
		if p.LastStageLayers != nil {
			last = *p.LastStageLayers
			middleStages--
		}
		// TransformerConfig's uneven-PP checks: middle layers and middle
		// stages are both zero or both not. With pp = 1 and both counts given
		// there are -1 middle stages; Megatron then builds last_stage_layers
		// layers on the only rank, which the count check below rejects.
		middle := layers - first - last
		if (middleStages == 0) != (middle == 0) || (middle < 0 && middleStages > 0) {
			return nil
		}
		per := 0
		if middleStages > 0 {
			if middle%middleStages != 0 {
				return nil
			}
			per = middle / middleStages
		}
		for r := 0; r < pp; r++ {
			n := per
			if r == 0 && p.FirstStageLayers != nil {
				n = first
			}
			if r == pp-1 && p.LastStageLayers != nil {
				n = last
			}
			if n%vpp != 0 {
				return nil
			}
			for v := range vpp {
				counts[r][v] = n / vpp
			}
		}
	default:
		total := layers
		if p.AccountForEmbedding {
			total++
		}
		if p.AccountForLoss {
			total++
		}
		if total%pp != 0 || (total/pp)%vpp != 0 {
			return nil
		}
		chunk := total / pp / vpp
		for r := range pp {
			for v := range vpp {
				counts[r][v] = chunk
			}
		}
		if p.AccountForEmbedding {
			counts[0][0]--
		}
		if p.AccountForLoss {
			counts[pp-1][vpp-1]--
		}
		if counts[0][0] < 0 || counts[pp-1][vpp-1] < 0 {
			return nil
		}
	}
	// Chunks are laid out in model order v*pp + r.
	out := make([][]LayerRange, pp)
	for r := range out {
		out[r] = make([]LayerRange, vpp)
	}
	next := 0
	for v := range vpp {
		for r := range pp {
			out[r][v] = LayerRange{First: next, Count: counts[r][v]}
			next += counts[r][v]
		}
	}
	if next != layers {
		return nil
	}
	return out
}

func div(a, b int) int {
	if b == 0 {
		return 0
	}
	return a / b
}

// ExpertRanksPerNVLinkDomain is how many consecutive ranks of an
// expert-parallel group one NVLink domain of nvlinkDomain GPUs holds (at
// least 1): Megatron's expert grid orders its ranks tp-ep-dp-pp with etp in
// place of tp, so etp is innermost and a domain holds nvlinkDomain/etp
// expert-parallel ranks. The estimate's expert all-to-all and HybridEP
// buffers, and check's HybridEP whole-domain rule, split the group by it.
func ExpertRanksPerNVLinkDomain(nvlinkDomain, etp int) int {
	return max(1, nvlinkDomain/max(etp, 1))
}
