package solve

import (
	"sort"

	"cuelang.org/go/cue"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/spec"
)

// groupPath is parallel.microbatch_group_size (Megatron's
// --microbatch-group-size-per-virtual-pipeline-stage), which parc chooses
// with the interleaved schedule when the spec does not write it.
const groupPath = spec.GroupSizePath

// The interleaved schedule runs the microbatches through the model chunks
// in groups of N (get_schedule_table in schedules.py at d98e8a64; N
// defaults to pp, ModelParallelConfig.__post_init__). Megatron accepts N
// when pp ≤ N ≤ M and M mod N is 0 or at least pp (M microbatches; P25/P26
// of the notes). In parc's model N has three effects and no other:
//
//   - memory: the warm-up runs 2(p−r−1) + (v−1)·N forwards before the
//     first backward (get_pp_rank_microbatches), so a larger N keeps more
//     microbatches' activations alive (InFlight, peakInFlight);
//   - time: each chunk's gradients are reduced as soon as its last group
//     is through its backward, so the reductions of all but the last chunk
//     hide under min(M, N)·(v−1)/v more microbatch backwards (and the
//     parameter gathers under as many forwards: exposedDataParallel);
//     the bubble, (p−1)/v microbatch slots, does not depend on N;
//   - time: the point-to-point waits of the fill and drain (interleavedFill
//     in internal/estimate/pipeline.go): 2(p−1) transfers plus, per extra
//     chunk, a round back to rank 0 that the group's N−p extra forwards
//     cover, so they shrink (never grow) as N grows.
//
// So with the other fields fixed the step time does not grow with N and
// the memory does not shrink: parc takes the smallest valid N that gives
// the least step time among those whose peak fits the headroom. With M a
// multiple of pp that is Megatron's default unless a larger group hides
// data-parallel traffic the default leaves exposed; with M not a multiple
// of pp the default is invalid, and the smallest valid N makes the
// interleaved schedule possible at all.

// groupSearched decides whether parc chooses the group size: the spec does
// not write it and the search can interleave the pipeline (some vpp > 1
// with some pp > 1).
func (sv *solver) groupSearched() bool {
	if sv.group.open {
		return true
	}
	if sv.written(groupPath) || sv.base.Parallel.MicrobatchGroupSize != nil {
		return false
	}
	return hasAbove1(sv.dom[fVPP]) && hasAbove1(sv.dom[fPP])
}

// openGroup is the user's constraint on an open group size
// (microbatch_group_size: int, 4 | 8, >=8).
type openGroup struct {
	open bool
	user cue.Value
	// all: the constraint allows every int; else allowed memoises it.
	all     bool
	allowed map[int]bool
	// placeholder is the least value it allows: what a plan without
	// the interleaved schedule writes (the group size has no effect there).
	placeholder int
}

// openGroup records an open group size and returns a value its constraint
// allows.
func (sv *solver) openGroup(uv cue.Value) (int, bool) {
	g := &sv.group
	g.open, g.user, g.allowed = true, uv, map[int]bool{}
	g.all = uv.Subsume(uv.Context().CompileString("int")) == nil
	for v := 1; v <= 4096; v++ {
		if sv.groupAllowed(v) {
			g.placeholder = v
			return v, true
		}
	}
	return 0, false
}

// groupAllowed reports whether the user's constraint allows group size n.
func (sv *solver) groupAllowed(n int) bool {
	g := &sv.group
	if !g.open || g.all {
		return true
	}
	ok, seen := g.allowed[n]
	if !seen {
		ok = g.user.Unify(g.user.Context().Encode(n)).Err() == nil
		g.allowed[n] = ok
	}
	return ok
}

func hasAbove1(xs []int) bool {
	for _, x := range xs {
		if x > 1 {
			return true
		}
	}
	return false
}

// groupSizes lists the valid group sizes for m microbatches and pp stages,
// ascending (none when m < pp).
func (sv *solver) groupSizes(m, pp int) []int {
	var out []int
	for n := pp; n <= m; n++ {
		if check.InterleaveGroupValid(n, m, pp) && sv.groupAllowed(n) {
			out = append(out, n)
		}
	}
	return out
}

