package compiler

import (
	"parc.dev/parc/compiler/check"
	"parc.dev/parc/compiler/diag"
	"parc.dev/parc/compiler/estimate"
	"parc.dev/parc/compiler/layout"
	"parc.dev/parc/compiler/load"
	"parc.dev/parc/compiler/plan"
	"parc.dev/parc/compiler/solve"
	"parc.dev/parc/compiler/spec"
	"parc.dev/parc/targets/megatron"
	"parc.dev/parc/targets/slurm"
)

// Source is one spec file (Data nil = read Path).
type Source = load.Source

// Vet loads a spec and runs every check: the schema, Megatron-Core's rules,
// the topology rules on the rank layout, and the estimates (memory fit,
// bubble). The plan is nil when the spec has errors; diagnostics are sorted
// by position.
func Vet(src Source) (*plan.Plan, diag.List) {
	p, _, diags := vet(src)
	if diags.HasErrors() {
		return nil, diags.Sort()
	}
	return p, diags.Sort()
}

// vet is Vet, also returning the locator of the loaded spec.
func vet(src Source) (*plan.Plan, diag.Locator, diag.List) {
	at := diag.NoPos
	res, diags := load.Load(src)
	if res == nil {
		return nil, at, diags
	}
	at = res.Locator()
	if open := res.Open(); len(open) > 0 {
		// Degrees left open: the solver picks the best plan that passes
		// every check, and the rest of the pipeline runs on it.
		s, choice, ds := solve.Best(res)
		diags = append(diags, ds...)
		if s == nil {
			return nil, at, diags
		}
		p, ds := Resolve(src.Path, s, at)
		diags = append(diags, ds...)
		p.Choice = choice
		if diags.HasErrors() {
			return nil, at, diags
		}
		return p, at, diags
	}
	s, ds := res.Decode()
	diags = append(diags, ds...)
	if s == nil {
		// Schema errors: still run Megatron's rules on what is well-formed,
		// so every mistake shows up in one run.
		if r := res.Recover(); r != nil {
			d := spec.Derive(r)
			diags = append(diags, check.Run(r, d, at)...)
		}
		return nil, at, diags
	}
	p, ds := Resolve(src.Path, s, at)
	diags = append(diags, ds...)
	if diags.HasErrors() {
		return nil, at, diags
	}
	return p, at, diags
}

// Resolve runs the stages after load on a concrete spec: derive, check,
// layout, topology checks, estimate. It returns the plan even when there are
// errors, as far as it could be built (Layout or Estimate may be nil).
func Resolve(source string, s *spec.Spec, at diag.Locator) (*plan.Plan, diag.List) {
	var diags diag.List
	d := spec.Derive(s)
	p := &plan.Plan{Source: source, Spec: *s, Derived: d}
	diags = append(diags, check.Run(s, d, at)...)
	if diags.HasErrors() {
		// The layout and the estimates assume a grid that tiles the world
		// and layers that split; with broken rules they would only repeat
		// the same mistakes in other words.
		return p, diags
	}
	l, ds := layout.Build(s, d, at)
	diags = append(diags, ds...)
	if l == nil {
		return p, diags
	}
	p.Layout = l
	diags = append(diags, check.Topology(s, familyLinks(l), at)...)
	e, ds := estimate.Run(s, d, links(l), at)
	diags = append(diags, ds...)
	p.Estimate = e
	// What the targets cannot express is a spec error too: vet reports it
	// before compile would.
	_, ds = megatron.Args(p, at)
	diags = append(diags, ds...)
	diags = append(diags, slurm.Check(p, at)...)
	return p, diags
}

// familyLinks adapts the layout's family summaries to the topology checks.
func familyLinks(l *layout.Layout) []check.FamilyLink {
	out := make([]check.FamilyLink, 0, len(l.Summaries))
	for _, f := range l.Summaries {
		out = append(out, check.FamilyLink{
			Family: f.Name, Size: f.Size, Count: f.Count,
			GroupsLeavingNode: f.GroupsLeavingNode, GroupsLeavingDomain: f.GroupsLeavingDomain,
		})
	}
	return out
}

// links maps each group family to the link its groups cross.
func links(l *layout.Layout) map[string]string {
	out := make(map[string]string, len(l.Summaries))
	for _, f := range l.Summaries {
		out[f.Name] = f.Link
	}
	return out
}

// Solve loads a spec and ranks the plans for the degrees it leaves open
// (parc solve): the best top plans that pass every check, by estimated step
// time. With nothing open, the one plan is the only candidate.
func Solve(src Source, top int) (*solve.Result, diag.List) {
	res, diags := load.Load(src)
	if res == nil || diags.HasErrors() {
		return nil, diags.Sort()
	}
	r, ds := solve.Solve(res, solve.Options{Top: top})
	return r, append(diags, ds...).Sort()
}
