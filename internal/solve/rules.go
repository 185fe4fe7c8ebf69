package solve

import (
	"fmt"
	"slices"

	"parc.dev/parc/internal/spec"
)

// leaf is one complete assignment of the solver's fields.
type leaf struct {
	tp, cp, pp, ep, etp, vpp, mb int32
	split                        int32 // index into solver.splits
	// rl is the layers per model chunk full recomputation reruns when
	// parc chooses them (recompute.layersImplied): 0 before evaluate
	// chose, k > 0 the block method's first k, −1 every layer (int32: a
	// chunk may hold up to the schema's 65,536 layers).
	rl   int32
	grid int32 // index into search.grids
	// g is parallel.microbatch_group_size when parc chooses it
	// (group.go): 0 for Megatron's default (pp), else the size evaluate
	// chose.
	g int32
	// A node stands for the n complete assignments of one (grid, split,
	// vpp) — every valid micro batch, recompute and optimizer sharding —
	// until the search reaches it and expands it (mb is then the smallest
	// valid micro batch, rc the least recomputation: its bound is theirs).
	// It expands into one node per micro batch (fixedMB, mb that micro
	// batch), each standing for its recompute modes and optimizer
	// shardings, which expands into them.
	n   int32
	key float64
	// The small fields last, so the leaf stays 64 bytes.
	rc            int16 // index into solver.recomputes
	shard         int8  // index into solver.shards
	stage         uint8 // 0: bounded by compute only; 1: by the one-stage estimate
	node, fixedMB bool
}

// gridInfo is what the leaves of one (tp, cp, pp, ep, etp) share.
type gridInfo struct {
	links   gridLinks
	dp, edp int
	unit    int32 // index into search.units
}

// enumerate walks tp → cp → pp → ep → etp → split → vpp → micro_batch →
// recompute → optimizer sharding,
// dropping a partial assignment at the first rule (a check error) it breaks,
// and keeps every complete assignment as a leaf with its first bound.
func (sv *solver) enumerate() {
	s := &sv.base
	p, t := s.Parallel, s.Train
	d0 := spec.Derive(s)
	W, seq := sv.world, t.SeqLength
	heads, groups := s.Model.Heads, d0.QueryGroups
	moe := s.Model.MoE
	gridWord := func(model int) string {
		if model > W {
			return "world-size"
		}
		return "world-not-divisible"
	}

	for _, tp := range sv.dom[fTP] {
		if sv.exhausted {
			return
		}
		w := sv.weightAfter(fTP, 0)
		switch {
		case !spec.Tiles(W, tp):
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
			if sv.exhausted {
				return
			}
			w := sv.weightAfter(fCP, 0)
			switch {
			case !spec.Tiles(W, tp, cp):
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
				if sv.exhausted {
					return
				}
				w := sv.weightAfter(fPP, pp)
				model := tp * cp * pp
				dp, ok := spec.Replicas(W, tp, cp, pp)
				if !ok {
					sv.prune(gridWord(model), w, func() string {
						return fmt.Sprintf("tp·cp·pp = %d·%d·%d does not divide the world size %d", tp, cp, pp, W)
					})
					continue
				}
				if p.DP != nil && *p.DP != dp {
					sv.prune("dp-mismatch", w, func() string {
						return fmt.Sprintf("parallel.dp = %d but tp=%d cp=%d pp=%d give dp=%d", *p.DP, tp, cp, pp, dp)
					})
					continue
				}
				if !sv.dpAllowed(dp) {
					sv.prune("dp-mismatch", w, func() string {
						return fmt.Sprintf("parallel.dp's constraint %v does not allow the dp=%d that tp=%d cp=%d pp=%d give", sv.dpUser, dp, tp, cp, pp)
					})
					continue
				}
				if sv.linkCache.denseOf(p.Order, s.Cluster.NVLinkDomain, tp, cp, pp, dp)[0] { // tp crosses
					sv.prune("tp-crosses-nvlink", w, func() string {
						return fmt.Sprintf("tp=%d groups span two NVLink domains of %d GPUs", tp, s.Cluster.NVLinkDomain)
					})
					continue
				}
				sv.enumerateExpert(tp, cp, pp, dp, &d0)
			}
		}
	}
}

