package solve

import (
	"fmt"
	"math"
	"slices"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/spec"
)

// search is the state of the branch and bound.
type search struct {
	budget
	leaves leafStore
	grids  []gridInfo
	heap   []heapItem // leaves and nodes, a min-heap on (key, index)

	// sampleCompute[rc] is one sample's compute through the whole model at
	// tp = cp = 1 (seconds): the first bound's unit.
	sampleCompute []float64
	// units are the one-stage estimates the second and third bounds
	// scale, one per unitKey (gridInfo.unit indexes them).
	units  []unit
	unitOf map[unitKey]int32
	// mbs is the micro batch domain, ascending (a leaf's micro batch's
	// index in it indexes unit.exact).
	mbs []int32
	// rcLeast is the recompute mode of least compute.
	rcLeast int16
	// oneLayerKind: the model's decoder layers are all dense or all MoE
	// (rerunBoundOf).
	oneLayerKind bool
	// pairs is nodeExactBound's scratch table.
	pairs []struct {
		mb    int32
		b     float64
		exact bool
	}
	// vppPlans and batchPlans cache the vpp and micro batch levels of the
	// enumeration, which depend on few of the levels above.
	vppPlans   map[[2]int32]*levelPlan
	batchPlans map[[4]int32]*levelPlan
	// stateTooLarge marks (grid, vpp, split, shard) whose weights,
	// gradients and optimizer state alone exceed the memory headroom.
	// The value is the code a leaf there is rejected with.
	stateTooLarge map[stateKey]string
	linkCache     linkCache
	// layouts are the generated layouts of (split, pp, vpp) (applySplit).
	layouts map[[3]int32]layoutOf
	// openLayouts are the layouts plans write with parallel.layout open
	// (openLayoutOf).
	openLayouts map[openLayoutKey]layoutOf
	// scratch is the spec evaluateLeaf writes a leaf into; oneScratch the
	// one oneStage writes a leaf's one-stage plan into (evaluateLeaf's
	// bounds need one while it holds the other).
	scratch, oneScratch spec.Spec
	// memoryFailed rules out the larger micro batches of a variant that
	// did not fit.
	memoryFailed map[memKey]memFail
	// noneFits is the step time of each variant and micro batch found
	// feasible without recomputation (behindNone).
	noneFits map[noneKey]float64
	// shardBroken is, per optimizer sharding, the first error of a plan
	// that broke only rules the sharding decides (shardingRuledOut).
	shardBroken map[int8]string
	// dataParallelFloors are the data-parallel collectives' time of a plan
	// estimated in each state (behindDataParallel).
	dataParallelFloors map[stateKey]dataParallelFloor
	// rerunFloors are, per variant of full recomputation whose layers parc
	// chooses, the layers fitLeaf chose at the micro batches estimated
	// (rerunFloor).
	rerunFloors map[memKey][]rerunAt

	found []foundPlan // feasible leaves, in the order found
	// shapeBest is the least step time found for each parallel shape
	// with one pipeline split (shapeKey); shapeTimes is the least of each
	// distinct parallel shape (its splits together, as candidates list
	// them), ascending, and distinctBest those values by shape.
	shapeBest    map[shapeKey]float64
	distinctBest map[shapeKey]float64
	shapeTimes   []float64
	// parked are leaves and nodes out of the heap whose shapes cannot be
	// among the top shapes (outranked); fail pushes them back.
	parked []int32
	// outranking caches outranked's simplicity bound: the k-th simplest
	// shape in the noise band (none when fewer are), made when found had
	// outrankingAt plans (−1: not made). Between verification failures
	// (fail) plans are only added, so the count says when to make it anew.
	outranking   *[8]int
	outrankingAt int
	// failed marks found leaves whose verification failed.
	failed map[int32]bool

	checked      int
	firstChecked int32 // a leaf check.Run saw
	evaluated    int
	pruned       int64
	// infeasible counts the leaves that passed the rules and failed
	// later (check.Run, memory, the headroom, the verification).
	infeasible int64
	// boundEstimates counts the one-stage estimates of the second bound.
	boundEstimates int
	rejected       map[string]int64
	// leafRejected counts, per code, the complete assignments that passed
	// the rules and failed check.Run or the estimate.
	leafRejected map[string]int64
	examples     map[string]string
	// common counts each check error (code, path, message) over the leaves
	// check.Run saw; an error every leaf has does not depend on the open
	// fields and is reported as it is.
	common map[diagKey]int
	// verifyFailed counts the found plans whose verification (resolve with
	// the targets' checks) failed; verifyCommon counts each of their errors,
	// and an error all of them have is reported as it is, like common's
	// (the targets' checks, a data path read as an option, run only there).
	verifyFailed int
	verifyCommon map[diagKey]sharedDiag
	// smallest is the least peak memory among plans that did not fit;
	// leastState the one whose most loaded stage's weights, gradients and
	// optimizer state alone were the least over the headroom (its peak is
	// that state: the search skips the shape's other variants).
	smallest      foundPlan
	hasSmallest   bool
	leastState    foundPlan
	hasLeastState bool
}

type foundPlan struct {
	leaf int32
	step float64
	peak int64
	frac float64
}

type stateKey struct{ grid, vpp, split, shard int32 }

// memKey is a leaf but its micro batch; memFail the smallest micro batch
// found above the memory limit with it.
type memKey struct {
	stateKey
	rc int16
}

