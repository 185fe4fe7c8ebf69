package estimate_test

import (
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/solve"
	"parc.dev/parc/internal/spec"
)

// The calibration rates a measured run whose spec leaves fields open
// (measured.RecomputeConstraint) as the solver corpus (TestPublishedCorpus,
// internal/solve) rates its published plan: parc solve's pick with the
// memory limit at the whole GPU, and the rules as the run's software applied
// them (solve.Options.MeasuredRun: Megatron-Bridge's runs used Transformer
// Engine's cross-entropy fusion, which Megatron-LM's arguments.py rejects).
func init() {
	estimate.SolvePublished = func(res *load.Result) (*spec.Spec, diag.List) {
		r, ds := solve.Solve(res, solve.Options{Top: 1, MemoryHeadroom: 1, MeasuredRun: true})
		if r == nil || len(r.Candidates) == 0 {
			return nil, ds
		}
		return r.Candidates[0].Spec, ds
	}
}
