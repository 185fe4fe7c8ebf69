package solve

import (
	"fmt"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/spec"
)

// leaf is one complete assignment of the solver's fields.
type leaf struct {
	tp, cp, pp, ep, etp, vpp, mb int32
	rc                           int8
	stage                        uint8 // 0: bounded by compute only; 1: by the one-stage estimate
	grid                         int32 // index into search.grids
	key                          float64
}

// gridInfo is what the leaves of one (tp, cp, pp, ep, etp) share.
type gridInfo struct {
	links   gridLinks
	dp, edp int
}

// enumerate walks tp → cp → pp → ep → etp → vpp → micro_batch → recompute,
// dropping a partial assignment at the first rule (a check error) it breaks,
// and keeps every complete assignment as a leaf with its first bound.
func (sv *solver) enumerate() {
	s := &sv.base
	p, t := s.Parallel, s.Train
	d0 := spec.Derive(s)
	W, seq := sv.world, t.SeqLength
	heads, groups := s.Model.Heads, d0.QueryGroups
	moe := s.Model.MoE
	L := s.Model.Layers
	uneven := p.FirstStageLayers != nil || p.LastStageLayers != nil
	Lp := L
	if p.AccountForEmbedding {
		Lp++
	}
	if p.AccountForLoss {
		Lp++
	}
	gridWord := func(model int) string {
		if model > W {
			return "world-size"
		}
		return "world-not-divisible"
	}

	for _, tp := range sv.dom[fTP] {
		w := sv.weightAfter(fTP)
		switch {
		case W%tp != 0:
			sv.prune(gridWord(tp), w, func() string { return fmt.Sprintf("tp=%d does not divide the world size %d", tp, W) })
			continue
		case heads%tp != 0:
			sv.prune("tp-heads", w, func() string { return fmt.Sprintf("tp=%d does not divide heads=%d", tp, heads) })
			continue
		case groups%tp != 0 && tp%groups != 0:
			sv.prune("tp-query-groups", w, func() string {
				return fmt.Sprintf("query_groups=%d is neither a multiple nor a divisor of tp=%d", groups, tp)
			})
			continue
		case d0.FFNHidden%tp != 0:
			sv.prune("ffn-tp", w, func() string { return fmt.Sprintf("ffn_hidden=%d is not divisible by tp=%d", d0.FFNHidden, tp) })
			continue
		case moe != nil && moe.SharedFFNHidden > 0 && moe.SharedFFNHidden%tp != 0:
			sv.prune("moe-shared-ffn-tp", w, func() string {
				return fmt.Sprintf("shared_ffn_hidden=%d is not divisible by tp=%d", moe.SharedFFNHidden, tp)
			})
			continue
		}
		sp := tp > 1 && (p.SP == nil || *p.SP)
		if moe != nil && tp > 1 && !sp {
			sv.prune("moe-sp-required", w, func() string { return fmt.Sprintf("an MoE model with tp=%d needs sequence parallelism", tp) })
			continue
		}
		for _, cp := range sv.dom[fCP] {
			w := sv.weightAfter(fCP)
			switch {
			case W%(tp*cp) != 0:
				sv.prune(gridWord(tp*cp), w, func() string { return fmt.Sprintf("tp·cp = %d·%d does not divide the world size %d", tp, cp, W) })
				continue
			case cp > 1 && seq%(2*cp) != 0:
				sv.prune("cp-seq-length", w, func() string { return fmt.Sprintf("seq_length=%d is not a multiple of 2·cp = %d", seq, 2*cp) })
				continue
			case sp && seq%cp == 0 && (seq/cp)%tp != 0:
				sv.prune("sp-seq-length", w, func() string {
					return fmt.Sprintf("seq_length/cp = %d is not divisible by tp=%d (sequence parallelism)", seq/cp, tp)
				})
				continue
			}
			for _, pp := range sv.dom[fPP] {
				w := sv.weightAfter(fPP)
				model := tp * cp * pp
				if W%model != 0 {
					sv.prune(gridWord(model), w, func() string {
						return fmt.Sprintf("tp·cp·pp = %d·%d·%d does not divide the world size %d", tp, cp, pp, W)
					})
					continue
				}
				dp := W / model
				if p.DP != nil && *p.DP != dp {
					sv.prune("dp-mismatch", w, func() string {
						return fmt.Sprintf("parallel.dp = %d but tp=%d cp=%d pp=%d give dp=%d", *p.DP, tp, cp, pp, dp)
					})
					continue
				}
				if code, msg := pipelineRule(L, Lp, pp, p, uneven); code != "" {
					sv.prune(code, w, func() string { return msg })
					continue
				}
				dense := newRankGrid(p.Order, map[string]int{"tp": tp, "cp": cp, "ep": 1, "dp": dp, "pp": pp})
				if dense.crosses([]string{"tp"}, max(s.Cluster.NVLinkDomain, 1)) {
					sv.prune("tp-crosses-nvlink", w, func() string {
						return fmt.Sprintf("tp=%d groups span two NVLink domains of %d GPUs", tp, s.Cluster.NVLinkDomain)
					})
					continue
				}
				sv.enumerateExpert(tp, cp, pp, dp)
			}
		}
	}
}