// enumerateExpert continues with ep, etp and the rest for one dense grid.
func (sv *solver) enumerateExpert(tp, cp, pp, dp int, d0 *spec.Derived) {
	s := &sv.base
	p := s.Parallel
	moe := s.Model.MoE
	W := sv.world
	for _, ep := range sv.dom[fEP] {
		if sv.exhausted {
			return
		}
		w := sv.weightAfter(fEP, pp)
		switch {
		case moe == nil && ep > 1:
			sv.prune("ep-without-moe", w, func() string { return fmt.Sprintf("ep=%d but the model has no experts", ep) })
			continue
		case moe != nil && moe.Experts%ep != 0:
			sv.prune("ep-experts", w, func() string { return fmt.Sprintf("experts=%d is not a multiple of ep=%d", moe.Experts, ep) })
			continue
		}
		for _, etp := range sv.dom[fETP] {
			if sv.exhausted {
				return
			}
			w := sv.weightAfter(fETP, pp)
			eff := etp
			if etp == etpFollowsTP {
				eff = tp
			}
			edp, ok := spec.Replicas(W, eff, ep, pp)
			if !ok {
				sv.prune("expert-grid-not-divisible", w, func() string {
					return fmt.Sprintf("etp·ep·pp = %d·%d·%d does not divide the world size %d", eff, ep, pp, W)
				})
				continue
			}
			switch {
			case moe != nil && s.Model.Bias && eff != 1:
				sv.prune("moe-bias-etp", w, func() string { return fmt.Sprintf("MoE with linear biases needs etp=1, not %d", eff) })
				continue
			case moe != nil && d0.MoEFFNHidden%eff != 0:
				sv.prune("moe-ffn-etp", w, func() string {
					return fmt.Sprintf("the expert ffn_hidden=%d is not divisible by etp=%d", d0.MoEFFNHidden, eff)
				})
				continue
			case p.Order == spec.OrderPPDP && pp > 1 && edp != dp:
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
			gl := sv.linkCache.linksFor(p.Order, s.Cluster.NVLinkDomain, tp, cp, pp, dp, ep, eff, edp)
			if gl.etpLeaves {
				sv.prune("etp-crosses-nvlink", w, func() string {
					return fmt.Sprintf("etp=%d groups span two NVLink domains of %d GPUs", eff, s.Cluster.NVLinkDomain)
				})
				continue
			}
			sv.grids = append(sv.grids, gridInfo{links: gl, dp: dp, edp: edp, unit: sv.unitFor(tp, cp, ep, eff, gl.key)})
			grid := int32(len(sv.grids) - 1)
			sv.enumerateSchedule(grid, tp, cp, pp, ep, etp, dp)
		}
	}
}

// enumerateSchedule continues with the pipeline split and vpp, and makes a
// node of each (split, vpp) that passes the rules; the micro batches are
// checked and counted here, expanded when the search reaches the node.
func (sv *solver) enumerateSchedule(grid int32, tp, cp, pp, ep, etp, dp int) {
	p := sv.base.Parallel
	L := sv.base.Model.Layers
	group := pp
	if p.MicrobatchGroupSize != nil {
		group = *p.MicrobatchGroupSize
	}
	if sv.groupChosen {
		group = 0 // chosen per plan: batchRule
	}
	inner := int32(len(sv.dom[fRC]) * len(sv.shards))
	rc0 := sv.rcLeast
	for _, si := range sv.splitsOf[pp] {
		if sv.exhausted {
			return
		}
		sp := sv.splits[si]
		if code, msg := pipelineRule(L, pp, sp); code != "" && sv.layoutStages == 0 {
			sv.prune(code, sv.weightAfter(fFirst, pp), msg)
			continue
		}
		if n := sv.layoutStages; n > 0 && n%pp != 0 {
			sv.prune("pipeline-layout", sv.weightAfter(fFirst, pp), func() string {
				return fmt.Sprintf("parallel.layout has %d stages, not a multiple of pp=%d", n, pp)
			})
			continue
		}
		w := sv.weightAfter(fVPP, pp)
		vp := sv.vppPlanOf(pp, si)
		for _, r := range vp.runs {
			sv.prune(r.code, w*r.n, func() string {
				if r.code == duplicateSplit {
					return fmt.Sprintf("with pp=%d vpp=%d, %s gives every stage the layers of a simpler split", pp, r.value, sv.splits[si])
				}
				_, msg := sv.vppRule(pp, int(r.value), sp)
				return msg()
			})
		}
		for _, vpp32 := range vp.pass {
			if sv.exhausted {
				return
			}
			vpp := int(vpp32)
			if vpp > 1 && pp > 1 && group > 0 && group < pp {
				sv.prune("interleave-microbatches", w, func() string {
					return fmt.Sprintf("microbatch_group_size=%d is smaller than pp=%d", group, pp)
				})
				continue
			}
			nd := leaf{
				tp: int32(tp), cp: int32(cp), pp: int32(pp), ep: int32(ep), etp: int32(etp),
				vpp: int32(vpp), split: si, rc: int16(rc0), grid: grid, node: true,
			}
			mp := sv.batchPlanOf(pp, vpp, dp, group)
			wm := sv.weightAfter(fMB, pp)
			for _, r := range mp.runs {
				sv.prune(r.code, wm*r.n, func() string {
					_, msg := sv.batchRule(pp, vpp, dp, group, int(r.value))
					return msg()
				})
			}
			if len(mp.pass) == 0 {
				continue
			}
			sv.spend(int64(pp*vpp) + nodeWork)
			nd.mb = mp.pass[0]
			nd.n = int32(len(mp.pass)) * inner
			nd.key = sv.computeBound(&nd)
			sv.leaves.add(nd)
		}
	}
}

// pruneRun is n values of one level a rule rejects with code; value is the
// first of them (for the example).
type pruneRun struct {
	code  string
	n     int64
	value int32
}

// levelPlan is the values of one level that pass its rules and, in order of
// first appearance, the codes that reject the others.
type levelPlan struct {
	pass []int32
	runs []pruneRun
}

func (lp *levelPlan) add(code string, v int) {
	if code == "" {
		lp.pass = append(lp.pass, int32(v))
		return
	}
	for i := range lp.runs {
		if lp.runs[i].code == code {
			lp.runs[i].n++
			return
		}
	}
	lp.runs = append(lp.runs, pruneRun{code: code, n: 1, value: int32(v)})
}

// vppPlanOf is the vpp level under pp stages and split si: vppRule, then
// duplicateSplit. It depends on nothing else, so every grid with pp stages
// shares it.
func (sv *solver) vppPlanOf(pp int, si int32) *levelPlan {
	k := [2]int32{int32(pp), si}
	if lp, ok := sv.vppPlans[k]; ok {
		return lp
	}
	lp := &levelPlan{}
	// Each vpp's rules cost about an enumerated node (with the split
	// searched the domain is every vpp up to the layers: thousands on a
	// model of thousands of layers, for every pp and split).
	sv.spend(int64(len(sv.dom[fVPP])) * nodeWork)
	for _, vpp := range sv.dom[fVPP] {
		code, _ := sv.vppRule(pp, vpp, sv.splits[si])
		if code == "" && sv.duplicateSplit(pp, vpp, si) {
			code = duplicateSplit
		}
		lp.add(code, vpp)
	}
	sv.vppPlans[k] = lp
	return lp
}

// batchPlanOf is the micro batch level: batchRule, which reads vpp only as
// vpp > 1.
func (sv *solver) batchPlanOf(pp, vpp, dp, group int) *levelPlan {
	k := [4]int32{int32(pp), int32(min(vpp, 2)), int32(dp), int32(group)}
	if lp, ok := sv.batchPlans[k]; ok {
		return lp
	}
	lp := &levelPlan{}
	for _, mb := range sv.dom[fMB] {
		code, _ := sv.batchRule(pp, vpp, dp, group, mb)
		lp.add(code, mb)
	}
	sv.batchPlans[k] = lp
	return lp
}

// batchRule is the global batch's rules for one micro batch (B4/B5,
// P25/P26); group 0 is a group size parc chooses (some is valid when
// M ≥ pp: M itself).
func (sv *solver) batchRule(pp, vpp, dp, group, mb int) (string, func() string) {
	gbs := sv.base.Train.GlobalBatch
	if gbs%(mb*dp) != 0 {
		return "global-batch", func() string {
			return fmt.Sprintf("global_batch=%d is not divisible by micro_batch·dp = %d·%d", gbs, mb, dp)
		}
	}
	m := gbs / (mb * dp)
	if vpp > 1 && pp > 1 && group == 0 && m < pp {
		return "interleave-microbatches", func() string {
			return fmt.Sprintf("vpp=%d with %d microbatches: the interleaved schedule needs at least pp=%d", vpp, m, pp)
		}
	}
	if vpp > 1 && pp > 1 && group > 0 && (m < group || (m%group != 0 && m%group < pp)) {
		return "interleave-microbatches", func() string {
			return fmt.Sprintf("vpp=%d with %d microbatches: the interleaved schedule needs M ≥ %d and M mod %d = 0 or ≥ pp=%d", vpp, m, group, group, pp)
		}
	}
	return "", nil
}

// expand replaces node i by its nodes of one micro batch, or a node of one
// micro batch by its complete assignments, each with its first bound, and
// returns their indices. An assignment the memory found so far already
// rules out (memoryRules: a smaller micro batch of its variant did not
// fit) is rejected here instead: it would be when popped.
func (sv *solver) expand(i int32) []int32 {
	nd := *sv.leaves.at(i)
	if !nd.fixedMB && expandByMicroBatch {
		per := int32(sv.weightAfter(fMB, int(nd.pp)))
		var out []int32
		sv.eachMicroBatch(&nd, func(mb int32) {
			lf := nd
			lf.fixedMB, lf.n, lf.stage = true, per, 0
			lf.mb, lf.rc = mb, sv.rcLeast
			b, exact := sv.cheapBound(&lf)
			lf.key = b
			if exact {
				lf.stage = 2
			}
			out = append(out, sv.leaves.add(lf))
		})
		return out
	}
	out := make([]int32, 0, nd.n)
	sv.eachAssignment(&nd, func(mb int32, rc int16) {
		lf := nd
		lf.node, lf.fixedMB, lf.n, lf.stage = false, false, 1, 0
		lf.mb, lf.rc = mb, rc
		b, exact := sv.cheapBound(&lf)
		lf.key = b
		if exact {
			lf.stage = 2
		}
		for sh := range sv.shards {
			lf.shard = int8(sh)
			if sv.duplicateShard(sh) {
				sv.prune(duplicateSharding, 1, func() string {
					return "train.fsdp runs on the distributed optimizer (Megatron switches it on, and parc passes --use-distributed-optimizer with --use-megatron-fsdp): " +
						"with train.distributed_optimizer false it is the plan with true"
				})
				continue
			}
			if !sv.memoryRuledOut(&lf) {
				out = append(out, sv.leaves.add(lf))
			}
		}
	})
	return out
}

// expandByMicroBatch is expand's first level, nodes of one micro batch
// (on; TestMicroBatchNodesChangeNothing turns it off to compare).
var expandByMicroBatch = true

// variantsRuledOut reports whether the memory found so far rules out every
// assignment of node nd of one micro batch (memoryRules), and then rejects
// them.
func (sv *solver) variantsRuledOut(nd *leaf) bool {
	if !nd.fixedMB {
		return false
	}
	lf := *nd
	lf.node, lf.fixedMB = false, false
	variants := func(f func(*leaf)) {
		for _, rc := range sv.dom[fRC] {
			for sh := range sv.shards {
				lf.rc, lf.shard = int16(rc), int8(sh)
				f(&lf)
			}
		}
	}
	all := true
	variants(func(lf *leaf) { all = all && sv.memoryRules(lf) != "" })
	if all {
		variants(func(lf *leaf) { sv.memoryRuledOut(lf) })
	}
	return all
}

// eachMicroBatch calls f with every micro batch the batch rules allow for
// node nd, in the enumeration's order.
func (sv *solver) eachMicroBatch(nd *leaf, f func(mb int32)) {
	if nd.fixedMB {
		f(nd.mb)
		return
	}
	dp := sv.grids[nd.grid].dp
	group := int(nd.pp)
	if g := sv.base.Parallel.MicrobatchGroupSize; g != nil {
		group = *g
	}
	if sv.groupChosen {
		group = 0
	}
	for _, mb := range sv.batchPlanOf(int(nd.pp), int(nd.vpp), dp, group).pass {
		f(mb)
	}
}

// eachAssignment calls f with every micro batch the batch rules allow for
// node nd and every recompute mode, in the enumeration's order.
func (sv *solver) eachAssignment(nd *leaf, f func(mb int32, rc int16)) {
	sv.eachMicroBatch(nd, func(mb int32) {
		for _, rc := range sv.dom[fRC] {
			f(mb, int16(rc))
		}
	})
}

// duplicateSplit is what Result.Rejected counts the pipeline splits under
// that give every stage the same layers as a simpler split.
const duplicateSplit = "duplicate-split"

// duplicateSharding is what Result.Rejected counts the plans with FSDP and
// without the distributed optimizer under when the plan with both is tried
// too: Megatron runs them alike (duplicateShard).
const duplicateSharding = "duplicate-sharding"

// The enumeration's levels, in order; the pipeline split (a list per pp)
// sits between etp and vpp, the optimizer sharding after recompute.
var levels = []field{fTP, fCP, fPP, fEP, fETP, fFirst, fVPP, fMB, fRC, fDO}

// weightAfter is how many complete assignments a partial assignment up to
// and including level f stands for; pp is its pp once f is fPP or later
// (fFirst stands for the split level).
func (sv *solver) weightAfter(f field, pp int) int64 {
	i := slices.Index(levels, f)
	n := int64(1)
	for _, g := range levels[i+1:] {
		switch g {
		case fPP:
			// Σ over pp of its splits: the split level below is folded in.
			var sum int64
			for _, q := range sv.dom[fPP] {
				sum += int64(len(sv.splitsOf[q]))
			}
			n *= sum
		case fFirst:
			if slices.Index(levels, f) >= slices.Index(levels, fPP) {
				n *= int64(len(sv.splitsOf[pp]))
			}
		case fDO:
			n *= int64(len(sv.shards))
		default:
			n *= int64(len(sv.dom[g]))
		}
	}
	return n
}

// spaceSize is the number of complete assignments the search considers.
func (sv *solver) spaceSize() int64 {
	return int64(len(sv.dom[fTP])) * sv.weightAfter(fTP, 0)
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
	sv.infeasible++
	sv.leafRejected[code]++
	sv.reject(code, 1, example)
}
