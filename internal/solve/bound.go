package solve

import (
	"math"
	"slices"

	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/spec"
)

// The search's lower bounds of a leaf's step time, cheapest first. Each is
// at most the estimate's step time of every complete assignment it stands
// for (TestBoundsBelowStepTime samples it); a node (a grid, split and vpp
// standing for its micro batches, recompute modes and optimizer
// shardings) takes the least over them.
//
//  1. computeBound: (m + (p−1)/v) microbatch slots of the slowest pipeline
//     rank, which computes at least 1/p of the model's FLOPs at the
//     calibrated efficiency of a large GEMM, divided over tp·cp
//     (sampleCompute, one estimate per recompute mode).
//  2. stageBoundOf: the same with the whole model's microbatch bound as one
//     pipeline stage (Compute.MicrobatchBoundS: ideal compute, memory-bound
//     work and the bandwidth part of the exposed tp/ep/etp traffic),
//     computed once per unit (tp, cp, ep, etp and their links) for one
//     sample and scaled by the micro batch, plus the kernels' fixed cost
//     of a microbatch (Compute.KernelOverheadS per microbatch: a count of
//     kernels, the same for every micro batch; more with recomputation).
//  3. exactBoundOf: the same with the whole model's exact microbatch time as
//     one pipeline stage (Compute.MicrobatchTimeS), per unit, micro batch
//     and recompute mode — shared by every pp, vpp, split and dp with that
//     unit, so the GEMM costs of one layer shape are estimated once.
//  4. rerunBoundOf: for full recomputation whose layers parc chooses, the
//     third bound with the layers the leaf reruns once fitLeaf has chosen
//     them (the third bound itself reruns one layer, the least any such leaf
//     reruns): every layer, or, when the model's decoder layers are all of
//     one kind (all dense or all MoE, so any layers cost alike), as many
//     layers as the leaf reruns over all its model chunks. Each layer is
//     timed by its shape whatever rank it sits on, so the one-stage plan
//     rerunning the same number of layers of the same kinds does the same
//     work as the leaf's ranks together.
//  5. behindDataParallel: any of these plus estimate.OverlapResidual of the
//     data-parallel collectives' time, once a plan of the leaf's state
//     (grid, vpp, split, optimizer sharding) has been timed: the step waits
//     for at least that share of them beside the pipeline's time, and their
//     time changes with the micro batch only through the microbatches a
//     step (dataParallelFloor.at). With Megatron-FSDP the state's first
//     leaf is timed before its memory (shardedFloor).
//
// Why the one-stage time bounds a pipelined plan: a pipeline rank's
// microbatch time is the time of its layers (each layer's time depends on
// the layer's shape, not on the rank it sits on), the embedding on the
// first rank and the output layer on the last, plus per axis the exposed
// part of its communication, max(residual·t, t − what hides it), which is
// convex, so summed over the ranks it is at least that of the sums; and the
// point-to-point sends, which the one-stage plan does not have. So the p
// ranks' microbatch times add up to at least T, the slowest takes at least
// T/p, and the step, (m + (p−1)/v) times the slowest rank's microbatch plus
// the data-parallel wait and the optimizer step, at least
// (m + (p−1)/v)·T/p. More recomputation only adds time (it adds FLOPs and
// bytes; the longer attention it hides context-parallel traffic behind is
// the recomputed attention itself, and what it hides expert traffic behind
// is half the compute it adds), so the unit of the least recomputation
// bounds the others.

// unitKey is what the whole model's microbatch time as one pipeline stage
// depends on besides the micro batch and the recompute mode: the degrees
// that shape each layer's work and the links of their groups.
type unitKey struct {
	tp, cp, ep, etp int32
	links           string
}

