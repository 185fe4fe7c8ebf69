package solve

import (
	"fmt"
	"slices"
	"strings"

	"parc.dev/parc/internal/spec"
)

// split is one way to split the decoder layers over the pipeline stages:
// Megatron's account_for_embedding / account_for_loss (the embedding and the
// loss each count as a layer in the even split) or an uneven split with
// first_stage_layers / last_stage_layers (0 = not set) and the rest even.
type split struct {
	emb, loss   bool
	first, last int
	// layout > 0 is a pipeline layout (parallel.layout) of the family
	// layoutEdge or layoutSlots, generated for each pp and vpp from the
	// model's layers and MTP layers.
	layout      int8
	layers, mtp int
	// text is the layout of a layoutUser split, stages its stages (parsed
	// once: rules ask for every pp and vpp).
	text   string
	stages int
}

// The pipeline layouts parc generates when it chooses the split
// (Megatron-Bridge's DeepSeek-V3 recipes, set_deepseek_v3_pipeline_model_
// parallel_layout and the "Et|(tt|)*30mL" / "Et*4|(t*4|)*14tmL" layouts of
// its performance configs). With S = pp·vpp virtual stages:
const (
	// layoutEdge: every virtual stage holds ⌈layers/S⌉ decoder layers,
	// the first also the embedding, the last the rest with the MTP layers
	// and the loss (Bridge's table: 16 + 16 + 16 + 13 + MTP over 4).
	layoutEdge = 1
	// layoutSlots: the embedding, every decoder and MTP layer and the loss
	// count one slot each, split evenly over the S stages ("Et|(tt|)*30mL":
	// 64 slots over 32).
	layoutSlots = 2
	// layoutUser: one of the layouts of the user's open parallel.layout
	// (choice.go), as written.
	layoutUser = 3
)

// layoutFor is the layout of split s with pp ranks and vpp virtual
// stages; ok is false when the family has none (fewer than two stages, or
// the slots do not split evenly).
func (s split) layoutFor(pp, vpp int) (string, bool) {
	if !s.hasLayout(pp, vpp) {
		return "", false
	}
	S := pp * vpp
	var stages []string
	switch s.layout {
	case layoutUser:
		return s.text, true
	case layoutEdge:
		per := (s.layers + S - 1) / S
		rest := s.layers - per*(S-1)
		for i := range S {
			n := per
			if i == S-1 {
				n = rest
			}
			st := strings.Repeat("t", n)
			if i == 0 {
				st = "E" + st
			}
			if i == S-1 {
				st += strings.Repeat("m", s.mtp) + "L"
			}
			stages = append(stages, st)
		}
	case layoutSlots:
		seq := "E" + strings.Repeat("t", s.layers) + strings.Repeat("m", s.mtp) + "L"
		per := len(seq) / S
		for i := range S {
			stages = append(stages, seq[i*per:(i+1)*per])
		}
	}
	return spec.CompactLayout(stages), true
}

// hasLayout reports whether layoutFor(pp, vpp) has a layout, without
// writing it (the rules ask for every pp and vpp; a layout is as long as
// the model's layers).
func (s split) hasLayout(pp, vpp int) bool {
	S := pp * vpp
	if s.layout == layoutUser {
		return s.stages == S
	}
	if s.layout == 0 || pp < 2 || S < 2 {
		return false
	}
	switch s.layout {
	case layoutEdge:
		per := (s.layers + S - 1) / S
		return s.layers-per*(S-1) >= 0
	case layoutSlots:
		return (1+s.layers+s.mtp+1)%S == 0
	}
	return false
}

// kind orders splits from the simplest: an even split, one accounted stage,
// both, one uneven stage, both uneven.
func (s split) kind() int {
	switch {
	case s.layout > 0:
		return 4 + int(s.layout)
	case s.first > 0 || s.last > 0:
		return 2 + btoi(s.first > 0) + btoi(s.last > 0)
	default:
		return btoi(s.emb) + btoi(s.loss)
	}
}

func (s split) apply(p *spec.Parallel) {
	if s.layout > 0 {
		l, ok := s.layoutFor(p.PP, p.VPP)
		placeLayout(p, l, ok)
		return
	}
	p.AccountForEmbedding, p.AccountForLoss = s.emb, s.loss
	p.FirstStageLayers, p.LastStageLayers = nil, nil
	if s.first > 0 {
		v := s.first
		p.FirstStageLayers = &v
	}
	if s.last > 0 {
		v := s.last
		p.LastStageLayers = &v
	}
}

