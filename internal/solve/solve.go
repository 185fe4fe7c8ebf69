package solve

import (
	"fmt"
	"slices"
	"strings"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
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
	// CodeAboveHeadroom: a plan's estimated peak memory is above the memory
	// headroom (it may fit the GPU, but parc does not pick it).
	CodeAboveHeadroom = "memory-above-headroom"
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
	// MemoryHeadroom is the largest fraction of the GPU's memory a plan's
	// estimated peak may use (0: the spec's solve.memory_headroom, else
	// DefaultMemoryHeadroom).
	MemoryHeadroom float64
	// NoiseBand is the relative step-time difference below which two
	// shapes count as a tie and the simpler ranks first (0:
	// DefaultNoiseBand; negative: no band).
	NoiseBand float64
	// MeasuredRun rates a published run as it was measured: the rules
	// run with check.Options.MeasuredRun (the calibration's and the
	// solver corpus's published plans; parc solve never sets it).
	MeasuredRun bool
	// trying is the fix a no-feasible-plan hint would suggest, tried by a
	// search of its own before the hint names it (fixFits, withPlan);
	// such a search tries no fix itself.
	trying hintFix
	// nodes and globalBatch are the cluster's node count and the global
	// batch such a search tries instead of the spec's (0: the spec's).
	nodes, globalBatch int
	// budget is the work such a search may do (0: searchBudget).
	budget int64
}

// instead sets on s the node count and global batch a hint's search tries
// instead of the spec's (withPlan), and the settings of the fix it tries
// that are no field of the search (fixFits).
func (o *Options) instead(s *spec.Spec) {
	if o.nodes > 0 {
		s.Cluster.Nodes = o.nodes
	}
	if o.globalBatch > 0 {
		s.Train.GlobalBatch = o.globalBatch
	}
	switch o.trying {
	case fixFullRecompute:
		// The search runs full recomputation alone (recomputeDomain); the
		// plan it verifies says so too when the spec writes another mode.
		s.Train.Recompute = "full"
	case fixFP8ParamGather:
		s.Train.FP8ParamGather = true
	case fixBF16Moments:
		s.Train.SetBF16AdamMoments()
	}
}

// checkOptions are the rules' options the solver's checks run with.
func (o *Options) checkOptions() check.Options {
	return check.Options{MeasuredRun: o.MeasuredRun}
}

// searchCheckOptions are checkOptions for the search's leaves: the rules
// check.FixedBySpec names have run once on the spec (fixedRuleErrors; the
// search does not start when one fails), so each leaf skips them.
func (o *Options) searchCheckOptions() check.Options {
	c := o.checkOptions()
	c.SkipFixedBySpec = true
	return c
}

// Parallel is a candidate's parallel degrees, dp and sp derived as Megatron
// derives them (sp is the effective setting: off when tp = 1), and its
// pipeline split.
type Parallel struct {
	TP                  int  `json:"tp"`
	PP                  int  `json:"pp"`
	VPP                 int  `json:"vpp"`
	CP                  int  `json:"cp"`
	EP                  int  `json:"ep"`
	ETP                 int  `json:"etp"`
	DP                  int  `json:"dp"`
	SP                  bool `json:"sp"`
	AccountForEmbedding bool `json:"account_for_embedding"`
	AccountForLoss      bool `json:"account_for_loss"`
	FirstStageLayers    *int `json:"first_stage_layers,omitempty"`
	LastStageLayers     *int `json:"last_stage_layers,omitempty"`
	// Layout is parallel.layout (--pipeline-model-parallel-layout) when the
	// plan places the layers with one.
	Layout *string `json:"layout,omitempty"`
	// MicrobatchGroupSize is parallel.microbatch_group_size
	// (--microbatch-group-size-per-virtual-pipeline-stage) when the plan
	// writes it (Megatron's default is pp).
	MicrobatchGroupSize *int `json:"microbatch_group_size,omitempty"`
}

// Train is a candidate's microbatch size, recomputation and optimizer
// sharding.
type Train struct {
	MicroBatch int    `json:"micro_batch"`
	Recompute  string `json:"recompute"`
	// RecomputeModules is train.recompute_modules when the plan writes it
	// (selective recomputation of other modules than Megatron's default
	// core attention).
	RecomputeModules []string `json:"recompute_modules,omitempty"`
	// RecomputeLayers is train.recompute_layers when full recomputation
	// reruns only the first layers of each model chunk
	// (train.recompute_method "block"); absent when it reruns every layer.
	RecomputeLayers *int `json:"recompute_layers,omitempty"`
	// RecomputeMethod is train.recompute_method with full recomputation:
	// "block" with RecomputeLayers, "uniform" (in groups of
	// recompute_layers, 1 unless the spec writes it) otherwise, so the
	// candidate's fields written into the spec give the plan rated.
	RecomputeMethod      string `json:"recompute_method,omitempty"`
	DistributedOptimizer bool   `json:"distributed_optimizer"`
	FSDP                 bool   `json:"fsdp"`
}