// unit caches the one-stage estimates of one unitKey.
type unit struct {
	// sample is the second bound's microbatch bound for one sample (0: not
	// computed), fixed the kernels' fixed cost of one microbatch.
	sample, fixed float64
	// exact[mbIndex·len(recomputes) + rc] is the third bound's microbatch
	// time (−1: not computed).
	exact []float64
	// rerun[{mb, K}] is the fourth bound's microbatch time, the whole model
	// as one stage with full recomputation of its first K layers (K = −1:
	// every layer).
	rerun map[[2]int32]float64
}

// unitFor returns the unit index of a grid's degrees and links.
func (sv *solver) unitFor(tp, cp, ep, etp int, links string) int32 {
	k := unitKey{int32(tp), int32(cp), int32(ep), int32(etp), links}
	if i, ok := sv.unitOf[k]; ok {
		return i
	}
	sv.units = append(sv.units, unit{})
	sv.unitOf[k] = int32(len(sv.units) - 1)
	return int32(len(sv.units) - 1)
}

// prepareBounds computes one sample's compute time through the whole model
// per recompute mode: the same spec on one GPU (tp = cp = pp = 1, whose
// padded vocabulary is the smallest), one microbatch of one sample; and
// the tables the other bounds use.
func (sv *solver) prepareBounds() {
	sv.sampleCompute = make([]float64, len(sv.recomputes))
	for _, rc := range sv.dom[fRC] {
		s := sv.base
		s.Cluster.Nodes, s.Cluster.GPUsPerNode, s.Cluster.NVLinkDomain = 1, 1, 1
		p := &s.Parallel
		p.TP, p.CP, p.PP, p.VPP, p.EP = 1, 1, 1, 1, 1
		p.ETP, p.DP, p.SP, p.MicrobatchGroupSize = nil, nil, nil, nil
		p.FirstStageLayers, p.LastStageLayers, p.Layout = nil, nil, nil
		p.AccountForEmbedding, p.AccountForLoss = false, false
		s.Train.MicroBatch, s.Train.GlobalBatch = 1, 1
		sv.recomputes[rc].apply(&s.Train)
		s.Train.DistributedOptimizer, s.Train.FSDP = false, false
		d := spec.Derive(&s)
		e := estimate.StepTime(&s, d, allNVLink)
		sv.spendEstimates(1)
		sv.sampleCompute[rc] = e.Compute.IdealTimeS // proportional to FLOPs, below any plan's compute
	}
	moe := spec.Derive(&sv.base).MoELayers
	sv.oneLayerKind = !slices.Contains(moe, true) || !slices.Contains(moe, false)
	sv.rcLeast = int16(sv.dom[fRC][0])
	for _, rc := range sv.dom[fRC] {
		if sv.sampleCompute[rc] < sv.sampleCompute[sv.rcLeast] {
			sv.rcLeast = int16(rc)
		}
	}
	sv.mbs = sv.mbs[:0]
	for _, mb := range sv.dom[fMB] {
		sv.mbs = append(sv.mbs, int32(mb))
	}
	slices.Sort(sv.mbs)
	sv.unitOf = map[unitKey]int32{}
	sv.units = sv.units[:0]
	sv.vppPlans = map[[2]int32]*levelPlan{}
	sv.batchPlans = map[[4]int32]*levelPlan{}
}

var allNVLink = map[string]string{
	"tp": estimate.LinkNVLink, "cp": estimate.LinkNVLink, "dp": estimate.LinkNVLink, "dp-cp": estimate.LinkNVLink,
	"pp": estimate.LinkNVLink, "embd": estimate.LinkNVLink, "ep": estimate.LinkNVLink, "etp": estimate.LinkNVLink,
	"edp": estimate.LinkNVLink,
}

// oneStage is estimate.Run on the leaf's spec as one pipeline stage with
// micro batch mb and recompute mode rc.
func (sv *solver) oneStage(lf *leaf, mb int32, rc int16) *estimate.Estimate {
	return sv.oneStageRerun(lf, mb, rc, 0)
}

