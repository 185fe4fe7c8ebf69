package resolve

import (
	"fmt"
	"slices"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
)

// A Check is a target's look at a resolved plan: what the target cannot
// express is a spec error too, so vet reports it before compile would. A
// check may record on the plan what it computed (the megatron target's
// check sets Plan.MegatronArgs), so nothing is computed twice. The compiler
// hands the targets' checks to Resolve; no stage imports a target.
type Check func(p *plan.Plan, at diag.Locator) diag.List

// Resolve runs derive, check, layout, topology checks and estimate on s, and
// then the targets' checks (also when a rule fails: see TargetChecks). It returns the plan even when there are errors,
// as far as it could be built (Layout or Estimate may be nil).
func Resolve(source string, s *spec.Spec, at diag.Locator, checks []Check) (*plan.Plan, diag.List) {
	return ResolveWith(source, s, at, checks, check.Options{})
}

// ResolveWith is Resolve with the rules' options (check.Options).
func ResolveWith(source string, s *spec.Spec, at diag.Locator, checks []Check, co check.Options) (*plan.Plan, diag.List) {
	var diags diag.List
	d := spec.Derive(s)
	p := &plan.Plan{Source: source, Spec: *s, Derived: d}
	diags = append(diags, check.RunWith(s, d, at, co)...)
	if diags.HasErrors() {
		// The layout and the estimates assume a grid that tiles the world
		// and layers that split; with broken rules they would only repeat
		// the same mistakes in other words. The targets' checks look at
		// values (a data path that would be read as an option), not at the
		// grid: they run, so every mistake shows up in one run.
		if onlyBatch(diags) {
			diags = append(diags, besideBatch(s, at, co)...)
		}
		return p, append(diags, TargetChecks(p, at, checks)...)
	}
	l, e, topo, est := layOut(s, d, at)
	p.Layout, p.Estimate = l, e
	diags = append(append(diags, topo...), est...)
	return p, append(diags, TargetChecks(p, at, checks)...)
}

// layOut lays out a spec that passed every rule and estimates the plan,
// with the topology checks' diagnostics on the layout and the estimate's.
func layOut(s *spec.Spec, d spec.Derived, at diag.Locator) (l *layout.Layout, e *estimate.Estimate, topo, est diag.List) {
	l, err := layout.Build(s, d)
	if err != nil {
		// check reports every rule the layout refuses, at the user's
		// fields; a spec that passed it and cannot be laid out is a bug.
		panic(fmt.Sprintf("parc: a spec that passed every check cannot be laid out: %v", err))
	}
	o := estimate.DefaultOptions()
	o.VerifyHints = true // the user reads these hints: their values are checked
	e, est = estimate.RunWith(s, d, links(l), at, o)
	return l, e, check.Topology(s, familyLinks(l), at), est
}

// onlyBatch reports whether the global batch is the only rule a spec's
// errors break (global-batch: micro_batch·dp does not divide it): the grid
// tiles and the layers split, so the layout and the memory are defined.
func onlyBatch(ds diag.List) bool {
	for _, x := range ds {
		if x.Severity == diag.Error && x.Code != "global-batch" {
			return false
		}
	}
	return true
}

// besideBatch is what a spec whose only broken rule is the global batch
// would also hear once it is mended, so every mistake shows up in one run:
// the topology checks and a memory that exceeds the GPU (the weights,
// gradients, optimizer state and activations do not depend on the batch
// but through the microbatches in flight, here at most those of the
// nearest valid batch above it). Nothing, if that batch breaks another
// rule.
func besideBatch(s *spec.Spec, at diag.Locator, co check.Options) diag.List {
	mended := *s
	d := spec.Derive(&mended)
	unit := mended.Train.MicroBatch * d.DP
	if unit <= 0 {
		return nil
	}
	mended.Train.GlobalBatch = (mended.Train.GlobalBatch/unit + 1) * unit
	d = spec.Derive(&mended)
	if check.VerdictWith(&mended, d, at, co).HasErrors() {
		return nil
	}
	_, _, topo, est := layOut(&mended, d, at)
	return append(topo, slices.DeleteFunc(est, func(x diag.Diagnostic) bool { return x.Code != estimate.CodeMemoryExceedsGPU })...)
}

// Faster lists the single settings that would shorten p's estimated step
// and keep its peak within maxFraction of the GPU (estimate.FasterSettings),
// and those of them applied together (estimate.FasterTogether), on p's
// layout; nil for a plan without an estimate.
func Faster(p *plan.Plan, maxFraction float64) ([]estimate.FasterSetting, *estimate.FasterCombination) {
	if p.Layout == nil || p.Estimate == nil {
		return nil, nil
	}
	l, o := links(p.Layout), estimate.DefaultOptions()
	singles := estimate.FasterSettings(&p.Spec, p.Derived, l, o, p.Estimate, maxFraction)
	return singles, estimate.FasterTogether(&p.Spec, p.Derived, l, o, p.Estimate, maxFraction, singles)
}

// TrainingRun rates p's whole run (estimate.TrainingRunOf) on p's layout:
// nil for a plan without an estimate or without a training length.
func TrainingRun(p *plan.Plan) *estimate.TrainingRun {
	if p.Layout == nil || p.Estimate == nil {
		return nil
	}
	r := estimate.TrainingRunOf(&p.Spec, p.Derived, links(p.Layout), estimate.DefaultOptions(), p.Estimate)
	r.SplitIntoJobs(&p.Spec, slurmLimit(p))
	return r
}

// slurmLimit is the job's time limit in seconds (cluster.slurm.time), 0
// without one, -1 for an unlimited one; a limit slurm-time rejects is 0.
func slurmLimit(p *plan.Plan) int {
	sl := p.Spec.Cluster.Slurm
	if sl == nil || sl.Time == nil {
		return 0
	}
	secs, err := check.SlurmTime(*sl.Time)
	if err != nil {
		return 0
	}
	return secs
}

// TimeLimit warns when p's estimated run (p.Estimate.Run) outlasts the Slurm
// job's time limit, cluster.slurm.time (estimate.TimeLimitDiagnostics).
func TimeLimit(p *plan.Plan, at diag.Locator) diag.List {
	if p.Estimate == nil {
		return nil
	}
	return estimate.TimeLimitDiagnostics(&p.Spec, p.Estimate.Run, slurmLimit(p), at)
}

// TargetChecks runs the targets' checks on p. They may not assume a layout
// or an estimate (p.Layout, p.Estimate nil): Resolve runs them on a spec
// whose rules fail too, and vet on what a spec with schema errors still
// says.
func TargetChecks(p *plan.Plan, at diag.Locator, checks []Check) diag.List {
	var diags diag.List
	for _, c := range checks {
		diags = append(diags, c(p, at)...)
	}
	return diags
}

// familyLinks adapts the layout's family summaries to the topology checks.
func familyLinks(l *layout.Layout) []check.FamilyLink {
	out := make([]check.FamilyLink, 0, len(l.Summaries))
	for _, f := range l.Summaries {
		out = append(out, check.FamilyLink{Family: f.Name, Size: f.Size, Count: f.Count, GroupsLeavingNode: f.GroupsLeavingNode, GroupsLeavingDomain: f.GroupsLeavingDomain, GroupsSplitUnevenly: f.GroupsSplitUnevenly})
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