// rerunAt is the layers per model chunk fitLeaf chose (−1: every layer)
// for micro batch mb, whose smallest group size parc could choose is g.
type rerunAt struct {
	mb, g int32
	rl    int32
}

// rerunMore reports whether rerunning a layers per model chunk reruns more
// than b (−1, every layer, is the most).
func rerunMore(a, b int32) bool {
	if a == b || b == -1 {
		return false
	}
	return a == -1 || a > b
}

// rerunFloor is the fewest layers per model chunk the full recomputation
// of leaf lf can rerun (0: not known), from the layers fitLeaf chose for
// the same variant with a micro batch at most lf's and a smallest group at
// most lf's: the peak memory of a variant with given layers does not fall
// as the micro batch grows (memoryRules' premise), so the least number of
// layers that fits does not fall either. TestRerunFloorSound samples it.
func (sv *solver) rerunFloor(lf *leaf) int32 {
	var rl int32
	g := int32(sv.groupMin(lf))
	for _, at := range sv.rerunFloors[sv.variantKey(lf)] {
		if at.mb <= lf.mb && at.g <= g && (rl == 0 || rerunMore(at.rl, rl)) {
			rl = at.rl
		}
	}
	return rl
}

// noteRerun records the layers fitLeaf chose for leaf lf (rerunFloor).
func (sv *solver) noteRerun(lf *leaf, rl int32) {
	if !sv.recomputes[lf.rc].layersImplied || rl == 0 || sv.opts.Exhaustive {
		return
	}
	k := sv.variantKey(lf)
	sv.rerunFloors[k] = append(sv.rerunFloors[k], rerunAt{mb: lf.mb, g: int32(sv.groupMin(lf)), rl: rl})
}

type noneKey struct {
	stateKey
	mb int32
}

type memFail struct {
	mb   int32
	code string
	// g is the smallest group size parc could choose with mb (0: it does
	// not choose it): a larger micro batch with a smaller smallest group
	// may hold fewer activations.
	g int32
	// state and rest split the peak pipeline stage's memory with mb: its
	// weights, gradients and optimizer state, and the rest (activations,
	// the flex dispatcher's buffer); gpu is the GPU's memory.
	state, rest, gpu int64
}

// newMemFail is what leaf lf, with memory mem above the limit (code),
// rules out of its variant.
func (sv *solver) newMemFail(lf *leaf, code string, mem estimate.Memory) memFail {
	st := mem.Stages[mem.PeakStage]
	state := st.Weights + st.Gradients + st.Optimizer
	return memFail{mb: lf.mb, code: code, g: int32(sv.groupMin(lf)), state: state, rest: st.Total - state, gpu: mem.GPUBytes}
}

// peakBelow is a lower bound of the peak memory of the variant with a
// smaller micro batch mb (with a smallest group at least g): the stage's
// state, and the rest scaled by mb/f.mb. What the rest holds per sample
// does not fall as the micro batch shrinks: the activations of a
// microbatch grow with its tokens (the logits, the expert inputs and the
// flex dispatcher's buffer too) and no slower, the microbatches in flight
// do not fall as there are more of them, what offloading moves to the host
// keeps a margin and skips tensors below a size (more stays on the GPU
// with fewer tokens), and a fixed part scaled down only lowers the bound.
// TestMemoryBelowSound samples it against the estimate.
func (f memFail) peakBelow(mb int32) float64 {
	return float64(f.state) + float64(f.rest)*float64(mb)/float64(f.mb)
}

// restBelow is a lower bound of what the peak stage holds beside its
// state with micro batch mb: the rest scaled as peakBelow scales it below
// f.mb, and at least the rest above it.
func (f memFail) restBelow(mb int32) float64 {
	return float64(f.rest) * min(1, float64(mb)/float64(f.mb))
}

// failedFor is the memory failure recorded under k that applies to leaf
// lf: none in an exhaustive search, or where lf's smallest group is below
// the failed plan's (a smaller group can need less).
func (sv *solver) failedFor(k memKey, lf *leaf) (memFail, bool) {
	f, ok := sv.memoryFailed[k]
	if !ok || sv.opts.Exhaustive || int32(sv.groupMin(lf)) < f.g {
		return memFail{}, false
	}
	return f, true
}

// recordFailed keeps f under k unless a failure with a smaller micro batch
// is there: it bounds more leaves.
func (sv *solver) recordFailed(k memKey, f memFail) {
	if old, ok := sv.memoryFailed[k]; !ok || f.mb < old.mb {
		sv.memoryFailed[k] = f
	}
}

func (sv *solver) variantKey(lf *leaf) memKey {
	return memKey{stateKey{lf.grid, lf.vpp, lf.split, int32(lf.shard)}, lf.rc}
}

type diagKey struct{ code, path, message string }

// sharedDiag is an error and how many failed verifications had it.
type sharedDiag struct {
	n int
	x diag.Diagnostic
}

// leafSpec is the base spec with the leaf's values.
func (sv *solver) leafSpec(lf *leaf) spec.Spec {
	var s spec.Spec
	sv.leafSpecAt(lf, &s)
	return s
}