// enumerateExpert continues with ep, etp and the rest for one dense grid.
func (sv *solver) enumerateExpert(tp, cp, pp, dp int) {
	s := &sv.base
	p, t := s.Parallel, s.Train
	moe := s.Model.MoE
	W := sv.world
	d0 := spec.Derive(s)
	for _, ep := range sv.dom[fEP] {
		w := sv.weightAfter(fEP)
		switch {
		case moe == nil && ep > 1:
			sv.prune("ep-without-moe", w, func() string { return fmt.Sprintf("ep=%d but the model has no experts", ep) })
			continue
		case moe != nil && moe.Experts%ep != 0:
			sv.prune("ep-experts", w, func() string { return fmt.Sprintf("experts=%d is not a multiple of ep=%d", moe.Experts, ep) })
			continue
		}
		for _, etp := range sv.dom[fETP] {
			w := sv.weightAfter(fETP)
			eff := etp
			if etp == etpFollowsTP {
				eff = tp
			}
			expert := eff * ep * pp
			if W%expert != 0 {
				sv.prune("expert-grid-not-divisible", w, func() string {
					return fmt.Sprintf("etp·ep·pp = %d·%d·%d does not divide the world size %d", eff, ep, pp, W)
				})
				continue
			}
			edp := W / expert
			switch {
			case moe != nil && s.Model.Bias && eff != 1:
				sv.prune("moe-bias-etp", w, func() string { return fmt.Sprintf("MoE with linear biases needs etp=1, not %d", eff) })
				continue
			case moe != nil && d0.MoEFFNHidden%eff != 0:
				sv.prune("moe-ffn-etp", w, func() string {
					return fmt.Sprintf("the expert ffn_hidden=%d is not divisible by etp=%d", d0.MoEFFNHidden, eff)
				})
				continue
			case p.Order == check.OrderPPDP && pp > 1 && edp != dp:
				sv.prune("order-pp-last", w, func() string {
					return fmt.Sprintf("order %s with pp=%d needs dp = expert dp, but %d ≠ %d", p.Order, pp, dp, edp)
				})
				continue
			}
			if k := p.DistributedOptimizerInstances; k > 1 && ((dp*cp)%k != 0 || edp%k != 0) {
				sv.prune("distopt-instances", w, func() string {
					return fmt.Sprintf("distributed_optimizer_instances=%d must divide dp·cp = %d and expert dp = %d", k, dp*cp, edp)
				})
				continue
			}
			gl := linksFor(p.Order, s.Cluster.NVLinkDomain, tp, cp, pp, dp, ep, eff, edp)
			if gl.etpLeaves {
				sv.prune("etp-crosses-nvlink", w, func() string {
					return fmt.Sprintf("etp=%d groups span two NVLink domains of %d GPUs", eff, s.Cluster.NVLinkDomain)
				})
				continue
			}
			sv.grids = append(sv.grids, gridInfo{links: gl, dp: dp, edp: edp})
			grid := int32(len(sv.grids) - 1)
			sv.enumerateSchedule(grid, tp, cp, pp, ep, etp, dp, t)
		}
	}
}

// enumerateSchedule continues with vpp, micro_batch and recompute.
func (sv *solver) enumerateSchedule(grid int32, tp, cp, pp, ep, etp, dp int, t spec.Train) {
	p := sv.base.Parallel
	gbs := t.GlobalBatch
	for _, vpp := range sv.dom[fVPP] {
		w := sv.weightAfter(fVPP)
		if code, msg := sv.vppRule(pp, vpp); code != "" {
			sv.prune(code, w, func() string { return msg })
			continue
		}
		group := pp
		if p.MicrobatchGroupSize != nil {
			group = *p.MicrobatchGroupSize
		}
		interleaved := vpp > 1 && pp > 1
		if interleaved && group < pp {
			sv.prune("interleave-microbatches", w, func() string {
				return fmt.Sprintf("microbatch_group_size=%d is smaller than pp=%d", group, pp)
			})
			continue
		}
		for _, mb := range sv.dom[fMB] {
			w := sv.weightAfter(fMB)
			if gbs%(mb*dp) != 0 {
				sv.prune("global-batch", w, func() string {
					return fmt.Sprintf("global_batch=%d is not divisible by micro_batch·dp = %d·%d", gbs, mb, dp)
				})
				continue
			}
			m := gbs / (mb * dp)
			if interleaved && (m < group || (m%group != 0 && m%group < pp)) {
				sv.prune("interleave-microbatches", w, func() string {
					return fmt.Sprintf("vpp=%d with %d microbatches: the interleaved schedule needs M ≥ %d and M mod %d = 0 or ≥ pp=%d", vpp, m, group, group, pp)
				})
				continue
			}
			for _, rc := range sv.dom[fRC] {
				lf := leaf{
					tp: int32(tp), cp: int32(cp), pp: int32(pp), ep: int32(ep), etp: int32(etp),
					vpp: int32(vpp), mb: int32(mb), rc: int8(rc), grid: grid,
				}
				// (m + (p−1)/v) microbatch slots of the slowest stage, which
				// computes at least 1/p of the model.
				lf.key = (float64(m) + float64(pp-1)/float64(vpp)) / float64(pp) *
					float64(mb) * sv.sampleCompute[rc] / float64(tp*cp)
				sv.leaves = append(sv.leaves, lf)
			}
		}
	}
}