// placeLayout places the layers of p with layout l alone (none when ok is
// false: the family has no layout for p's pp and vpp).
func placeLayout(p *spec.Parallel, l string, ok bool) {
	p.AccountForEmbedding, p.AccountForLoss = false, false
	p.FirstStageLayers, p.LastStageLayers, p.Layout = nil, nil, nil
	if ok {
		p.Layout = &l
	}
}

// String is the split's fields as a plan sets them ("" for an even split).
func (s split) String() string {
	if s.layout == layoutUser {
		return "layout " + spec.ShowLayout(s.text) // a layout may spell out every layer
	}
	if s.layout > 0 {
		return map[int8]string{layoutEdge: "layout (edge)", layoutSlots: "layout (slots)"}[s.layout]
	}
	var parts []string
	if s.emb {
		parts = append(parts, "account_for_embedding")
	}
	if s.loss {
		parts = append(parts, "account_for_loss")
	}
	if s.first > 0 {
		parts = append(parts, fmt.Sprintf("first_stage_layers=%d", s.first))
	}
	if s.last > 0 {
		parts = append(parts, fmt.Sprintf("last_stage_layers=%d", s.last))
	}
	return strings.Join(parts, " ")
}

// An uneven first or last stage holds between unevenLighter layers fewer
// and unevenHeavier more than each middle stage. Published uneven splits
// make room on the edge stages for what only they hold: Llama 3 405B puts
// 7 + 14×8 + 7 layers on 16 stages (one fewer beside the embedding and the
// output layer, arXiv:2407.21783 §3.3.2); Megatron-LM's DeepSeek-V3 recipe
// 4 + 14×4 + 1 (the last stage also holds the multi-token-prediction layer
// and the output layer). A stage far from the rest only lengthens the
// slowest stage.
const (
	unevenLighter = 3
	unevenHeavier = 1
)

// nearMiddle reports whether an edge stage of n layers is within the window
// of middle stages of per layers.
func nearMiddle(n, per int) bool { return n >= 1 && n >= per-unevenLighter && n <= per+unevenHeavier }