// leafSpecAt writes leafSpec(lf) into s (the search's hot paths write the
// solver's scratch spec instead of a new one each time).
func (sv *solver) leafSpecAt(lf *leaf, s *spec.Spec) {
	*s = sv.base
	p := &s.Parallel
	p.TP, p.CP, p.PP, p.EP, p.VPP = int(lf.tp), int(lf.cp), int(lf.pp), int(lf.ep), int(lf.vpp)
	p.ETP = nil
	if lf.etp != etpFollowsTP {
		v := int(lf.etp)
		p.ETP = &v
	}
	s.Train.MicroBatch = int(lf.mb)
	sv.recomputes[lf.rc].apply(&s.Train)
	if sv.recomputes[lf.rc].layersImplied && lf.rl != 0 {
		setRecomputeLayers(&s.Train, int(lf.rl))
	}
	sv.applySplit(lf.split, p)
	sv.shards[lf.shard].apply(&s.Train)
	if sv.groupChosen {
		setGroup(p, lf.g)
	}
}

// applySplit is split si's apply on p, a generated layout written once
// per (split, pp, vpp).
func (sv *solver) applySplit(si int32, p *spec.Parallel) {
	sp := sv.splits[si]
	if sp.layout == 0 {
		sp.apply(p)
		return
	}
	k := [3]int32{si, int32(p.PP), int32(p.VPP)}
	l, ok := sv.layouts[k]
	if !ok {
		sv.spend(int64(sp.layers) + nodeWork)
		l.s, l.ok = sp.layoutFor(p.PP, p.VPP)
		if sv.layouts == nil {
			sv.layouts = map[[3]int32]layoutOf{}
		}
		sv.layouts[k] = l
	}
	placeLayout(p, l.s, l.ok)
}

// layoutOf is a split's layoutFor.
type layoutOf struct {
	s  string
	ok bool
}

// heapItem is a leaf or node in the heap with its key at the time it was
// pushed (a leaf's key only changes while it is out of the heap).
type heapItem struct {
	key float64
	i   int32
}

// Heap on (key, index).
func heapLess(a, b heapItem) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.i < b.i
}

func (sv *solver) heapify() {
	sv.heap = make([]heapItem, sv.leaves.len())
	for i := range sv.heap {
		sv.heap[i] = heapItem{sv.leaves.at(int32(i)).key, int32(i)}
	}
	sv.reheap()
}

// The heap is 4-ary: half the levels of a binary heap, and a node's
// children side by side in memory. Which item a pop returns depends only on
// the items in the heap (the order on (key, index) is total), never on its
// shape.
const heapArity = 4

// reheap restores the heap order of the whole array.
func (sv *solver) reheap() {
	if len(sv.heap) < 2 {
		return // (−1/4 is 0 in Go)
	}
	for i := (len(sv.heap) - 2) / heapArity; i >= 0; i-- {
		sv.down(i)
	}
}

func (sv *solver) down(i int) {
	h := sv.heap
	x := h[i]
	for {
		first := heapArity*i + 1
		if first >= len(h) {
			break
		}
		j := first
		for c := first + 1; c < min(first+heapArity, len(h)); c++ {
			if heapLess(h[c], h[j]) {
				j = c
			}
		}
		if !heapLess(h[j], x) {
			break
		}
		h[i] = h[j]
		i = j
	}
	h[i] = x
}