// leafGroup is the group size a leaf writes: 0 for Megatron's default (pp).
func leafGroup(n, pp int) int32 {
	if n == pp {
		return 0
	}
	return int32(n)
}

// groupValue is what a plan writes for an open group size: the leaf's, pp
// when that is Megatron's default (the interleaved schedule), else the
// least value the user's constraint allows (the group size has no effect
// there).
func (sv *solver) groupValue(lf *leaf) int {
	switch {
	case lf.g > 0:
		return int(lf.g)
	case lf.vpp > 1 && lf.pp > 1:
		return int(lf.pp)
	}
	return sv.group.placeholder
}

// chooseGroup picks leaf lf's group size (lf.g) for spec s, whose memory
// with the smallest valid group, mem0, fits the headroom and whose step
// time with it is step0: the smallest group of the least step time among
// those that fit. It returns the memory and step time with it, and whether
// no valid group, fitting or not, makes the plan faster than the one
// chosen. When even the largest group's step time is above limit, it
// stops there and returns that step time with deferred set.
func (sv *solver) chooseGroup(lf *leaf, s *spec.Spec, sizes []int, mem0 estimate.Memory, step0, limit float64) (_ estimate.Memory, _ float64, all, deferred bool) {
	links := sv.grids[lf.grid].links.links
	pp := int(lf.pp)
	set := func(i int) spec.Derived {
		sv.spendEstimates(1)
		lf.g = leafGroup(sizes[i], pp)
		setGroup(&s.Parallel, lf.g)
		return spec.Derive(s)
	}
	fits := func(i int) bool {
		m := estimate.Fit(s, set(i))
		return !m.ExceedsGPU() && float64(m.PerGPUPeakBytes) <= sv.opts.MemoryHeadroom*float64(m.GPUBytes)
	}
	step := func(i int) float64 { return estimate.StepTime(s, set(i), links).StepTimeS }
	last := len(sizes) - 1
	least := step(last)
	if least >= step0 {
		// No group is faster (the step time does not grow with it).
		set(0)
		return mem0, step0, true, false
	}
	if least > limit {
		set(0)
		return mem0, least, false, true
	}
	// The largest group that fits: the peak grows with the group, and
	// sizes[0] fits (mem0).
	lo := sort.Search(len(sizes), func(i int) bool { return i > 0 && !fits(i) }) - 1
	all = lo == last
	if lo == 0 {
		set(0)
		return mem0, step0, all, false
	}
	best := step(lo)
	if best >= step0 {
		set(0)
		return mem0, step0, all, false
	}
	// The smallest group as fast: the step time does not grow with it, and
	// sizes[0] is slower (step0 > best).
	b := sort.Search(lo, func(i int) bool { return i > 0 && step(i) <= best })
	return estimate.Fit(s, set(b)), best, all, false
}

// setGroup writes leaf group g (0: Megatron's default) into p.
func setGroup(p *spec.Parallel, g int32) {
	p.MicrobatchGroupSize = nil
	if g > 0 {
		v := int(g)
		p.MicrobatchGroupSize = &v
	}
}

// groupMin is the smallest valid group size for leaf lf when parc chooses
// it (0 otherwise, or when none is valid).
func (sv *solver) groupMin(lf *leaf) int {
	if !sv.groupChosen || lf.vpp <= 1 || lf.pp <= 1 {
		return 0
	}
	m := sv.base.Train.GlobalBatch / (int(lf.mb) * sv.grids[lf.grid].dp)
	for n := int(lf.pp); n <= m; n++ {
		if check.InterleaveGroupValid(n, m, int(lf.pp)) && sv.groupAllowed(n) {
			return n
		}
	}
	return 0
}

// leafGroups is the valid group sizes of leaf lf when parc chooses them.
func (sv *solver) leafGroups(lf *leaf) []int {
	if !sv.groupChosen || lf.vpp <= 1 || lf.pp <= 1 {
		return nil
	}
	return sv.groupSizes(sv.base.Train.GlobalBatch/(int(lf.mb)*sv.grids[lf.grid].dp), int(lf.pp))
}

// groupOf is a leaf's group size as a plan writes it (nil: the default).
func groupOf(g int32) *int {
	if g <= 0 {
		return nil
	}
	v := int(g)
	return &v
}