// splitsFor lists the splits tried with pp stages, simplest first, as
// indices into sv.splits. With the split fixed by the spec it is the spec's
// own (the rules then reject it when the layers do not split). Otherwise it
// is every split the user's constraints allow among: the even split, the
// accounted ones, and the uneven ones whose first/last stages are within
// the window of the middle ones (nearMiddle; see duplicateSplit for splits
// that are one plan).
func (sv *solver) splitsFor(pp int) []int32 {
	p, L := sv.base.Parallel, sv.base.Model.Layers
	add := func(s split) int32 {
		for i, have := range sv.splits {
			if have == s {
				return int32(i)
			}
		}
		sv.splits = append(sv.splits, s)
		return int32(len(sv.splits) - 1)
	}
	if sv.layoutOpen && sv.userLayouts != nil {
		// The listed layouts whose stages pp divides.
		var out []int32
		for _, s := range sv.listedLayouts {
			if s.stages%pp == 0 {
				out = append(out, add(s))
			}
		}
		return out
	}
	searched := false
	for _, f := range spec.PipelineSplitFields {
		searched = searched || sv.searched(f)
	}
	if !searched {
		own := split{emb: p.AccountForEmbedding, loss: p.AccountForLoss}
		if p.FirstStageLayers != nil {
			own.first = max(*p.FirstStageLayers, 0)
		}
		if p.LastStageLayers != nil {
			own.last = max(*p.LastStageLayers, 0)
		}
		out := []int32{add(own)}
		if sv.layoutsSearched && pp >= 2 {
			for _, k := range []int8{layoutEdge, layoutSlots} {
				out = append(out, add(split{layout: k, layers: L, mtp: sv.base.Model.MTPLayers}))
			}
		}
		return out
	}
	boolOK := func(f field, b bool) bool {
		return slices.Contains(sv.dom[f], btoi(b))
	}
	// stageOK: n layers (0 = unset) allowed for first/last_stage_layers.
	stageOK := func(f field, n int) bool {
		switch {
		case sv.open[f]:
			return n > 0 && sv.allowed(f, n)
		case sv.implied[f]:
			return true
		}
		v := 0
		if f == fFirst && p.FirstStageLayers != nil {
			v = *p.FirstStageLayers
		}
		if f == fLast && p.LastStageLayers != nil {
			v = *p.LastStageLayers
		}
		return n == v
	}
	var cands []split
	for _, s := range []split{{}, {emb: true}, {loss: true}, {emb: true, loss: true}} {
		if boolOK(fEmb, s.emb) && boolOK(fLoss, s.loss) && stageOK(fFirst, 0) && stageOK(fLast, 0) {
			cands = append(cands, s)
		}
	}
	if pp >= 2 && boolOK(fEmb, false) && boolOK(fLoss, false) {
		// A stage the user wrote keeps its value; the window of the
		// middle stages (nearMiddle) bounds only the stages parc chooses:
		// a first stage of 7 layers with 17 on the others is the user's.
		written := func(f field) (int, bool) {
			v := p.FirstStageLayers
			if f == fLast {
				v = p.LastStageLayers
			}
			if sv.searched(f) || v == nil || *v <= 0 {
				return 0, false
			}
			return *v, true
		}
		stageNear := func(f field, n, per int) bool {
			if v, ok := written(f); ok {
				return n == v
			}
			return nearMiddle(n, per)
		}
		var uneven []split
		for _, set := range [][2]bool{{true, false}, {false, true}, {true, true}} {
			mid := pp - btoi(set[0]) - btoi(set[1])
			if mid == 0 {
				// pp = 2 with both stages given: the same splits as the
				// first stage alone, unless the user wrote both.
				f, okF := written(fFirst)
				l, okL := written(fLast)
				if okF && okL && f+l == L {
					uneven = append(uneven, split{first: f, last: l})
				}
				continue
			}
			for per := 1; per*mid < L; per++ {
				rest := L - per*mid
				switch {
				case set[0] && set[1]:
					lo, hi := per-unevenLighter, per+unevenHeavier
					if v, ok := written(fFirst); ok {
						lo, hi = v, v
					}
					for f := lo; f <= hi; f++ {
						if stageNear(fFirst, f, per) && stageNear(fLast, rest-f, per) {
							uneven = append(uneven, split{first: f, last: rest - f})
						}
					}
				case set[0]:
					if stageNear(fFirst, rest, per) {
						uneven = append(uneven, split{first: rest})
					}
				default:
					if stageNear(fLast, rest, per) {
						uneven = append(uneven, split{last: rest})
					}
				}
			}
		}
		slices.SortStableFunc(uneven, func(a, b split) int { return a.kind() - b.kind() })
		for _, s := range uneven {
			if stageOK(fFirst, s.first) && stageOK(fLast, s.last) {
				cands = append(cands, s)
			}
		}
	}
	var out []int32
	for _, s := range cands {
		q := spec.Parallel{PP: pp, VPP: 1}
		s.apply(&q)
		if spec.StageLayers(L, q) == nil {
			continue // this split does not work with pp stages
		}
		if i := add(s); !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	// A layout sets none of the other split fields (Megatron rejects it
	// beside them): tried when the user's constraints allow them unset.
	if sv.layoutsSearched && pp >= 2 && boolOK(fEmb, false) && boolOK(fLoss, false) && stageOK(fFirst, 0) && stageOK(fLast, 0) {
		// Which vpp a layout works with is the vpp rule's to say.
		for _, k := range []int8{layoutEdge, layoutSlots} {
			out = append(out, add(split{layout: k, layers: L, mtp: sv.base.Model.MTPLayers}))
		}
	}
	return out
}

// duplicateSplit reports whether split si gives every pipeline rank and
// virtual stage the same layers as a simpler split tried before it (with pp
// and vpp): the two are one plan, and the simpler is kept.
func (sv *solver) duplicateSplit(pp, vpp int, si int32) bool {
	k := [3]int32{int32(pp), int32(vpp), si}
	if d, ok := sv.dupSplit[k]; ok {
		return d
	}
	L := sv.base.Model.Layers
	layers := func(i int32) [][]spec.LayerRange {
		sv.spend(int64(pp*vpp) + nodeWork)
		q := spec.Parallel{PP: pp, VPP: vpp}
		sv.splits[i].apply(&q)
		if sv.splits[i].layout > 0 && q.Layout == nil {
			return nil
		}
		return spec.StageLayers(L, q)
	}
	mine := layers(si)
	dup := false
	for _, sj := range sv.splitsOf[pp] {
		if sj == si {
			break
		}
		if mine != nil && slices.EqualFunc(layers(sj), mine, slices.Equal) {
			dup = true
			break
		}
	}
	sv.dupSplit[k] = dup
	return dup
}

// pipelineRule is check's layer-split rule for pp (P6/P9/P16 even; P12/P13
// uneven), before vpp.
func pipelineRule(L, pp int, s split) (string, func() string) {
	if s.layout > 0 {
		return "", nil // per vpp: vppRule
	}
	if s.first == 0 && s.last == 0 {
		Lp := L + btoi(s.emb) + btoi(s.loss)
		if Lp%pp != 0 {
			return "pp-layers", func() string { return fmt.Sprintf("%d layers do not split over pp=%d", Lp, pp) }
		}
		return "", nil
	}
	if s.emb || s.loss {
		return "", nil // uneven-account-for: a fixed error, check reports it
	}
	middle, stages := L, pp
	for _, v := range []int{s.first, s.last} {
		if v == 0 {
			continue
		}
		middle -= v
		stages--
	}
	if (middle != 0) != (stages != 0) {
		return "uneven-middle", func() string {
			return fmt.Sprintf("with pp=%d, %d middle layers remain for %d middle stages", pp, middle, stages)
		}
	}
	if pp > 1 && stages != 0 && middle%stages != 0 {
		return "uneven-middle", func() string {
			return fmt.Sprintf("with pp=%d the %d middle layers do not split over %d middle stages", pp, middle, stages)
		}
	}
	return "", nil
}

// vppRule is check's virtual-pipeline rules (P7, P8/P17, P11/P14) and, with
// parallel.layout open, the user's constraint on it.
func (sv *solver) vppRule(pp, vpp int, s split) (string, func() string) {
	if code, msg := sv.megatronVPPRule(pp, vpp, s); code != "" {
		return code, msg
	}
	// With parallel.layout open, the user's constraint on the layout the
	// plan writes (checked last: it builds the layout).
	if sv.layoutOpen && sv.userLayouts == nil {
		if _, ok := sv.openLayoutOf(s, pp, vpp); !ok {
			return "pipeline-layout", func() string {
				return fmt.Sprintf("parallel.layout's constraint %v allows no layout that places the layers as %s with pp=%d vpp=%d", sv.layoutUser, s, pp, vpp)
			}
		}
	}
	return "", nil
}

// megatronVPPRule is vppRule without the user's layout constraint.
func (sv *solver) megatronVPPRule(pp, vpp int, s split) (string, func() string) {
	p, L := sv.base.Parallel, sv.base.Model.Layers
	if s.layout > 0 {
		if !s.hasLayout(pp, vpp) {
			return "pipeline-layout", func() string {
				return fmt.Sprintf("no %s with pp=%d vpp=%d", s, pp, vpp)
			}
		}
	}
	if n := sv.layoutStages; n > 0 && pp*vpp != n {
		return "pipeline-layout", func() string {
			return fmt.Sprintf("parallel.layout has %d stages, not pp·vpp = %d·%d", n, pp, vpp)
		}
	}
	if vpp <= 1 {
		return "", nil
	}
	if p.OverlapP2P && pp <= 1 {
		return "vpp-pp", func() string { return fmt.Sprintf("vpp=%d needs pp > 1", vpp) }
	}
	if !p.OverlapP2P && pp <= 2 {
		return "vpp-pp", func() string { return fmt.Sprintf("vpp=%d with overlap_p2p off needs pp > 2", vpp) }
	}
	if sv.layoutStages > 0 || s.layout > 0 {
		return "", nil // the layout places the layers; check judges it
	}
	if s.first == 0 && s.last == 0 {
		Lp := L + btoi(s.emb) + btoi(s.loss)
		if (Lp/pp)%vpp != 0 {
			return "vpp-layers", func() string {
				return fmt.Sprintf("the %d layers per pipeline rank do not split over vpp=%d", Lp/pp, vpp)
			}
		}
		return "", nil
	}
	middle, stages := L, pp
	for _, v := range []int{s.first, s.last} {
		if v == 0 {
			continue
		}
		if v%vpp != 0 {
			return "uneven-vpp", func() string {
				return fmt.Sprintf("a first/last stage of %d layers does not split over vpp=%d", v, vpp)
			}
		}
		middle -= v
		stages--
	}
	if stages > 0 && middle%stages == 0 && (middle/stages)%vpp != 0 {
		return "uneven-vpp", func() string {
			return fmt.Sprintf("middle stages of %d layers do not split over vpp=%d", middle/stages, vpp)
		}
	}
	return "", nil
}

// shard is how the optimizer state is held: train.distributed_optimizer and
// train.fsdp.
type shard struct{ distopt, fsdp bool }

func (s shard) apply(t *spec.Train) { t.DistributedOptimizer, t.FSDP = s.distopt, s.fsdp }

// kind orders the shardings from the simplest: replicated, the distributed
// optimizer, FSDP.
func (s shard) kind() int { return btoi(s.distopt) + 2*btoi(s.fsdp) }
