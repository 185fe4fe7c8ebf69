package solve

import (
	"fmt"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/resolve"
	"parc.dev/parc/internal/spec"
)

// DefaultTop is how many candidates Solve returns when Options.Top is 0.
const DefaultTop = 5

// Diagnostic codes of the solve stage.
const (
	// CodeNoFeasiblePlan: no assignment of the open fields passes every check.
	CodeNoFeasiblePlan = "no-feasible-plan"
	// CodeOpenNoValue: an open field's constraint admits no value parc can try.
	CodeOpenNoValue = "open-field-no-value"
)

// Options tune the search.
type Options struct {
	// Top is how many candidates to return, best first (DefaultTop if ≤ 0).
	Top int
	// Exhaustive estimates every assignment the rules allow instead of
	// stopping once the cost bound proves the rest slower. Tests use it to
	// check the bound; the result is the same.
	Exhaustive bool
	// Checks are the targets' checks (see resolve.Check) every candidate
	// must pass, as parc vet applies them; the compiler supplies them.
	Checks []resolve.Check
}

// Parallel is a candidate's parallel degrees, dp and sp derived as Megatron
// derives them (sp is the effective setting: off when tp = 1).
type Parallel struct {
	TP  int  `json:"tp"`
	PP  int  `json:"pp"`
	VPP int  `json:"vpp"`
	CP  int  `json:"cp"`
	EP  int  `json:"ep"`
	ETP int  `json:"etp"`
	DP  int  `json:"dp"`
	SP  bool `json:"sp"`
}

// Train is a candidate's microbatch size and recomputation.
type Train struct {
	MicroBatch int    `json:"micro_batch"`
	Recompute  string `json:"recompute"`
}

// Memory is a candidate's peak memory per GPU (the most loaded pipeline stage).
type Memory struct {
	PerGPUPeakBytes int64   `json:"per_gpu_peak_bytes"`
	FractionOfGPU   float64 `json:"fraction_of_gpu"`
	PeakStage       int     `json:"peak_stage"`
}

// Breakdown splits a candidate's step time the way the estimate computes it.
type Breakdown struct {
	// ComputeS is the busy compute of the slowest stage per step,
	// recomputation included.
	ComputeS float64 `json:"compute_s"`
	// BubbleS is the pipeline's idle time per step.
	BubbleS        float64 `json:"bubble_s"`
	BubbleFraction float64 `json:"bubble_fraction"`
	Microbatches   int     `json:"microbatches"`
	// ExposedCommS is, per parallel axis, the communication time the step
	// waits for.
	ExposedCommS map[string]float64 `json:"exposed_comm_s"`
	// Links is the link each axis's groups cross ("nvlink" or "network").
	Links map[string]string `json:"links"`
}

// Candidate is one complete plan.
type Candidate struct {
	// Rank is the 1-based position, best first.
	Rank      int      `json:"rank"`
	Parallel  Parallel `json:"parallel"`
	Train     Train    `json:"train"`
	StepTimeS float64  `json:"step_time_s"`
	Memory    Memory   `json:"memory"`
	// TokensPerS is global_batch × seq_length / step time.
	TokensPerS float64 `json:"tokens_per_s"`
	// MFU is the model FLOPs utilization the estimate gives.
	MFU float64 `json:"mfu"`
	// VsBestPct is how much slower than the first candidate, in percent.
	VsBestPct float64 `json:"vs_best_pct"`
	// Why says what makes this candidate slower than the first one.
	Why       string    `json:"why"`
	Breakdown Breakdown `json:"breakdown"`
	// Warnings are the codes of the warnings `parc vet` reports for this plan.
	Warnings []string `json:"warnings,omitempty"`
	// Spec is the complete spec: the user's CUE value with the open fields
	// filled in, decoded.
	Spec *spec.Spec `json:"-"`

	key  order
	tpCP int
}

// Label names a candidate's degrees: "tp=8 pp=4 vpp=5 cp=1 ep=1 etp=8 dp=2
// micro_batch=1 recompute=selective".
func (c *Candidate) Label() string {
	p, t := c.Parallel, c.Train
	return fmt.Sprintf("tp=%d pp=%d vpp=%d cp=%d ep=%d etp=%d dp=%d micro_batch=%d recompute=%s",
		p.TP, p.PP, p.VPP, p.CP, p.EP, p.ETP, p.DP, t.MicroBatch, t.Recompute)
}

// Result is the outcome of a search.
type Result struct {
	// Open lists the fields the user left open, in load.OpenPaths order.
	Open []string `json:"open"`
	// Candidates are the best plans, best first.
	Candidates []Candidate `json:"candidates"`
	// Space is the number of assignments of the open fields' candidate
	// values (each field's values after the user's constraint).
	Space int64 `json:"space"`
	// Pruned is how many of them a rule rejected before any estimate.
	Pruned int64 `json:"pruned"`
	// Evaluated is how many were estimated.
	Evaluated int `json:"evaluated"`
	// Bounded is how many were never estimated because their lower bound
	// was already slower than the K-th best plan.
	Bounded int64 `json:"bounded"`
	// Rejected counts the assignments each rule (a diagnostic code)
	// rejected.
	Rejected map[string]int64 `json:"rejected"`
	// Notes explain anything unusual about the search.
	Notes []string `json:"notes,omitempty"`
}

// Solve fills the open fields of a loaded spec and returns the best plans.
// Only errors are returned as diagnostics: the schema's (a missing field),
// an open field no value satisfies, and no-feasible-plan (with the rules
// that rejected the most assignments, and the errors every assignment
// shares). With no open field, the spec's own plan is the only candidate.
func Solve(res *load.Result, opts Options) (*Result, diag.List) {
	if opts.Top <= 0 {
		opts.Top = DefaultTop
	}
	sv, ds := newSolver(res, opts)
	if sv == nil {
		return nil, ds
	}
	r := sv.run()
	ds = append(ds, sv.diags...)
	return r, ds.Sort()
}

// Best solves with the two best candidates and returns the chosen plan's
// spec and what was chosen over what (for parc compile's report). With no
// open field it returns the spec as decoded and a nil Choice.
func Best(res *load.Result, checks []resolve.Check) (*spec.Spec, *plan.Choice, diag.List) {
	r, ds := Solve(res, Options{Top: 2, Checks: checks})
	if r == nil || len(r.Candidates) == 0 {
		return nil, nil, ds
	}
	c0 := r.Candidates[0]
	if len(r.Open) == 0 {
		return c0.Spec, nil, ds
	}
	ch := &plan.Choice{Open: r.Open, Chosen: c0.Label(), Evaluated: r.Evaluated}
	if len(r.Candidates) > 1 {
		c1 := r.Candidates[1]
		ch.RunnerUp = c1.Label() + " (" + c1.Why + ")"
		ch.MarginPct = c1.VsBestPct
	}
	return c0.Spec, ch, ds
}

// Summary is one line on what a search did: "96 assignments of the open
// fields (parallel.tp, parallel.pp): 60 rejected by the rules, 24
// estimated, 12 skipped by the bound".
func (r *Result) Summary() string {
	return fmt.Sprintf("%d assignments of the open fields (%s): %d rejected by the rules, %d estimated, %d skipped by the bound",
		r.Space, strings.Join(r.Open, ", "), r.Pruned, r.Evaluated, r.Bounded)
}