// Variant is another plan of a candidate's parallel shape: a different
// micro batch, recompute, optimizer sharding or pipeline split, among those
// the search estimated.
type Variant struct {
	Train Train `json:"train"`
	// VPP is the variant's parallel.vpp when it differs from the
	// candidate's (the shape's other virtual-stage counts fold under it).
	VPP *int `json:"vpp,omitempty"`
	// Split is the variant's pipeline split when it differs from the
	// candidate's (the shape's other splits fold under it).
	Split *Split `json:"split,omitempty"`
	// MicrobatchGroupSize is the variant's parallel.microbatch_group_size
	// when parc chose one other than Megatron's default.
	MicrobatchGroupSize *int    `json:"microbatch_group_size,omitempty"`
	StepTimeS           float64 `json:"step_time_s"`
	// VsShapePct is how much slower than the candidate's own plan, in
	// percent.
	VsShapePct      float64 `json:"vs_shape_pct"`
	PerGPUPeakBytes int64   `json:"per_gpu_peak_bytes"`
}

// Split is a pipeline split: the fields of parallel that place the layers.
type Split struct {
	AccountForEmbedding bool    `json:"account_for_embedding,omitempty"`
	AccountForLoss      bool    `json:"account_for_loss,omitempty"`
	FirstStageLayers    *int    `json:"first_stage_layers,omitempty"`
	LastStageLayers     *int    `json:"last_stage_layers,omitempty"`
	Layout              *string `json:"layout,omitempty"`
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
	// Collectives is the collective each axis runs (the estimate's
	// Collective* names).
	Collectives map[string]string `json:"collectives"`
	// SlowestNodeWaitS is what each step waits for its slowest node
	// (estimate.Compute.SlowestNodeWaitS): 0 on one node.
	SlowestNodeWaitS float64 `json:"slowest_node_wait_s,omitempty"`
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
	// RunS is the whole training run's estimated time (estimate.TrainingRun
	// TimeS: every phase of a batch schedule at its own batch, evaluations
	// included), set when the spec has a step batch-size schedule, whose
	// later phases can order the candidates otherwise than their first
	// phase's step does.
	RunS float64 `json:"run_s,omitempty"`
	// InNoiseBand: the step time is within the noise band of the fastest
	// shape's, so the candidate ranks by simplicity among those.
	InNoiseBand bool `json:"in_noise_band"`
	// Variants are the shape's other plans the search estimated, best
	// first.
	Variants []Variant `json:"variants,omitempty"`
	// Spec is the complete spec: the user's CUE value with the open fields
	// filled in, decoded.
	Spec *spec.Spec `json:"-"`

	leaf int32
	// plan is the resolved plan verify built the candidate from.
	plan *plan.Plan
}

// Label names a candidate's degrees: "tp=8 pp=4 vpp=5 cp=1 ep=1 etp=8 dp=2
// micro_batch=1 recompute=selective", then the pipeline split when it is
// not even ("account_for_embedding", "first_stage_layers=7") and the
// optimizer sharding when it is not the distributed optimizer
// ("fsdp", "replicated_optimizer").
func (c *Candidate) Label() string {
	p, t := c.Parallel, c.Train
	return Label(p, t)
}

// Label is Candidate.Label for any parallel shape and training variant.
func Label(p Parallel, t Train) string {
	s := fmt.Sprintf("tp=%d pp=%d vpp=%d cp=%d ep=%d etp=%d dp=%d micro_batch=%d recompute=%s",
		p.TP, p.PP, p.VPP, p.CP, p.EP, p.ETP, p.DP, t.MicroBatch, t.Recompute)
	if t.RecomputeModules != nil {
		s += " recompute_modules=" + strings.Join(t.RecomputeModules, ",")
	}
	if t.RecomputeLayers != nil {
		s += fmt.Sprintf(" recompute_method=block recompute_layers=%d", *t.RecomputeLayers)
	}
	if p.AccountForEmbedding {
		s += " account_for_embedding"
	}
	if p.AccountForLoss {
		s += " account_for_loss"
	}
	if p.FirstStageLayers != nil {
		s += fmt.Sprintf(" first_stage_layers=%d", *p.FirstStageLayers)
	}
	if p.LastStageLayers != nil {
		s += fmt.Sprintf(" last_stage_layers=%d", *p.LastStageLayers)
	}
	if p.Layout != nil {
		s += " layout=" + *p.Layout
	}
	if p.MicrobatchGroupSize != nil {
		s += fmt.Sprintf(" microbatch_group_size=%d", *p.MicrobatchGroupSize)
	}
	switch {
	case t.FSDP:
		s += " fsdp"
	case !t.DistributedOptimizer:
		s += " replicated_optimizer"
	}
	return s
}

