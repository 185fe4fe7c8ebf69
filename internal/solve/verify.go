package solve

import (
	"fmt"
	"parc.dev/parc/internal/resolve"
	"slices"
	"sort"
	"strings"

	"cuelang.org/go/cue"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/spec"
)

// run does the whole search.
func (sv *solver) run() *Result {
	r := &Result{Rejected: map[string]int64{}}
	for f, p := range fieldPath {
		if sv.open[f] {
			r.Open = append(r.Open, p)
		}
	}
	sort.Slice(r.Open, func(a, b int) bool { return pathRank(r.Open[a]) < pathRank(r.Open[b]) })
	sv.rejected = r.Rejected
	sv.examples = map[string]string{}
	sv.leafRejected = map[string]int64{}
	sv.common = map[diagKey]int{}
	sv.stageBound = map[stageKey]float64{}
	sv.stateTooLarge = map[[2]int32]bool{}

	r.Space = 1
	for f := range nFields {
		r.Space *= int64(len(sv.dom[f]))
	}
	if len(r.Open) == 0 {
		lf := sv.baseLeaf()
		sv.leaves = append(sv.leaves, lf)
		c, ds := sv.verify(0)
		if c == nil {
			sv.diags = append(sv.diags, ds...)
			return r
		}
		c.Rank, c.Why = 1, "the spec's own plan"
		r.Candidates = []Candidate{*c}
		r.Evaluated = 1
		r.Notes = append(r.Notes, "no field is open (write e.g. `tp: int` or `pp: 1 | 2 | 4` to let parc choose): this is the spec's own plan")
		return r
	}

	sv.prepareBounds()
	sv.enumerate()
	sv.heapify()
	top := sv.opts.Top
	cache := map[int32]*Candidate{}
	var verified []Candidate
	for k := top; ; {
		sv.searchTo(k)
		sv.sortFound()
		verified = verified[:0]
		failed := 0
		for _, fp := range sv.found {
			if len(verified) == top {
				break
			}
			c, ok := cache[fp.leaf]
			if !ok {
				c, _ = sv.verify(fp.leaf)
				cache[fp.leaf] = c
			}
			if c == nil {
				failed++
				continue
			}
			verified = append(verified, *c)
		}
		if len(verified) >= top || len(sv.heap) == 0 {
			break
		}
		k = top + failed
	}
	slices.SortStableFunc(verified, func(a, b Candidate) int { return a.key.compare(b.key) })
	for i := range verified {
		c := &verified[i]
		c.Rank = i + 1
		if i == 0 {
			c.Why = "best"
			continue
		}
		c.VsBestPct = 100 * (c.StepTimeS - verified[0].StepTimeS) / verified[0].StepTimeS
		c.Why = why(c, &verified[0])
	}
	r.Candidates = verified
	r.Pruned = sv.pruned
	r.Evaluated = sv.evaluated
	r.Bounded = int64(len(sv.heap))
	if len(verified) == 0 {
		sv.noFeasiblePlan(r)
	}
	return r
}

func pathRank(p string) int {
	for i, q := range []string{"parallel.tp", "parallel.pp", "parallel.vpp", "parallel.cp", "parallel.ep", "parallel.etp", "train.micro_batch", "train.recompute"} {
		if p == q {
			return i
		}
	}
	return 99
}

// baseLeaf is the spec's own values as a leaf.
func (sv *solver) baseLeaf() leaf {
	p, t := sv.base.Parallel, sv.base.Train
	lf := leaf{tp: int32(p.TP), cp: int32(p.CP), pp: int32(p.PP), ep: int32(p.EP), vpp: int32(p.VPP), mb: int32(t.MicroBatch)}
	if p.ETP != nil {
		lf.etp = int32(*p.ETP)
	}
	lf.rc = int8(max(slices.Index(recomputeModes, t.Recompute), 0))
	return lf
}