// oneStageRerun is oneStage with full recomputation of the first rerun
// layers of the whole model (−1: every layer; 0: as the recompute mode
// says, whatever layers the leaf reruns: one with the block method).
func (sv *solver) oneStageRerun(lf *leaf, mb int32, rc int16, rerun int) *estimate.Estimate {
	one := *lf
	one.mb, one.rc, one.rl = mb, rc, 0
	s := &sv.oneScratch
	sv.leafSpecAt(&one, s)
	if rerun != 0 {
		setRecomputeLayers(&s.Train, rerun)
	}
	p := &s.Parallel
	p.PP, p.VPP = 1, 1
	p.FirstStageLayers, p.LastStageLayers, p.Layout = nil, nil, nil
	p.AccountForEmbedding, p.AccountForLoss = false, false
	p.MicrobatchGroupSize, p.DP = nil, nil
	s.Train.DistributedOptimizer, s.Train.FSDP = false, false
	// Time does not depend on the GPU's memory; the whole model on one
	// stage rarely fits, and the diagnostic would only cost time.
	s.Cluster.GPU.MemoryGiB = 0
	e := estimate.StepTime(s, spec.Derive(s), sv.grids[lf.grid].links.links)
	sv.boundEstimates++
	sv.spendEstimates(1)
	return e
}

// microbatches is the leaf's microbatches per step.
func (sv *solver) microbatches(lf *leaf) int {
	return sv.base.Train.GlobalBatch / (int(lf.mb) * sv.grids[lf.grid].dp)
}

// slots is the bounds' factor (m + (p−1)/v)/p for the leaf's micro batch.
func (sv *solver) slots(lf *leaf) float64 {
	m := float64(sv.microbatches(lf))
	return (m + float64(lf.pp-1)/float64(lf.vpp)) / float64(lf.pp)
}

// computeBound is the first bound.
func (sv *solver) computeBound(lf *leaf) float64 {
	return sv.slots(lf) * float64(lf.mb) * sv.sampleCompute[lf.rc] / float64(lf.tp*lf.cp)
}

// stageBoundOf is the second bound.
func (sv *solver) stageBoundOf(lf *leaf) float64 {
	u := &sv.units[sv.grids[lf.grid].unit]
	if u.sample == 0 {
		e := sv.oneStage(lf, 1, sv.rcLeast)
		u.sample = max(e.Compute.MicrobatchBoundS, math.SmallestNonzeroFloat64)
		u.fixed = e.Compute.KernelOverheadS / float64(max(e.Pipeline.Microbatches, 1))
	}
	return sv.slots(lf) * (float64(lf.mb)*u.sample + u.fixed)
}

// exactUnit returns the third bound's unit of the leaf's grid for micro
// batch mb and recompute mode rc, computing it if compute is set; ok is
// false when it is not known.
func (sv *solver) exactUnit(lf *leaf, mb int32, rc int16, compute bool) (T float64, ok bool) {
	u := &sv.units[sv.grids[lf.grid].unit]
	if u.exact == nil {
		u.exact = make([]float64, len(sv.recomputes)*len(sv.mbs))
		for i := range u.exact {
			u.exact[i] = -1
		}
	}
	j, _ := slices.BinarySearch(sv.mbs, mb)
	x := &u.exact[j*len(sv.recomputes)+int(rc)]
	if *x < 0 {
		if !compute {
			return 0, false
		}
		*x = sv.oneStage(lf, mb, rc).Compute.MicrobatchTimeS
	}
	return *x, true
}

// exactBoundOf is the third bound of a leaf; with compute false, ok is
// false when its unit is not known yet.
func (sv *solver) exactBoundOf(lf *leaf, compute bool) (b float64, ok bool) {
	T, ok := sv.exactUnit(lf, lf.mb, lf.rc, compute)
	if !ok {
		return 0, false
	}
	return sv.slots(lf) * T, true
}

