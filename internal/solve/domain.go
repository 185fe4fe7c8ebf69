package solve

import (
	"fmt"
	"slices"

	"cuelang.org/go/cue"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/spec"
)

// field is one solver variable, in enumeration order.
type field int

const (
	fTP field = iota
	fCP
	fPP
	fEP
	fETP
	fVPP
	fMB
	fRC
	nFields
)

var fieldPath = [nFields]string{
	fTP: "parallel.tp", fCP: "parallel.cp", fPP: "parallel.pp", fEP: "parallel.ep",
	fETP: "parallel.etp", fVPP: "parallel.vpp", fMB: "train.micro_batch", fRC: "train.recompute",
}

// recomputeModes are train.recompute's values, least recomputation first
// (an index into this list is a candidate's recompute value).
var recomputeModes = []string{"none", "selective", "full"}

// etpFollowsTP is the etp value meaning "not set: etp = tp".
const etpFollowsTP = 0

// solver holds one search.
type solver struct {
	res  *load.Result
	at   diag.Locator
	opts Options

	base  spec.Spec // the user's spec, open fields at placeholder values
	open  [nFields]bool
	user  [nFields]cue.Value
	world int

	// dom[f] are field f's candidate values after the user's constraint
	// (recompute: indices into recomputeModes; etp: etpFollowsTP = unset).
	dom [nFields][]int

	diags diag.List
	search
}

func fieldOf(path string) field {
	for f, p := range fieldPath {
		if p == path {
			return field(f)
		}
	}
	return -1
}

// newSolver decodes the spec once, with each open field at a placeholder its
// constraint allows, and computes every field's candidate values.
func newSolver(res *load.Result, opts Options) (*solver, diag.List) {
	sv := &solver{res: res, at: res.Locator(), opts: opts}
	var ds diag.List
	v := res.Plan
	for _, p := range res.Open() {
		f := fieldOf(p)
		if f < 0 {
			continue
		}
		sv.open[f] = true
		sv.user[f] = res.User.LookupPath(cue.ParsePath(p))
		ph, ok := sv.placeholder(f)
		if !ok {
			ds.Errorf(sv.at(p), p, CodeOpenNoValue, "write the field as a concrete value, a disjunction (1 | 2 | 4 | 8) or bounds (>=2)",
				"%s is open but parc found no value its constraint %v allows (it tries powers of two and 1–4096%s)",
				p, sv.user[f], map[bool]string{true: `, or "none", "selective", "full"`}[f == fRC])
			continue
		}
		v = v.FillPath(cue.ParsePath(p), ph)
	}
	if ds.HasErrors() {
		return nil, ds
	}
	s, dds := res.DecodeValue(v)
	ds = append(ds, dds...)
	if s == nil {
		return nil, ds
	}
	sv.base = *s
	sv.world = s.Cluster.Nodes * s.Cluster.GPUsPerNode
	sv.domains()
	return sv, ds
}

// allowed reports whether value c unifies with the user's constraint on f.
func (sv *solver) allowed(f field, c any) bool {
	if !sv.open[f] {
		return true
	}
	uv := sv.user[f]
	return uv.Unify(uv.Context().Encode(c)).Err() == nil
}

// placeholder finds a value the user's constraint on f allows.
func (sv *solver) placeholder(f field) (any, bool) {
	if f == fRC {
		for _, m := range recomputeModes {
			if sv.allowed(f, m) {
				return m, true
			}
		}
		return nil, false
	}
	tried := map[int]bool{}
	for v := 1; v <= 1<<22; v *= 2 {
		tried[v] = true
		if sv.allowed(f, v) {
			return v, true
		}
	}
	for v := 3; v <= 4096; v++ {
		if !tried[v] && sv.allowed(f, v) {
			return v, true
		}
	}
	return nil, false
}

// domains fills sv.dom: an open field's values are those the rules could
// ever accept (the world's divisors for a degree, the layer count's divisors
// for vpp, the global batch's for micro_batch) that the user's constraint
// allows; a field the user set has its one value.
func (sv *solver) domains() {
	s := &sv.base
	divW := divisors(sv.world)
	fixed := func(f field, v int) {
		sv.dom[f] = []int{v}
	}
	pick := func(f field, cands []int) {
		for _, c := range cands {
			if sv.allowed(f, c) {
				sv.dom[f] = append(sv.dom[f], c)
			}
		}
	}
	for _, f := range []field{fTP, fCP, fPP, fEP} {
		if !sv.open[f] {
			fixed(f, sv.fixedValue(f))
			continue
		}
		pick(f, divW)
	}
	switch {
	case !sv.open[fETP]:
		fixed(fETP, etpFollowsTP)
		if s.Parallel.ETP != nil {
			fixed(fETP, *s.Parallel.ETP)
		}
	case s.Model.MoE == nil:
		// etp shapes only the (unused) expert grid of a dense model: every
		// value gives the same plan, so take etp = tp.
		sv.dom[fETP] = []int{etpFollowsTP}
	default:
		pick(fETP, divW)
	}
	if sv.open[fVPP] {
		pick(fVPP, divisors(sv.vppBound()))
	} else {
		fixed(fVPP, s.Parallel.VPP)
	}
	if sv.open[fMB] {
		pick(fMB, divisors(s.Train.GlobalBatch))
	} else {
		fixed(fMB, s.Train.MicroBatch)
	}
	if sv.open[fRC] {
		for i, m := range recomputeModes {
			if sv.allowed(fRC, m) {
				sv.dom[fRC] = append(sv.dom[fRC], i)
			}
		}
	} else {
		i := slices.Index(recomputeModes, s.Train.Recompute)
		if i < 0 {
			i = 0
		}
		fixed(fRC, i)
	}
}

func (sv *solver) fixedValue(f field) int {
	p := sv.base.Parallel
	switch f {
	case fTP:
		return p.TP
	case fCP:
		return p.CP
	case fPP:
		return p.PP
	case fEP:
		return p.EP
	}
	panic(fmt.Sprintf("solve: fixedValue(%d)", f))
}

// vppBound is a number every valid vpp divides: the (accounted) layer count
// of an even split, the gcd of the given first/last stage sizes and the
// layer count of an uneven one.
func (sv *solver) vppBound() int {
	p, L := sv.base.Parallel, sv.base.Model.Layers
	if p.FirstStageLayers == nil && p.LastStageLayers == nil {
		if p.AccountForEmbedding {
			L++
		}
		if p.AccountForLoss {
			L++
		}
		return max(L, 1)
	}
	g := L
	for _, v := range []*int{p.FirstStageLayers, p.LastStageLayers} {
		if v != nil && *v > 0 {
			g = gcd(g, *v)
		}
	}
	return max(g, 1)
}

// openValue is what a candidate's value of f is written as in CUE.
func (sv *solver) openValue(f field, lf *leaf) any {
	switch f {
	case fTP:
		return int(lf.tp)
	case fCP:
		return int(lf.cp)
	case fPP:
		return int(lf.pp)
	case fEP:
		return int(lf.ep)
	case fETP:
		if lf.etp == etpFollowsTP {
			return int(lf.tp)
		}
		return int(lf.etp)
	case fVPP:
		return int(lf.vpp)
	case fMB:
		return int(lf.mb)
	}
	return recomputeModes[lf.rc]
}

func divisors(n int) []int {
	if n < 1 {
		return nil
	}
	var lo, hi []int
	for d := 1; d*d <= n; d++ {
		if n%d == 0 {
			lo = append(lo, d)
			if d*d != n {
				hi = append(hi, n/d)
			}
		}
	}
	slices.Reverse(hi)
	return append(lo, hi...)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