// pipelineRule is check's layer-split rule for pp (P6/P9/P16 even; P12/P13
// uneven), before vpp.
func pipelineRule(L, Lp, pp int, p spec.Parallel, uneven bool) (code, msg string) {
	if !uneven {
		if Lp%pp != 0 {
			return "pp-layers", fmt.Sprintf("%d layers do not split over pp=%d", Lp, pp)
		}
		return "", ""
	}
	middle, stages := L, pp
	for _, v := range []*int{p.FirstStageLayers, p.LastStageLayers} {
		if v == nil {
			continue
		}
		if *v <= 0 {
			return "", "" // uneven-stage-layers: a fixed error, check reports it
		}
		middle -= *v
		stages--
	}
	if (middle != 0) != (stages != 0) {
		return "uneven-middle", fmt.Sprintf("with pp=%d, %d middle layers remain for %d middle stages", pp, middle, stages)
	}
	if pp > 1 && stages != 0 && middle%stages != 0 {
		return "uneven-middle", fmt.Sprintf("with pp=%d the %d middle layers do not split over %d middle stages", pp, middle, stages)
	}
	return "", ""
}

// vppRule is check's virtual-pipeline rules (P7, P8/P17, P11/P14).
func (sv *solver) vppRule(pp, vpp int) (code, msg string) {
	p, L := sv.base.Parallel, sv.base.Model.Layers
	if vpp <= 1 {
		return "", ""
	}
	if p.OverlapP2P && pp <= 1 {
		return "vpp-pp", fmt.Sprintf("vpp=%d needs pp > 1", vpp)
	}
	if !p.OverlapP2P && pp <= 2 {
		return "vpp-pp", fmt.Sprintf("vpp=%d with overlap_p2p off needs pp > 2", vpp)
	}
	if p.FirstStageLayers == nil && p.LastStageLayers == nil {
		Lp := L
		if p.AccountForEmbedding {
			Lp++
		}
		if p.AccountForLoss {
			Lp++
		}
		if (Lp/pp)%vpp != 0 {
			return "vpp-layers", fmt.Sprintf("the %d layers per pipeline rank do not split over vpp=%d", Lp/pp, vpp)
		}
		return "", ""
	}
	middle, stages := L, pp
	for _, v := range []*int{p.FirstStageLayers, p.LastStageLayers} {
		if v == nil {
			continue
		}
		if *v%vpp != 0 {
			return "uneven-vpp", fmt.Sprintf("a first/last stage of %d layers does not split over vpp=%d", *v, vpp)
		}
		middle -= *v
		stages--
	}
	if stages > 0 && middle%stages == 0 && (middle/stages)%vpp != 0 {
		return "uneven-vpp", fmt.Sprintf("middle stages of %d layers do not split over vpp=%d", middle/stages, vpp)
	}
	return "", ""
}

// weightAfter is how many complete assignments a partial assignment up to
// and including f stands for.
func (sv *solver) weightAfter(f field) int64 {
	n := int64(1)
	for g := f + 1; g < nFields; g++ {
		n *= int64(len(sv.dom[g]))
	}
	return n
}

// reject counts n assignments rejected by code, keeping the first example.
func (sv *solver) reject(code string, n int64, example func() string) {
	sv.rejected[code] += n
	if _, ok := sv.examples[code]; !ok && example != nil {
		sv.examples[code] = example()
	}
}

// prune counts n assignments a rule rejected before any estimate.
func (sv *solver) prune(code string, n int64, example func() string) {
	sv.pruned += n
	sv.reject(code, n, example)
}

// rejectLeaf counts one complete assignment rejected after the rules.
func (sv *solver) rejectLeaf(code string, example func() string) {
	sv.leafRejected[code]++
	sv.reject(code, 1, example)
}