// Result is the outcome of a search.
type Result struct {
	// Open lists the fields the user left open, in spec.OpenPaths order.
	Open []string `json:"open"`
	// Implied lists the fields the user did not write that parc searched
	// because they go with an open field: the pipeline-split fields when
	// the pipeline was its to choose (pp open, or the layers not splitting
	// evenly over the pp given), and train.recompute_modules when
	// train.recompute is open.
	Implied []string `json:"implied,omitempty"`
	// Candidates are the best parallel shapes, best first, each with its
	// best plan and its variants.
	Candidates []Candidate `json:"candidates"`
	// Explanation says in words why the first candidate was chosen.
	Explanation string `json:"explanation,omitempty"`
	// FasterSettings are the performance settings the spec leaves off that
	// would each, on its own, shorten the first candidate's step and keep
	// it within the memory headroom (estimate.FasterSettings).
	FasterSettings []estimate.FasterSetting `json:"faster_settings,omitempty"`
	// FasterTogether is FasterSettings applied together
	// (estimate.FasterTogether), nil unless two or more add up.
	FasterTogether *estimate.FasterCombination `json:"faster_together,omitempty"`
	// Run is the pick's whole run (estimate.TrainingRunOf), nil when the
	// spec bounds no run. The search ranks plans by their step at
	// train.global_batch; with a step batch-size schedule that is the first
	// phase's batch, and Run rates every phase the pick reaches.
	Run *estimate.TrainingRun `json:"run,omitempty"`
	// Accuracy is how far the step-time model was from published
	// measurements of the pick's kind of plan on its GPU
	// (estimate.AccuracyOf, what explain reports for a plan), nil where
	// the corpus has no run of that kind on that GPU: the margin the
	// ranking's step times carry.
	Accuracy *estimate.Accuracy `json:"accuracy,omitempty"`
	// NoiseBand and MemoryHeadroom are the fractions the search used.
	NoiseBand      float64 `json:"noise_band"`
	MemoryHeadroom float64 `json:"memory_headroom"`
	// Space is the number of assignments of the open fields the search
	// considered: each field's values after the user's constraint; for the
	// pipeline split, the splits of each pp (see the package doc). Space =
	// Pruned + Infeasible + Feasible + Bounded.
	Space int64 `json:"space"`
	// Pruned is how many of them a rule rejected before any estimate.
	Pruned int64 `json:"pruned"`
	// Infeasible is how many passed the rules and failed after: a check,
	// the memory estimate, the memory headroom, or the verification.
	Infeasible int64 `json:"infeasible"`
	// Feasible is how many were estimated and pass every check.
	Feasible int64 `json:"feasible"`
	// Evaluated is how many were estimated (some of them infeasible by
	// memory).
	Evaluated int `json:"evaluated"`
	// Bounded is how many were never estimated in full because their lower
	// bound was already slower than every plan that could make the top K:
	// the bound of package doc's step 3, or, for a plan that fits and whose
	// group size parc chooses, its step time with the largest group.
	Bounded int64 `json:"bounded"`
	// Shapes is how many distinct parallel shapes the feasible plans have.
	Shapes int `json:"shapes"`
	// Rejected counts the assignments each rule (a diagnostic code)
	// rejected: the pruned and the infeasible, each under its first error
	// (and "duplicate-split": a pipeline split that gives every stage the
	// layers of a simpler one; "duplicate-sharding": train.fsdp without
	// train.distributed_optimizer when the plan with both is tried, which
	// Megatron runs alike).
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
	switch {
	case opts.NoiseBand == 0:
		opts.NoiseBand = DefaultNoiseBand
	case opts.NoiseBand < 0:
		opts.NoiseBand = 0
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
	ch := &plan.Choice{Open: append(slices.Clone(r.Open), r.Implied...), Chosen: c0.Label(), Evaluated: r.Evaluated}
	if len(r.Candidates) > 1 {
		c1 := r.Candidates[1]
		ch.RunnerUp = c1.Label() + " (" + c1.Why + ")"
		ch.MarginPct = c1.VsBestPct
	}
	return c0.Spec, ch, ds
}

// Summary is one line on what a search did, its counts with thousands
// separators (diag.Thousands): "96 assignments of the open
// fields (parallel.tp, parallel.pp): 60 rejected by the rules, 4
// infeasible, 20 feasible (7 parallel shapes), 12 skipped by the bound".
func (r *Result) Summary() string {
	open := strings.Join(r.Open, ", ")
	var split, other []string
	for _, p := range r.Implied {
		if p == spec.RecomputeModulesPath || p == spec.RecomputeMethodPath || p == spec.RecomputeLayersPath || p == groupPath {
			other = append(other, p)
		} else {
			split = append(split, p)
		}
	}
	if len(split) > 0 {
		open += "; and the pipeline split: " + strings.Join(split, ", ")
	}
	if len(other) > 0 {
		open += "; and " + strings.Join(other, ", ")
	}
	n := diag.Thousands
	return fmt.Sprintf("%s assignments of the open fields (%s): %s rejected by the rules, %s infeasible, %s feasible (%s parallel shapes), %s skipped by the bound",
		n(r.Space), open, n(r.Pruned), n(r.Infeasible), n(r.Feasible), n(int64(r.Shapes)), n(r.Bounded))
}