// verify builds leaf i the way parc vet builds a plan: the open fields
// filled into the user's CUE value and decoded, then resolve.Resolve (check,
// layout, the topology checks, the estimate, the targets' checks). It returns nil and the diagnostics when
// the plan has errors.
func (sv *solver) verify(i int32) (*Candidate, diag.List) {
	lf := &sv.leaves[i]
	v := sv.res.Plan
	for f := range nFields {
		if sv.open[f] {
			v = v.FillPath(cue.ParsePath(fieldPath[f]), sv.openValue(field(f), lf))
		}
	}
	s, ds := sv.res.DecodeValue(v)
	if s == nil || ds.HasErrors() {
		sv.rejectVerified(ds)
		return nil, ds
	}
	if sv.open[fETP] && s.Model.MoE == nil {
		// etp only shapes the unused expert grid of a dense model: leave it
		// unset (= tp) rather than draw etp-without-moe.
		s.Parallel.ETP = nil
	}
	// The rest exactly as parc vet resolves a plan.
	p, rds := resolve.Resolve("", s, sv.at, sv.opts.Checks)
	ds = append(ds, rds...)
	if ds.HasErrors() || p.Estimate == nil {
		sv.rejectVerified(ds)
		return nil, ds.Sort()
	}
	d, e := p.Derived, p.Estimate
	c := &Candidate{
		Parallel: Parallel{
			TP: s.Parallel.TP, PP: s.Parallel.PP, VPP: s.Parallel.VPP, CP: s.Parallel.CP,
			EP: s.Parallel.EP, ETP: d.ETP, DP: d.DP, SP: d.SP,
		},
		Train:      Train{MicroBatch: s.Train.MicroBatch, Recompute: s.Train.Recompute},
		StepTimeS:  stable(e.StepTimeS),
		TokensPerS: stable(e.TokensPerS),
		MFU:        stable(e.MFU),
		Memory:     Memory{PerGPUPeakBytes: e.Memory.PerGPUPeakBytes, FractionOfGPU: e.Memory.FractionOfGPU, PeakStage: e.Memory.PeakStage},
		Breakdown: Breakdown{
			ComputeS: stable(e.Compute.TimeS), BubbleS: stable(e.Pipeline.BubbleTimeS), BubbleFraction: e.Pipeline.BubbleFraction,
			Microbatches: e.Pipeline.Microbatches, ExposedCommS: map[string]float64{}, Links: map[string]string{},
		},
		Spec: s,
	}
	for _, ax := range e.Axes() {
		ac := e.Comms[ax]
		c.Breakdown.ExposedCommS[ax] = stable(ac.ExposedS)
		c.Breakdown.Links[ax] = ac.Link
	}
	for _, x := range ds {
		if x.Severity == diag.Warning && !slices.Contains(c.Warnings, x.Code) {
			c.Warnings = append(c.Warnings, x.Code)
		}
	}
	slices.Sort(c.Warnings)
	c.key = order{
		step: c.StepTimeS, model: s.Parallel.TP * s.Parallel.PP * s.Parallel.CP, peak: c.Memory.PerGPUPeakBytes,
		tuple: [nFields]int{int(lf.tp), int(lf.cp), int(lf.pp), int(lf.ep), int(lf.etp), int(lf.vpp), int(lf.mb), int(lf.rc)},
	}
	return c, ds
}

func (sv *solver) rejectVerified(ds diag.List) {
	for _, x := range ds {
		if x.Severity == diag.Error {
			sv.reject(x.Code, 0, func() string { return x.Message })
			return
		}
	}
}