func (sv *solver) up(i int) {
	h := sv.heap
	x := h[i]
	for i > 0 {
		parent := (i - 1) / heapArity
		if !heapLess(x, h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = x
}

func (sv *solver) pop() int32 {
	h := sv.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	sv.heap = h[:last]
	if last > 0 {
		sv.down(0)
	}
	return top.i
}

func (sv *solver) push(i int32) {
	sv.heap = append(sv.heap, heapItem{sv.leaves.at(i).key, i})
	sv.up(len(sv.heap) - 1)
}

// threshold is the step time past which no leaf can change the top k
// shapes: every shape within the noise band of the fastest, and the k
// fastest shapes (+Inf while fewer than k shapes are known).
func (sv *solver) threshold(k int) float64 {
	if len(sv.shapeTimes) < k {
		return math.Inf(1)
	}
	return max(sv.shapeTimes[0]*(1+sv.opts.NoiseBand), sv.shapeTimes[k-1])
}

// reach is the bound past which the search leaves a leaf: threshold(k)
// with room for the last bit of a sum, +Inf in an exhaustive search.
func (sv *solver) reach(k int) float64 {
	if sv.opts.Exhaustive {
		return math.Inf(1)
	}
	return sv.threshold(k) * (1 + 1e-9)
}

// searchTo estimates leaves in order of their bound until every leaf left
// is bounded above threshold(k).
func (sv *solver) searchTo(k int) {
	for len(sv.heap) > 0 && !sv.exhausted {
		i := sv.heap[0].i
		lf := sv.leaves.at(i)
		if lf.key > sv.reach(k) {
			return
		}
		sv.pop()
		if sv.spend(leafWork) {
			return
		}
		if parkOutranked && sv.outranked(lf, k) {
			sv.parked = append(sv.parked, i)
			continue
		}
		if lf.node {
			if code := sv.stateTooLarge[stateKey{lf.grid, lf.vpp, lf.split, -1}]; code != "" {
				sv.infeasible += int64(lf.n)
				sv.rejected[code] += int64(lf.n)
				sv.leafRejected[code] += int64(lf.n)
				continue
			}
			if sv.variantsRuledOut(lf) || sv.tighten(i, k) {
				continue
			}
			for _, j := range sv.expand(i) {
				sv.push(j)
			}
			continue
		}
		if sv.shardingRuledOut(lf) || sv.memoryRuledOut(lf) || sv.tighten(i, k) || sv.behindNone(i, k) || sv.behindDataParallel(i, k) {
			continue
		}
		limit := sv.reach(k)
		if !deferGroupChoice {
			limit = math.Inf(1)
		}
		sv.evaluate(i, limit)
	}
}

// outranked reports whether leaf or node lf (just popped) can change
// neither the fastest plan nor the top k shapes. Every leaf left has a
// bound at least lf's; when that is at least the fastest step time found,
// the fastest is final, and so is the noise band, and which shapes found
// are in it. The top shapes are the simplest in the band
// (ranked): with k shapes in the band all strictly simpler than lf's,
// lf's shape is not among them whatever its plans' step times.
func (sv *solver) outranked(lf *leaf, k int) bool {
	if sv.opts.Exhaustive || len(sv.shapeTimes) < k || lf.key < sv.shapeTimes[0] {
		return false
	}
	if sv.outrankingAt != len(sv.found) {
		// Distinct parallel shapes: a shape's other splits fold under
		// its simplest in the band (run), so each counts once.
		simplest := map[shapeKey][8]int{}
		for sh, t := range sv.shapeBest {
			if sv.inBand(t, sv.shapeTimes[0]) {
				k, sim := sh.distinct(), sv.simplicity(sh)
				if old, ok := simplest[k]; !ok || slices.Compare(sim[:], old[:]) < 0 {
					simplest[k] = sim
				}
			}
		}
		var in [][8]int
		for _, sim := range simplest {
			in = append(in, sim)
		}
		sv.outranking, sv.outrankingAt = nil, len(sv.found)
		if len(in) >= k {
			slices.SortFunc(in, func(a, b [8]int) int { return slices.Compare(a[:], b[:]) })
			sv.outranking = &in[k-1]
		}
	}
	if sv.outranking == nil {
		return false
	}
	sim := sv.simplicity(sv.shapeOf(lf))
	return slices.Compare(sim[:], sv.outranking[:]) > 0
}

// behindNone raises the bound of leaf i (just popped) when parc chooses the
// layers its full recomputation reruns and the same plan without
// recomputation fits: rerunning layers only adds work (their forward again,
// and with it their forward collectives), so it is at least as slow as that
// plan. It pushes the leaf back as raise does.
func (sv *solver) behindNone(i int32, k int) bool {
	lf := sv.leaves.at(i)
	if !sv.recomputes[lf.rc].layersImplied || sv.opts.Exhaustive {
		return false
	}
	step, ok := sv.noneFits[noneKey{sv.variantKey(lf).stateKey, lf.mb}]
	return ok && sv.raise(i, k, step)
}

// raise sets the bound of leaf i (just popped) to b when that is higher,
// and pushes the leaf back when that moves it behind the top of the heap
// or past threshold(k); it reports whether it did.
func (sv *solver) raise(i int32, k int, b float64) bool {
	lf := sv.leaves.at(i)
	if b <= lf.key {
		return false
	}
	lf.key = b
	limit := sv.reach(k)
	if lf.key > limit || len(sv.heap) > 0 && heapLess(sv.heap[0], heapItem{lf.key, i}) {
		sv.push(i)
		return true
	}
	return false
}

// dataParallelFloor is the time t of the data-parallel collectives (the dp
// and edp comms' TimeS) of a plan estimated with m microbatches a step.
type dataParallelFloor struct {
	t float64
	m int
}

// at is the least time the collectives of a plan of the same state with m
// microbatches take. Their time does not depend on the micro batch,
// recomputation or group size but through m: the distributed optimizer's
// and plain DDP's once a step, Megatron-FSDP's gradient reduce-scatter
// every microbatch (its gather once with optim_grads, every microbatch
// with full sharding), so t·min(1, m/f.m) is at most theirs.
func (f dataParallelFloor) at(m int) float64 {
	return f.t * min(1, float64(m)/float64(f.m))
}

// behindDataParallel raises the bound of leaf i (just popped) by what its
// step waits for the data-parallel collectives at least, once a plan of
// its state (grid, vpp, split, optimizer sharding) has been estimated: the
// step is the pipeline's time, which the bounds bound, plus the exposed
// part of those collectives, at least estimate.OverlapResidual of their
// time whatever compute they overlap. Megatron-FSDP's collectives every
// microbatch make it large: without it a search with train.fsdp open
// estimated every sharded variant of the shapes near the fastest. It
// pushes the leaf back as raise does.
func (sv *solver) behindDataParallel(i int32, k int) bool {
	lf := sv.leaves.at(i)
	if sv.opts.Exhaustive {
		return false
	}
	f, ok := sv.dataParallelFloors[stateKey{lf.grid, lf.vpp, lf.split, int32(lf.shard)}]
	if !ok {
		return false
	}
	b, _ := sv.cheapBound(lf)
	return sv.raise(i, k, b+estimate.OverlapResidual*f.at(sv.microbatches(lf)))
}

// shardedFloor learns what the data-parallel collectives of a Megatron-FSDP
// leaf's state take before its memory is estimated, with one step-time
// estimate for the state (behindDataParallel's floor; FSDP's reductions and
// gathers every microbatch are large, and most FSDP leaves a search reaches
// do not fit, so without it their memory is estimated before any of their
// state's plans is timed). ok reports that the leaf's bound with it, b, is
// above limit. Leaves whose rules have not run yet (late) only read it.
func (sv *solver) shardedFloor(lf *leaf, s *spec.Spec, d spec.Derived, late bool, limit float64) (b float64, ok bool) {
	if !sv.shards[lf.shard].fsdp || math.IsInf(limit, 1) || sv.opts.Exhaustive {
		return 0, false
	}
	k := stateKey{lf.grid, lf.vpp, lf.split, int32(lf.shard)}
	f, known := sv.dataParallelFloors[k]
	if !known {
		if late {
			return 0, false
		}
		e := estimate.StepTime(s, d, sv.grids[lf.grid].links.links)
		sv.spendEstimates(1)
		f = dataParallelFloor{e.Comms["dp"].TimeS + e.Comms["edp"].TimeS, sv.microbatches(lf)}
		sv.dataParallelFloors[k] = f
	}
	b, _ = sv.cheapBound(lf)
	b += estimate.OverlapResidual * f.at(sv.microbatches(lf))
	return b, b > limit
}

// shardingRuledOut rejects a leaf whose optimizer sharding a plan estimated
// before broke only rules check.FixedBySharding names (the overlapped
// parameter gather or fp8 parameter gathering without the distributed
// optimizer): every plan with it breaks them, and checking each would cost
// the search most of its time when the spec sets one and leaves the sharding
// open. It is counted under that plan's first error.
func (sv *solver) shardingRuledOut(lf *leaf) bool {
	code := sv.shardBroken[lf.shard]
	if code == "" || sv.opts.Exhaustive {
		return false
	}
	sv.rejectLeaf(code, nil)
	return true
}

// memoryRuledOut rejects a leaf the memory found so far rules out: its
// weights, gradients and optimizer state alone exceed the headroom, or a
// smaller micro batch of the same variant did not fit.
func (sv *solver) memoryRuledOut(lf *leaf) bool {
	if code := sv.memoryRules(lf); code != "" {
		sv.rejectLeaf(code, nil)
		return true
	}
	return false
}

// anySharding is the shard of a memKey that stands for every optimizer
// sharding (restRules).
const anySharding = -2

// restRules is the code a leaf is rejected with because a plan of its
// variant under another optimizer sharding did not fit ("": none): the
// memory a pipeline stage holds beside its weights, gradients and
// optimizer state (activations, offloading, communication buffers) does not
// depend on the sharding (TestRestSameUnderEverySharding), so when that
// alone was above the headroom at the peak stage of a plan with micro batch
// f.mb, it is, scaled as peakBelow scales it, at least
// rest·min(1, mb/f.mb) with micro batch mb. With the sharding open, most
// Megatron-FSDP plans of a large model that a search reaches fail on their
// activations, as the distributed optimizer's of the same shape did.
func (sv *solver) restRules(lf *leaf) string {
	if len(sv.shards) < 2 {
		return ""
	}
	k := sv.variantKey(lf)
	k.shard = anySharding
	f, ok := sv.failedFor(k, lf)
	if !ok {
		return ""
	}
	switch b := f.restBelow(lf.mb); {
	case b > float64(f.gpu):
		return estimate.CodeMemoryExceedsGPU
	case b > sv.opts.MemoryHeadroom*float64(f.gpu):
		return CodeAboveHeadroom
	}
	return ""
}

// memoryRules is the code memoryRuledOut rejects a leaf with ("": none).
func (sv *solver) memoryRules(lf *leaf) string {
	if code := sv.stateTooLarge[stateKey{lf.grid, lf.vpp, lf.split, int32(lf.shard)}]; code != "" {
		return code
	}
	if code := sv.restRules(lf); code != "" {
		return code
	}
	f, ok := sv.failedFor(sv.variantKey(lf), lf)
	if !ok {
		return ""
	}
	if lf.mb >= f.mb {
		return f.code
	}
	// A smaller micro batch whose bound exceeds the GPU exceeds it (the
	// code the estimate would give), and cannot be the least peak found.
	if b := f.peakBelow(lf.mb); f.gpu > 0 && b > float64(f.gpu) && sv.hasSmallest && b >= float64(sv.smallest.peak) {
		return estimate.CodeMemoryExceedsGPU
	}
	return ""
}

// completeShapes estimates every assignment of the given shapes the bound
// left in the heap, so a shape's variants are all its plans that pass every
// check, whatever the bound skipped. They cannot change the ranking: each
// one left has a bound above the threshold, so it is slower than its
// shape's best. It may spend half of what the budget has left: variants
// only inform, and a search that found its top shapes does not fail for
// them. What it leaves then goes back to the heap, counted as bounded.
func (sv *solver) completeShapes(gs []group) {
	limit := sv.limit
	sv.limit = sv.work + (sv.limitOf()-sv.work)/2
	defer func() {
		sv.limit = limit
		sv.exhausted = sv.work > sv.limitOf()
	}()
	// Every split of a shape: a listed shape's other splits are its
	// variants too (run).
	want := map[shapeKey]bool{}
	for _, g := range gs {
		want[g.shape.distinct()] = true
	}
	var todo []int32
	sv.heap = slices.DeleteFunc(sv.heap, func(h heapItem) bool {
		if want[sv.shapeOf(sv.leaves.at(h.i)).distinct()] {
			todo = append(todo, h.i)
			return true
		}
		return false
	})
	// A shape's other splits may be parked (outranked): less simple than
	// the top's, they are still its variants.
	sv.parked = slices.DeleteFunc(sv.parked, func(i int32) bool {
		if want[sv.shapeOf(sv.leaves.at(i)).distinct()] {
			todo = append(todo, i)
			return true
		}
		return false
	})
	sv.reheap()
	slices.Sort(todo)
	for len(todo) > 0 {
		if sv.exhausted {
			for _, i := range todo {
				sv.push(i)
			}
			return
		}
		i := todo[0]
		todo = todo[1:]
		lf := sv.leaves.at(i)
		if lf.node {
			if code := sv.stateTooLarge[stateKey{lf.grid, lf.vpp, lf.split, -1}]; code != "" {
				sv.infeasible += int64(lf.n)
				sv.rejected[code] += int64(lf.n)
				sv.leafRejected[code] += int64(lf.n)
				continue
			}
			todo = append(sv.expand(i), todo...)
			continue
		}
		if !sv.memoryRuledOut(lf) {
			sv.evaluate(i, math.Inf(1))
		}
	}
}

// evaluation is what evaluate computes of a leaf before it looks at the
// search's state: a pure function of the leaf.
type evaluation struct {
	ds   diag.List // check.Verdict's
	mem  estimate.Memory
	rl   int32   // the leaf's rl after fitLeaf
	g    int32   // the leaf's group size (group.go)
	over bool    // the memory is above the GPU's or the headroom
	step float64 // estimate.StepTime's, when the plan fits
	// dataParallel is the time of the data-parallel collectives the step
	// waits for a share of (the dp and edp comms' TimeS), when step is.
	dataParallel float64
	// allGroups: no group size parc could choose is above the leaf's
	// memory (none is faster than the one chosen).
	allGroups bool
	// deferred: the leaf fits, but its step time is at least step, above
	// the limit evaluateLeaf was given: the bound with the layers its full
	// recomputation reruns (rerunBoundOf) is, or, with parc choosing its
	// group size, even the fastest group (the largest: the step time does
	// not grow with it) takes step, so the group was not chosen.
	deferred bool
}

// evaluateLeaf computes leaf lf's evaluation. When the leaf's step time
// cannot reach limit (the bound with the layers its full recomputation
// reruns, or, when parc chooses its group size, no group can), it stops
// there (ev.deferred, ev.step that bound or the least step time of any
// group).
func (sv *solver) evaluateLeaf(lf leaf, limit float64) (ev evaluation) {
	if n := sv.groupMin(&lf); n > 0 {
		lf.g = leafGroup(n, int(lf.pp))
	}
	ev.g = lf.g
	sv.spendEstimates(2) // the memory and the step time
	s := &sv.scratch
	sv.leafSpecAt(&lf, s)
	d := spec.Derive(s)
	// The layers a smaller micro batch of the same variant reran bound
	// those this one reruns: a leaf that cannot reach limit with them goes
	// back before its rules and memory are estimated.
	if floor := sv.rerunFloor(&lf); floor != 0 && floor != 1 {
		if b, ok := sv.rerunBoundOf(&lf, floor, d); ok && b > limit {
			ev.deferred, ev.step, ev.rl = true, b, 0
			return ev
		}
	}
	// With full recomputation whose layers parc chooses, the rules run
	// after the layers are chosen when the leaf may go back (limit is
	// finite): a leaf the bound with them sends back is not checked yet.
	// They see the leaf as before (Megatron's block method, one layer per
	// chunk). With no limit (no plan found yet, or every plan of a top
	// shape) they run first, so a plan that breaks a rule costs no memory
	// estimate: a spec whose every plan breaks one is searched as fast.
	late := sv.recomputes[lf.rc].layersImplied && !math.IsInf(limit, 1)
	rules := func() bool {
		if late {
			setRecomputeLayers(&s.Train, 1)
			defer setRecomputeLayers(&s.Train, int(lf.rl))
		}
		ev.ds = check.VerdictWith(s, d, diag.NoPos, sv.opts.searchCheckOptions()) // codes only: no hints to verify
		return !ev.ds.HasErrors()
	}
	if !late && !rules() {
		return ev
	}
	if b, ok := sv.shardedFloor(&lf, s, d, late, limit); ok {
		ev.deferred, ev.step = true, b
		return ev
	}
	// The memory first: most plans a search reaches do not fit, and whether
	// one fits does not depend on its step time.
	var past float64
	ev.mem, past = sv.fitLeaf(&lf, s, d, limit)
	ev.rl = lf.rl
	if past > 0 {
		// fitLeaf learned that the leaf reruns at least lf.rl layers, and
		// that bound cannot reach limit.
		ev.deferred, ev.step = true, past
		return ev
	}
	ev.over = ev.mem.ExceedsGPU() || float64(ev.mem.PerGPUPeakBytes) > sv.opts.MemoryHeadroom*float64(ev.mem.GPUBytes)
	// The layers full recomputation reruns are known now: a leaf whose
	// bound with them cannot reach limit goes back (every group size:
	// the bound does not depend on it).
	if b, ok := sv.rerunBoundOf(&lf, lf.rl, d); ok && !ev.over && b > limit {
		ev.deferred, ev.step = true, b
		return ev
	}
	if late && !rules() || ev.over {
		return ev
	}
	e := estimate.StepTime(s, d, sv.grids[lf.grid].links.links)
	ev.step, ev.dataParallel = e.StepTimeS, e.Comms["dp"].TimeS+e.Comms["edp"].TimeS
	ev.allGroups = true
	if sizes := sv.leafGroups(&lf); len(sizes) > 1 {
		ev.mem, ev.step, ev.allGroups, ev.deferred = sv.chooseGroup(&lf, s, sizes, ev.mem, ev.step, limit)
		ev.g = lf.g
	}
	return ev
}

// parkOutranked is searchTo's parking of outranked leaves (on;
// TestParkedChangesNothing turns it off to compare).
var parkOutranked = true

// deferGroupChoice is evaluate's deferral (on; TestDeferredGroupChoice
// turns it off to compare).
var deferGroupChoice = true

// evaluate runs check.Run and the estimate on one leaf. A leaf that fits
// but cannot reach limit whatever group size parc chooses (evaluateLeaf)
// goes back to the heap with that least step time as its bound, as tighten
// does: past the threshold, it is estimated in full only if its shape is
// one of the top (completeShapes, whose limit is +Inf) or the threshold
// rises past it (a verification failed).
func (sv *solver) evaluate(i int32, limit float64) {
	lf := sv.leaves.at(i)
	ev := sv.evaluateLeaf(*lf, limit)
	sv.noteRerun(lf, ev.rl)
	if ev.deferred {
		lf.key = max(lf.key, ev.step)
		sv.push(i)
		return
	}
	ds := ev.ds
	if sv.checked == 0 {
		sv.firstChecked = i
	}
	sv.checked++
	if ds.HasErrors() {
		first, bySharding := "", true
		for _, x := range ds {
			if x.Severity != diag.Error {
				continue
			}
			sv.common[diagKey{x.Code, x.Path, x.Message}]++
			bySharding = bySharding && check.FixedBySharding(x.Code)
			if first == "" {
				first = x.Code
				sv.rejectLeaf(x.Code, func() string { return x.Message })
			}
		}
		if bySharding {
			// Every plan with this optimizer sharding breaks the same
			// rules (shardingRuledOut).
			sv.shardBroken[lf.shard] = first
		}
		return
	}
	mem := ev.mem
	lf.rl, lf.g = ev.rl, ev.g
	sv.evaluated++
	fp := foundPlan{leaf: i, peak: mem.PerGPUPeakBytes, frac: mem.FractionOfGPU}
	headroom := sv.opts.MemoryHeadroom * float64(mem.GPUBytes)
	if ev.over {
		over := mem.ExceedsGPU()
		code := CodeAboveHeadroom
		msg := func() string {
			return fmt.Sprintf("%s needs %s per GPU, %.1f%% of the GPU, above the %.0f%% headroom",
				sv.leafLabel(lf), estimate.GiB(fp.peak), 100*fp.frac, 100*sv.opts.MemoryHeadroom)
		}
		if over {
			// The estimate's error says by how much (formatted only for
			// the first example).
			code, msg = estimate.CodeMemoryExceedsGPU, func() string {
				s := sv.leafSpec(lf) // with the layers fitLeaf chose
				_, eds := estimate.Run(&s, spec.Derive(&s), sv.grids[lf.grid].links.links, diag.NoPos)
				for _, x := range eds {
					if x.Severity == diag.Error {
						return x.Message
					}
				}
				return ""
			}
		}
		sv.rejectLeaf(code, msg)
		// A larger micro batch needs at least as much memory (the
		// activations of the microbatches in flight, mb·min(m, pp) samples,
		// do not shrink as mb grows; the state does not change).
		if code == CodeAboveHeadroom || code == estimate.CodeMemoryExceedsGPU {
			k, f := sv.variantKey(lf), sv.newMemFail(lf, code, mem)
			sv.recordFailed(k, f)
			// What the peak stage holds beside its state is the same
			// under every optimizer sharding (restRules).
			if k.shard = anySharding; len(sv.shards) > 1 && float64(f.rest) > headroom {
				sv.recordFailed(k, f)
			}
		}
		if !sv.hasSmallest || fp.peak < sv.smallest.peak {
			sv.smallest, sv.hasSmallest = fp, true
		}
		for _, st := range mem.Stages {
			if state := st.Weights + st.Gradients + st.Optimizer; float64(state) > headroom {
				code := CodeAboveHeadroom
				if state > mem.GPUBytes {
					code = estimate.CodeMemoryExceedsGPU
				}
				sv.stateTooLarge[stateKey{lf.grid, lf.vpp, lf.split, int32(lf.shard)}] = code
				if !sv.hasLeastState || state < sv.leastState.peak {
					sv.leastState, sv.hasLeastState = foundPlan{leaf: i, peak: state}, true
				}
				all := true
				for sh := range sv.shards {
					all = all && sv.stateTooLarge[stateKey{lf.grid, lf.vpp, lf.split, int32(sh)}] != ""
				}
				if all {
					// Every optimizer sharding: a node not yet expanded
					// (-1) is rejected whole.
					sv.stateTooLarge[stateKey{lf.grid, lf.vpp, lf.split, -1}] = code
				}
				break
			}
		}
		return
	}
	fp.step = stable(ev.step)
	if k := (stateKey{lf.grid, lf.vpp, lf.split, int32(lf.shard)}); ev.dataParallel > 0 {
		if _, ok := sv.dataParallelFloors[k]; !ok {
			sv.dataParallelFloors[k] = dataParallelFloor{ev.dataParallel, sv.microbatches(lf)}
		}
	}
	sv.found = append(sv.found, fp)
	sv.noteShape(fp)
	if sv.recomputes[lf.rc].mode == "none" && ev.allGroups {
		// (With a group size parc chooses, recomputation could fit a
		// larger group than this plan and be faster.)
		sv.noneFits[noneKey{sv.variantKey(lf).stateKey, lf.mb}] = fp.step
	}
}

// fitLeaf is estimate.Fit on leaf lf's spec s (Run's memory). When parc chooses the
// layers full recomputation reruns, it searches the least number per model
// chunk (Megatron's block method: the chunk's first k layers rerun, the
// rest keep their activations; recompute.py) whose peak fits the headroom,
// and keeps it in lf.rl: a plan that needs a little recomputation is
// charged a little. Every layer (the uniform method) when the block method
// cannot rerun fewer than all of the largest chunk's layers, or when no
// fewer fits. The peak falls as k grows (each rerun layer keeps only its
// input), so the search halves the range. Each k found not to fit makes
// k+1 a floor of the layers the leaf reruns; once the fourth bound with the
// floor is above limit (rerunBoundOf), fitLeaf stops there and returns that
// bound as past (> 0) with the floor in lf.rl and no memory.
func (sv *solver) fitLeaf(lf *leaf, s *spec.Spec, d spec.Derived, limit float64) (mem estimate.Memory, past float64) {
	if !sv.recomputes[lf.rc].layersImplied {
		return estimate.Fit(s, d), 0
	}
	most := spec.LargestChunk(d.Stages)
	// check's recompute-layers-range: at most layers/pp.
	fewer := min(most, s.Model.Layers/max(s.Parallel.PP, 1)) - 1
	fits := func(k int) bool {
		sv.spendEstimates(1)
		setRecomputeLayers(&s.Train, k)
		peak, gpu := estimate.PeakMemory(s, d)
		return float64(peak) <= sv.opts.MemoryHeadroom*float64(gpu)
	}
	// beyond reports whether rerunning at least k layers (fewer+1: every
	// layer) already bounds the leaf above limit, and keeps k in lf.rl.
	beyond := func(k int) bool {
		if k > fewer {
			k = -1
		}
		b, ok := sv.rerunBoundOf(lf, int32(k), d)
		if ok && b > limit {
			lf.rl, past = int32(k), b
			return true
		}
		return false
	}
	k := -1 // every layer: when no fewer fits (the estimate then says by how much)
	switch {
	case fewer < 1:
	case fits(1):
		k = 1
	case beyond(2):
		return mem, past
	case fits(-1):
		// The least k in 2..fewer that fits (1 does not; fewer+1, every
		// layer, does).
		lo, hi := 2, fewer+1
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if fits(mid) {
				hi = mid
				continue
			}
			lo = mid + 1
			if beyond(lo) {
				return mem, past
			}
		}
		if lo <= fewer {
			k = lo
		}
	}
	lf.rl = int32(k)
	setRecomputeLayers(&s.Train, k)
	return estimate.Fit(s, d), 0
}

// noteShape records a feasible plan's step time for its shape and split,
// and for its distinct shape.
func (sv *solver) noteShape(fp foundPlan) {
	k := sv.shapeOf(sv.leaves.at(fp.leaf))
	if old, ok := sv.shapeBest[k]; !ok || fp.step < old {
		sv.shapeBest[k] = fp.step
	}
	k = k.distinct()
	old, ok := sv.distinctBest[k]
	if ok && old <= fp.step {
		return
	}
	if ok {
		j, _ := slices.BinarySearch(sv.shapeTimes, old)
		sv.shapeTimes = slices.Delete(sv.shapeTimes, j, j+1)
	}
	sv.distinctBest[k] = fp.step
	j, _ := slices.BinarySearch(sv.shapeTimes, fp.step)
	sv.shapeTimes = slices.Insert(sv.shapeTimes, j, fp.step)
}

// fail drops a found plan whose verification failed. The fastest plan
// and the shapes in the noise band may change, so the parked leaves go
// back to the heap.
func (sv *solver) fail(leaf int32) {
	sv.failed[leaf] = true
	sv.infeasible++
	sv.found = slices.DeleteFunc(sv.found, func(fp foundPlan) bool { return fp.leaf == leaf })
	clear(sv.shapeBest)
	clear(sv.distinctBest)
	sv.shapeTimes = sv.shapeTimes[:0]
	for _, fp := range sv.found {
		sv.noteShape(fp)
	}
	sv.outrankingAt = -1
	for _, i := range sv.parked {
		sv.push(i)
	}
	sv.parked = sv.parked[:0]
}

// stable rounds x to 12 significant digits. estimate.Run sums the exposed
// time of each axis in map order, so its step time can differ in the last
// bit from one run to the next; ranking and printing the rounded value keeps
// parc solve's output the same every run (it differs from the value parc
// explain prints by at most 5e-13 of it).
func stable(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	e := math.Floor(math.Log10(math.Abs(x)))
	scale := math.Pow(10, 11-e)
	return math.Round(x*scale) / scale
}