// rerunBoundOf is the fourth bound of leaf lf when its full recomputation
// reruns rl layers of each model chunk (−1: every layer), with d its
// derived values; ok is false where it does not apply (not full
// recomputation parc chooses the layers of, or fewer than every layer of a
// model whose decoder layers are not all of one kind).
func (sv *solver) rerunBoundOf(lf *leaf, rl int32, d spec.Derived) (b float64, ok bool) {
	if !sv.recomputes[lf.rc].layersImplied || rl == 0 {
		return 0, false
	}
	K := -1
	if rl > 0 {
		if !sv.oneLayerKind {
			return 0, false
		}
		K = 0
		for _, st := range d.Stages {
			for _, ch := range st {
				K += min(int(rl), ch.Count)
			}
		}
	}
	u := &sv.units[sv.grids[lf.grid].unit]
	key := [2]int32{lf.mb, int32(K)}
	T, ok := u.rerun[key]
	if !ok {
		T = sv.oneStageRerun(lf, lf.mb, lf.rc, K).Compute.MicrobatchTimeS
		if u.rerun == nil {
			u.rerun = map[[2]int32]float64{}
		}
		u.rerun[key] = T
	}
	return sv.slots(lf) * T, true
}

// cheapBound is the best bound of a leaf that costs no new estimate but
// the second bound's unit: the third when its unit is known, else the
// first two and the third of the least recomputation when that is known;
// exact says whether it is the leaf's own third bound.
func (sv *solver) cheapBound(lf *leaf) (b float64, exact bool) {
	sv.spend(boundWork)
	if x, ok := sv.exactBoundOf(lf, false); ok {
		return x, true
	}
	b = max(sv.computeBound(lf), sv.stageBoundOf(lf))
	if lf.rc != sv.rcLeast {
		if T, ok := sv.exactUnit(lf, lf.mb, sv.rcLeast, false); ok {
			b = max(b, sv.slots(lf)*T)
		}
	}
	return b, false
}

// nodeExactBound is the third bound of a node: the least over its micro
// batches of the third bound with the least recomputation, which bounds
// every recompute mode's (the leaves get their own when they are popped).
// It computes the units lazily, least bound first, and stops when the least
// is exact (done) or above limit: the node is then behind another or past
// the threshold, and goes on when it is popped again.
func (sv *solver) nodeExactBound(nd *leaf, limit float64) (b float64, done bool) {
	type pair struct {
		mb    int32
		b     float64
		exact bool
	}
	pairs := sv.pairs[:0]
	lf := *nd
	lf.rc = sv.rcLeast
	sv.eachMicroBatch(nd, func(mb int32) {
		lf.mb = mb
		x, ok := sv.cheapBound(&lf)
		pairs = append(pairs, pair{mb, x, ok})
	})
	sv.pairs = pairs
	for {
		arg := -1
		for j := range pairs {
			if arg < 0 || pairs[j].b < pairs[arg].b {
				arg = j
			}
		}
		if arg < 0 {
			return math.Inf(1), true
		}
		p := &pairs[arg]
		if p.exact || p.b > limit {
			return p.b, p.exact
		}
		lf.mb = p.mb
		x, _ := sv.exactBoundOf(&lf, true)
		p.b, p.exact = max(p.b, x), true
	}
}

// tighten raises the bound of leaf or node i (just popped) to its third
// bound, and pushes it back when that moves it behind the top of the heap
// or past threshold(k); it reports whether it did.
func (sv *solver) tighten(i int32, k int) bool {
	lf := sv.leaves.at(i)
	if lf.stage >= 2 || sv.opts.Exhaustive {
		return false
	}
	limit := sv.reach(k)
	if len(sv.heap) > 0 {
		limit = min(limit, sv.heap[0].key)
	}
	var b float64
	if lf.node {
		var done bool
		b, done = sv.nodeExactBound(lf, limit)
		if done {
			lf.stage = 2
		}
	} else {
		b, _ = sv.exactBoundOf(lf, true)
		lf.stage = 2
	}
	lf.key = max(lf.key, b)
	if lf.stage < 2 || lf.key > limit || len(sv.heap) > 0 && heapLess(sv.heap[0], heapItem{lf.key, i}) {
		sv.push(i)
		return true
	}
	return false
}