// noFeasiblePlan explains why no assignment passed: the errors every
// checked assignment shares (they do not depend on the open fields) as they
// are, and a no-feasible-plan error naming the rules that rejected the most.
func (sv *solver) noFeasiblePlan(r *Result) {
	if sv.checked > 0 {
		var shared []diagKey
		for k, n := range sv.common {
			if n == sv.checked {
				shared = append(shared, k)
			}
		}
		if len(shared) > 0 {
			// Report them at the user's positions: check the first leaf
			// again with the locator.
			s := sv.leafSpec(&sv.leaves[sv.firstChecked])
			for _, x := range check.Run(&s, spec.Derive(&s), sv.at) {
				if slices.Contains(shared, diagKey{x.Code, x.Path, x.Message}) {
					sv.diags = append(sv.diags, x)
				}
			}
		}
	}
	// The assignments that satisfy the rules failed for the reasons that
	// matter; when there are none, the rules themselves are the reason.
	if sv.hasSmallest {
		lf := sv.leaves[sv.smallest.leaf]
		sv.examples[estimate.CodeMemoryExceedsGPU] = fmt.Sprintf("the least memory among the plans estimated is %s per GPU (%.0f%% of the GPU), with %s",
			estimate.GiB(sv.smallest.peak), 100*sv.smallest.frac, sv.leafLabel(&lf))
	}
	counts, total := topCounts(sv.leafRejected)
	what := fmt.Sprintf("none of the %d assignments that satisfy Megatron's rules passes every check", len(sv.leaves))
	if len(sv.leaves) == 0 {
		counts, total = topCounts(r.Rejected)
		what = fmt.Sprintf("no assignment of the open fields satisfies Megatron's rules (%d tried)", r.Space)
	}
	var parts []string
	for i, c := range counts {
		if i == 3 {
			break
		}
		part := fmt.Sprintf("%s rejects %d (%.0f%%)", c.code, c.n, 100*float64(c.n)/float64(max(total, 1)))
		if ex := sv.examples[c.code]; ex != "" {
			part += ", e.g. " + ex
		}
		parts = append(parts, part)
	}
	msg := fmt.Sprintf("%s (open: %s)", what, strings.Join(r.Open, ", "))
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	hint := "widen the constraints on the open fields, or change the cluster or the training shape"
	if len(counts) > 0 {
		if info, ok := check.Lookup(counts[0].code); ok {
			hint = info.Fix
		}
		if counts[0].code == estimate.CodeMemoryExceedsGPU {
			fixes := []string{"add nodes", "use GPUs with more memory"}
			if !sv.open[fRC] && sv.base.Train.Recompute != "full" {
				fixes = append(fixes, `leave train.recompute open (or set it to "full")`)
			}
			if !sv.base.Train.DistributedOptimizer {
				fixes = append(fixes, "set train.distributed_optimizer: true")
			}
			if !sv.open[fTP] || !sv.open[fPP] {
				fixes = append(fixes, "leave parallel.tp and parallel.pp open")
			}
			hint = strings.Join(fixes[:len(fixes)-1], ", ") + " or " + fixes[len(fixes)-1]
		}
	}
	path := r.Open[0]
	sv.diags.Errorf(sv.at(path), path, CodeNoFeasiblePlan, hint, "%s", msg)
}

func (sv *solver) leafLabel(lf *leaf) string {
	etp := lf.etp
	if etp == etpFollowsTP {
		etp = lf.tp
	}
	return fmt.Sprintf("tp=%d pp=%d vpp=%d cp=%d ep=%d etp=%d micro_batch=%d recompute=%s",
		lf.tp, lf.pp, lf.vpp, lf.cp, lf.ep, etp, lf.mb, recomputeModes[lf.rc])
}

type codeCount struct {
	code string
	n    int64
}

// topCounts sorts the codes by count, most first.
func topCounts(m map[string]int64) ([]codeCount, int64) {
	var out []codeCount
	var total int64
	for c, n := range m {
		if n > 0 {
			out = append(out, codeCount{c, n})
			total += n
		}
	}
	slices.SortFunc(out, func(a, b codeCount) int {
		if a.n != b.n {
			if a.n > b.n {
				return -1
			}
			return 1
		}
		return strings.Compare(a.code, b.code)
	})
	return out, total
}
