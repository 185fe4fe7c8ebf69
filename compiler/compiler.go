package compiler

import (
	"fmt"
	"strings"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/resolve"
	"parc.dev/parc/internal/solve"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/targets/megatron"
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

// vet is Vet, also returning the loaded spec (nil when it could not be
// loaded).
func vet(src Source) (*plan.Plan, *load.Result, diag.List) {
	res, diags := load.Load(src)
	if res == nil {
		return nil, nil, diags
	}
	p, ds := vetLoaded(src, res)
	return p, res, res.Ranges(append(diags, ds...))
}

// vetLoaded runs the stages after load: the solver when degrees are left
// open, then resolve.
func vetLoaded(src Source, res *load.Result) (*plan.Plan, diag.List) {
	at := res.Locator()
	var s *spec.Spec
	var choice *plan.Choice
	var diags diag.List
	if len(res.Open()) > 0 {
		// Degrees left open: the solver picks the best plan that passes
		// every check, and the rest of the pipeline runs on it.
		s, choice, diags = solve.Best(res, targetChecks)
	} else if s, diags = res.Decode(); s == nil {
		// Schema errors: still run Megatron's rules on what is well-formed,
		// so every mistake shows up in one run.
		if r := res.Recover(); r != nil {
			d := spec.Derive(r)
			diags = append(diags, check.Run(r, d, at)...)
			diags = append(diags, resolve.TargetChecks(&plan.Plan{Source: src.Path, Spec: *r, Derived: d}, at, targetChecks)...)
		}
	}
	if s == nil {
		return nil, diags
	}
	p, ds := Resolve(src.Path, s, at)
	diags = append(diags, ds...)
	if diags.HasErrors() {
		return nil, diags
	}
	p.Choice = choice
	p.Estimate.FasterSettings, p.Estimate.FasterTogether = resolve.Faster(p, 1) // the plan as written: fit is the GPU
	p.Estimate.Run = resolve.TrainingRun(p)
	diags = append(diags, resolve.TimeLimit(p, at)...)
	p.Estimate.Accuracy = estimate.AccuracyOf(&p.Spec)
	return p, diags
}

// Resolve runs the stages after load on a concrete spec (see package
// resolve): derive, check, layout, topology checks, estimate.
func Resolve(source string, s *spec.Spec, at diag.Locator) (*plan.Plan, diag.List) {
	return resolve.Resolve(source, s, at, targetChecks)
}

// targetChecks are the targets' own checks of a resolved plan (what a target
// cannot express is a spec error, reported by vet). The compiler hands them
// to resolve and to the solver, so no stage imports a target.
var targetChecks = []resolve.Check{megatron.Check}

// Solve loads a spec and ranks the plans for the degrees it leaves open
// (parc solve): the best top plans that pass every check, by estimated step
// time. With nothing open, the one plan is the only candidate.
func Solve(src Source, top int) (*solve.Result, diag.List) {
	return SolveWith(src, solve.Options{Top: top})
}

// leaveOpenHints adds to the hint of each required field the spec leaves out
// that parc solve can choose (spec.OpenPaths; train.micro_batch is the one
// with no default) how to leave it open instead of setting it; and to a
// field the spec writes open (`seq_length: int`) that parc solve does not
// choose, which fields it does.
func leaveOpenHints(res *load.Result, ds diag.List) diag.List {
	for i, d := range ds {
		if d.Code != "missing-field" || d.Path == "" {
			continue
		}
		var more string
		if _, ok := spec.OpenFieldOf(d.Path); ok {
			section, field, _ := strings.Cut(d.Path, ".")
			more = fmt.Sprintf("or leave it open for parc solve to choose: %s: {%s: int}", section, field)
		} else if res != nil && res.Written(d.Path) {
			// Written, but not as a value: the user meant the search to
			// choose it.
			more = fmt.Sprintf("parc solve does not choose %s: it chooses %s", d.Path, strings.Join(spec.LeaveOpenPaths(), ", "))
		} else {
			continue
		}
		if d.Hint != "" {
			more = d.Hint + "; " + more
		}
		ds[i].Hint = more
	}
	return ds
}

// SolveWith is Solve with every option of the search (the top K, the memory
// headroom, the noise band).
func SolveWith(src Source, opts solve.Options) (*solve.Result, diag.List) {
	res, diags := load.Load(src)
	if res == nil || diags.HasErrors() {
		return nil, leaveOpenHints(res, diags).Sort()
	}
	if opts.Checks == nil {
		opts.Checks = targetChecks
	}
	r, ds := solve.Solve(res, opts)
	return r, leaveOpenHints(res, res.Ranges(append(diags, ds...))).Sort()
}
