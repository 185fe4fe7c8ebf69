package compiler

import (
	"parc.dev/parc/compiler/diag"
	"parc.dev/parc/compiler/load"
	"parc.dev/parc/compiler/plan"
	"parc.dev/parc/compiler/spec"
)

// Source is one spec file (Data nil = read Path).
type Source = load.Source

// Vet loads a spec and runs every check. The plan is nil when the spec has
// errors; diagnostics are sorted by position.
func Vet(src Source) (*plan.Plan, diag.List) {
	res, diags := load.Load(src)
	if res == nil {
		return nil, diags.Sort()
	}
	s, ds := res.Decode()
	diags = append(diags, ds...)
	if s == nil {
		return nil, diags.Sort()
	}
	p, ds := resolve(src.Path, s, res.Locator())
	diags = append(diags, ds...)
	if diags.HasErrors() {
		return nil, diags.Sort()
	}
	return p, diags.Sort()
}

// resolve runs the stages after load on a concrete spec.
func resolve(source string, s *spec.Spec, at diag.Locator) (*plan.Plan, diag.List) {
	var diags diag.List
	d := spec.Derive(s)
	diags = append(diags, runChecks(s, d, at)...)
	return &plan.Plan{Source: source, Spec: *s, Derived: d}, diags
}
