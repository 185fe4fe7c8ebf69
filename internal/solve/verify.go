package solve

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/resolve"
	"parc.dev/parc/internal/spec"
)

// startSearch makes the search's tables empty, counting rejections into
// rejected.
func (sv *solver) startSearch(rejected map[string]int64) {
	sv.rejected = rejected
	sv.examples = map[string]string{}
	sv.leafRejected = map[string]int64{}
	sv.common = map[diagKey]int{}
	sv.verifyCommon = map[diagKey]sharedDiag{}
	sv.stateTooLarge = map[stateKey]string{}
	sv.memoryFailed = map[memKey]memFail{}
	sv.noneFits = map[noneKey]float64{}
	sv.dataParallelFloors = map[stateKey]dataParallelFloor{}
	sv.shardBroken = map[int8]string{}
	sv.rerunFloors = map[memKey][]rerunAt{}
	sv.shapeBest = map[shapeKey]float64{}
	sv.distinctBest = map[shapeKey]float64{}
	sv.failed = map[int32]bool{}
	sv.outrankingAt = -1
}

// run does the whole search.
func (sv *solver) run() *Result {
	r := &Result{Rejected: map[string]int64{}, NoiseBand: sv.opts.NoiseBand, MemoryHeadroom: sv.opts.MemoryHeadroom}
	for f := range nFields {
		switch {
		case sv.open[f]:
			r.Open = append(r.Open, f.Path())
		case sv.implied[f]:
			r.Implied = append(r.Implied, f.Path())
		}
	}
	sv.startSearch(r.Rejected)

	if sv.modulesImplied {
		r.Implied = append(r.Implied, spec.RecomputeModulesPath)
	}
	switch {
	case sv.methodOpen || sv.layersOpen:
		if !sv.methodOpen && !sv.written(spec.RecomputeMethodPath) && sv.layersImplied {
			r.Implied = append(r.Implied, spec.RecomputeMethodPath)
		}
		if !sv.layersOpen && !sv.written(spec.RecomputeLayersPath) && sv.layersImplied {
			r.Implied = append(r.Implied, spec.RecomputeLayersPath)
		}
		r.Notes = append(r.Notes, "train.recompute_method or train.recompute_layers is open, so with full recomputation parc chose them: the fewest layers of each model chunk that fit the headroom (Megatron's block method) or every layer, when it chooses the layers; with the uniform method written, Megatron's default of one layer per group; with the layers written, either method")
	case sv.layersImplied:
		r.Implied = append(r.Implied, spec.RecomputeMethodPath, spec.RecomputeLayersPath)
		r.Notes = append(r.Notes, "train.recompute is open and the spec writes neither train.recompute_method nor train.recompute_layers, so with full recomputation parc reruns the fewest layers that fit the headroom: the first k of each model chunk (Megatron's block method), or every layer when fewer do not fit (write either field to fix it)")
	}
	if sv.layoutOpen {
		r.Open = append(r.Open, spec.LayoutPath)
		what := "every pipeline split parc tries (the even one, the accounted and uneven ones, and the layouts of Megatron-Bridge's recipes), each written as the layout that places the same layers, that its constraint allows"
		if sv.userLayouts != nil {
			what = "the layouts it lists"
		}
		vpp := ""
		if sv.vppFromLayout {
			vpp = "; the spec writes no parallel.vpp, so each plan's is its layout's stages over pp, as Megatron derives it"
		}
		r.Notes = append(r.Notes, fmt.Sprintf("parallel.layout is open, so parc chose where the layers go among %s%s", what, vpp))
	}
	if sv.dpOpen {
		r.Open = append(r.Open, spec.DataParallelPath)
		r.Notes = append(r.Notes, "parallel.dp is open: each plan's is the GPUs over tp·cp·pp, as Megatron derives it, and parc keeps the plans whose dp its constraint allows")
	}
	if sv.spOpen {
		r.Open = append(r.Open, spec.SequenceParallelPath)
		r.Notes = append(r.Notes, "parallel.sp is open: parc turns sequence parallelism on with tp > 1 and off with tp = 1, as when the spec leaves it out (with tp > 1 it holds the activations outside attention and the MLP over tp at the same communication, and tensor-parallel overlap and MoE layers need it)")
	}
	if sv.methodOpen {
		r.Open = append(r.Open, spec.RecomputeMethodPath)
	}
	if sv.layersOpen {
		r.Open = append(r.Open, spec.RecomputeLayersPath)
	}
	if sv.modulesOpen {
		r.Open = append(r.Open, spec.RecomputeModulesPath)
		var lists []string
		for _, rc := range sv.recomputes {
			if rc.mode == "selective" {
				lists = append(lists, "["+strings.Join(modulesWritten(rc.modules), ",")+"]")
			}
		}
		if len(lists) > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("train.recompute_modules is open, so with selective recomputation parc chose the list among %s (Megatron's default, the lists of Megatron-Bridge's recipes and of other published runs, and the constraint's own lists that apply to the model and that the constraint allows)", strings.Join(lists, ", ")))
		}
	}
	if sv.group.open {
		sv.groupChosen = true
		r.Open = append(r.Open, groupPath)
	} else if (len(r.Open) > 0 || len(r.Implied) > 0) && sv.groupSearched() {
		sv.groupChosen = true // listed below when some plan interleaves
	}
	if len(r.Open) == 0 && len(r.Implied) == 0 {
		r.Space = 1
		lf := sv.baseLeaf()
		sv.leaves.add(lf)
		c, ds := sv.verify(0)
		if c == nil {
			sv.diags = append(sv.diags, ds...)
			r.Infeasible = 1
			return r
		}
		c.Rank, c.Why = 1, "the spec's own plan"
		r.Candidates = []Candidate{*c}
		r.Evaluated, r.Feasible, r.Shapes = 1, 1, 1
		r.Notes = append(r.Notes, "no field is open (write e.g. `tp: int` or `pp: 1 | 2 | 4` to let parc choose): this is the spec's own plan")
		return r
	}
	if ds := sv.fixedRuleErrors(); len(ds) > 0 {
		sv.diags = append(sv.diags, ds...)
		codes := ds.Codes()
		slices.Sort(codes)
		r.Notes = append(r.Notes, fmt.Sprintf("nothing was searched: the spec breaks %s, which no value of the open fields can clear", strings.Join(slices.Compact(codes), ", ")))
		return r
	}
	var splitFields []string
	for _, f := range spec.PipelineSplitFields {
		if sv.implied[f] {
			splitFields = append(splitFields, f.Path())
		}
	}
	if len(splitFields) > 0 && !sv.layoutOpen { // an open layout's note says it
		why := map[bool]string{true: "parallel.pp is open", false: fmt.Sprintf("%d layers do not split evenly over pp=%d", sv.base.Model.Layers, sv.base.Parallel.PP)}[sv.open[fPP]]
		if opened := sv.splitOpened(); len(opened) > 0 {
			why = strings.Join(opened, " and ") + map[bool]string{true: " is", false: " are"}[len(opened) == 1] + " open"
		}
		r.Notes = append(r.Notes, fmt.Sprintf("the spec sets no pipeline split and %s, so parc also chose the split: the even one, account_for_embedding/account_for_loss, first/last stages of %d layers fewer to %d more than the others, or a parallel.layout as Megatron-Bridge writes them (write any of %s or parallel.layout to fix it)",
			why, unevenLighter, unevenHeavier, strings.Join(splitFields, ", ")))
	}
	if sv.modulesImplied && len(sv.recomputes) > 0 {
		var lists []string
		for _, rc := range sv.recomputes {
			if rc.mode == "selective" {
				lists = append(lists, rc.String())
			}
		}
		if len(lists) > 1 {
			r.Notes = append(r.Notes, fmt.Sprintf("train.recompute is open and the spec writes no train.recompute_modules, so parc also chose the modules selective recomputation recomputes, among %s (Megatron's default core attention, the lists of Megatron-Bridge's recipes and of other published runs and, on a dense model, the MLP, those that apply to the model; write train.recompute_modules to fix it)",
				strings.Join(lists, ", ")))
		}
	}

	if sch := sv.base.Train.StepBatchSizeSchedule; sch != nil {
		if ps, err := spec.ParseBatchSchedule(*sch, sv.base.Train.SeqLength); err == nil && len(ps) > 1 {
			r.Notes = append(r.Notes, fmt.Sprintf("train.step_batch_size_schedule changes the batch during the run: parc ranks the plans by their step at its first batch size (train.global_batch = %d) and checks every phase the run reaches; the pick's training run rates each phase at its own batch, and a last note rates every listed candidate over the whole run",
				ps[0].Batch))
		}
	}
	sv.prepareBounds()
	sv.enumerate()
	if sv.groupChosen && !sv.group.open && sv.leaves.any(func(nd *leaf) bool { return nd.vpp > 1 && nd.pp > 1 }) {
		r.Implied = append(r.Implied, groupPath)
		r.Notes = append(r.Notes, "the spec does not write parallel.microbatch_group_size, so with the interleaved schedule parc chooses it: the smallest group Megatron accepts (pp, or more when the microbatches are not a multiple of pp), or a larger one when it fits and hides more data-parallel traffic (write it to fix it)")
	}
	r.Space = sv.spaceSize()
	if sv.exhausted {
		return sv.stopped(r)
	}
	sv.heapify()
	top := sv.opts.Top
	cache := map[int32]*Candidate{}
	var groups []group
	completed := false
	for {
		sv.searchTo(top)
		if sv.exhausted {
			return sv.stopped(r)
		}
		groups = sv.ranked()
		if !sv.verifyTop(groups, top, cache) {
			continue
		}
		if completed || len(sv.heap) == 0 {
			break
		}
		// The top shapes' other plans are their variants: evaluate them
		// all. One may become its shape's best, or a shape may move into
		// the top, so the next round verifies the top again.
		sv.completeShapes(listed(groups, top))
		if sv.exhausted {
			return sv.stopped(r)
		}
		completed = true
	}
	var verified []Candidate
	// A listed shape's other splits are its variants: at maps a shape, its
	// split left out, to its index in verified; own is the listed plan.
	at := map[shapeKey]int{}
	var own []foundPlan
	for _, g := range groups {
		k := g.shape.distinct()
		j, listed := at[k]
		plans := g.plans
		switch {
		case !listed && len(verified) < top:
			c := *cache[g.plans[0].leaf]
			c.Rank = len(verified) + 1
			c.InNoiseBand = g.inBand
			at[k], j = len(verified), len(verified)
			verified = append(verified, c)
			own = append(own, g.plans[0])
			plans = plans[1:]
		case !listed:
			continue
		}
		for _, fp := range plans {
			verified[j].Variants = append(verified[j].Variants, sv.variant(fp, own[j]))
		}
	}
	for i := range verified {
		slices.SortStableFunc(verified[i].Variants, func(a, b Variant) int { return cmp.Compare(a.StepTimeS, b.StepTimeS) })
	}
	for i := range verified {
		c := &verified[i]
		if i == 0 {
			c.Why = "best"
			continue
		}
		c.VsBestPct = 100 * (c.StepTimeS - verified[0].StepTimeS) / verified[0].StepTimeS
		c.Why = sv.why(c, &verified[0], sv.opts.NoiseBand)
	}
	r.Candidates = verified
	r.Pruned = sv.pruned
	r.Infeasible = sv.infeasible
	r.Feasible = int64(len(sv.found))
	r.Evaluated = sv.evaluated
	for _, h := range sv.heap {
		r.Bounded += int64(sv.leaves.at(h.i).n)
	}
	for _, i := range sv.parked {
		r.Bounded += int64(sv.leaves.at(i).n)
	}
	r.Shapes = distinctShapes(groups)
	if len(verified) == 0 {
		sv.noFeasiblePlan(r)
	} else {
		r.Explanation = sv.explain(verified, groups)
		r.FasterSettings, r.FasterTogether = resolve.Faster(verified[0].plan, sv.opts.MemoryHeadroom)
		r.Run = resolve.TrainingRun(verified[0].plan)
		r.Accuracy = estimate.AccuracyOf(&verified[0].plan.Spec)
		if note := wholeRunNote(verified, r.Run, func(c *Candidate) *estimate.TrainingRun { return resolve.TrainingRun(c.plan) }); note != "" {
			r.Notes = append(r.Notes, note)
		}
	}
	return r
}

// wholeRunNote rates every candidate's whole run when the pick's run has
// more than one phase of a batch schedule (the search ranks the first
// phase's step; the later phases, with more microbatches per step, weigh
// the bubble and the per-step costs differently), fills their RunS, and
// says which candidate trains the run fastest and by how much against the
// pick; empty without a schedule. runOf rates a candidate's run.
func wholeRunNote(cands []Candidate, pick *estimate.TrainingRun, runOf func(*Candidate) *estimate.TrainingRun) string {
	if pick == nil || len(pick.Phases) < 2 || len(cands) < 2 {
		return ""
	}
	cands[0].RunS = pick.TimeS
	best := 0
	for i := 1; i < len(cands); i++ {
		if run := runOf(&cands[i]); run != nil {
			cands[i].RunS = run.TimeS
			if run.TimeS < cands[best].RunS {
				best = i
			}
		}
	}
	if best == 0 {
		return fmt.Sprintf("over the whole batch schedule (%d phases) the pick is also the fastest of the %d candidates as listed (each shape at its best plan for the first batch; their variants are not rated over the run): %s", len(pick.Phases), len(cands), diag.Duration(pick.TimeS))
	}
	b := &cands[best]
	return fmt.Sprintf("over the whole batch schedule (%d phases) candidate %d, %s, trains the run in %s, %.1f%% less than the pick's %s (of the %d candidates as listed, each shape at its best plan for the first batch): it ranks below the pick at the first batch, where the search ranks, and gains over the later phases; write its degrees to run it",
		len(pick.Phases), b.Rank, b.Label(), diag.Duration(b.RunS), 100*(pick.TimeS-b.RunS)/pick.TimeS, diag.Duration(pick.TimeS), len(cands))
}

// fixedRuleErrors are the spec's errors no plan can clear: the rules
// check.FixedBySpec names read none of the fields the search fills, so a
// spec that breaks one breaks it in every plan, and the search would reject
// them one by one (a large one until its work budget ran out, then
// reporting solve-search-too-large). They are said as parc vet says them,
// with their hints, and nothing is searched. A search that tries a
// hint's fix shows no diagnostic, so it checks without the hints (whose
// values the checker verifies by re-running the rules: on 8,192 GPUs a
// world-size hint's took most of the 11 s that a failed search's 32 tries
// of other node counts ran).
func (sv *solver) fixedRuleErrors() diag.List {
	run := check.RunWith
	if sv.opts.trying != noFix {
		run = check.VerdictWith
	}
	var out diag.List
	for _, x := range run(&sv.base, spec.Derive(&sv.base), sv.at, sv.opts.checkOptions()) {
		if x.Severity == diag.Error && check.FixedBySpec(x.Code) {
			out = append(out, x)
		}
	}
	return out
}

// verifyTop verifies the plan of each of the top shapes of gs, and the
// fastest plan (the noise band is measured from it), keeping each verified
// candidate in cache. At the first plan the full check rejects, it drops
// that plan from the search and returns false.
func (sv *solver) verifyTop(gs []group, top int, cache map[int32]*Candidate) bool {
	for _, g := range append(listed(gs, top), sv.fastest(gs)...) {
		i := g.plans[0].leaf
		if _, done := cache[i]; done {
			continue
		}
		c, _ := sv.verify(i)
		if c == nil {
			sv.fail(i)
			return false
		}
		cache[i] = c
	}
	return true
}

// fastest is the group holding the fastest plan found (none when there is
// no plan).
func (sv *solver) fastest(gs []group) []group {
	if len(gs) == 0 {
		return nil
	}
	best := 0
	for i, g := range gs {
		if g.plans[0].step < gs[best].plans[0].step {
			best = i
		}
	}
	return gs[best : best+1]
}

// baseLeaf is the spec's own values as a leaf.
func (sv *solver) baseLeaf() leaf {
	p, t := sv.base.Parallel, sv.base.Train
	lf := leaf{tp: int32(p.TP), cp: int32(p.CP), pp: int32(p.PP), ep: int32(p.EP), vpp: int32(p.VPP), mb: int32(t.MicroBatch)}
	if p.ETP != nil {
		lf.etp = int32(*p.ETP)
	}
	sv.recomputes = []recompute{{mode: t.Recompute, modules: t.RecomputeModules}}
	lf.rc = 0
	sp := split{emb: p.AccountForEmbedding, loss: p.AccountForLoss}
	if p.FirstStageLayers != nil {
		sp.first = *p.FirstStageLayers
	}
	if p.LastStageLayers != nil {
		sp.last = *p.LastStageLayers
	}
	sv.splits = append(sv.splits, sp)
	lf.split = int32(len(sv.splits) - 1)
	sv.shards = append(sv.shards, shard{distopt: t.DistributedOptimizer, fsdp: t.FSDP})
	lf.shard = int8(len(sv.shards) - 1)
	return lf
}

// verify builds leaf i the way parc vet builds a plan: the open fields
// filled into the user's CUE value and decoded, then resolve.Resolve (check,
// layout, the topology checks, the estimate, the targets' checks). It returns nil and the diagnostics when
// the plan has errors.
func (sv *solver) verify(i int32) (*Candidate, diag.List) {
	sv.spend(verifyWork) // CUE, check, layout, the estimate with its hints
	lf := sv.leaves.at(i)
	vals := map[string]any{}
	for f := range nFields {
		if sv.layoutOpen && slices.Contains(spec.PipelineSplitFields, f) {
			continue // the layout below places the layers
		}
		if sv.searched(f) {
			if x, ok := sv.openValue(f, lf); ok {
				vals[f.Path()] = x
			}
		}
	}
	sv.derivedValues(vals, int(lf.tp), int(lf.cp), int(lf.pp))
	rc := sv.recomputes[lf.rc]
	switch {
	case sv.modulesOpen && rc.mode == "selective":
		vals[spec.RecomputeModulesPath] = modulesWritten(rc.modules)
	case sv.modulesOpen && sv.modulesPlaceholder != nil:
		vals[spec.RecomputeModulesPath] = sv.modulesPlaceholder // Megatron ignores it: cleared below
	case sv.modulesImplied && rc.modules != nil:
		vals[spec.RecomputeModulesPath] = rc.modules
	}
	sv.fullRecomputeValues(vals, rc, lf)
	if l, ok := sv.planLayout(lf); ok {
		vals[spec.LayoutPath] = l
	} else if sv.layoutOpen {
		var ds diag.List
		ds.Errorf(sv.at(spec.LayoutPath), spec.LayoutPath, "pipeline-layout", "", "no layout places the layers as %s with pp=%d vpp=%d", sv.splits[lf.split], lf.pp, lf.vpp)
		sv.rejectVerified(ds)
		return nil, ds
	}
	switch {
	case sv.group.open:
		vals[groupPath] = sv.groupValue(lf)
	case sv.groupChosen && lf.g > 0:
		vals[groupPath] = int(lf.g)
	}
	s, ds := sv.res.DecodeValue(fillAll(sv.res.Plan, vals))
	if s == nil || ds.HasErrors() {
		sv.rejectVerified(ds)
		return nil, ds
	}
	sv.opts.instead(s) // as newSolver set it
	if sv.modulesOpen && s.Train.Recompute != "selective" {
		s.Train.RecomputeModules = nil
	}
	if s.Train.Recompute != "full" {
		if sv.methodOpen {
			s.Train.RecomputeMethod = "uniform" // the schema's default; Megatron reads it only with full
		}
		if sv.layersOpen {
			s.Train.RecomputeLayers = nil
		}
	}
	if sv.open[fETP] && s.Model.MoE == nil {
		// etp only shapes the unused expert grid of a dense model: leave it
		// unset (= tp) rather than draw etp-without-moe.
		s.Parallel.ETP = nil
	}
	// The rest exactly as parc vet resolves a plan.
	p, rds := resolve.ResolveWith("", s, sv.at, sv.opts.Checks, sv.opts.checkOptions())
	ds = append(ds, rds...)
	if ds.HasErrors() || p.Estimate == nil {
		sv.rejectVerified(ds)
		sv.verifyFailed++
		for _, x := range ds {
			if x.Severity == diag.Error {
				k := diagKey{x.Code, x.Path, x.Message}
				sv.verifyCommon[k] = sharedDiag{sv.verifyCommon[k].n + 1, x}
			}
		}
		return nil, ds.Sort()
	}
	d, e := p.Derived, p.Estimate
	c := &Candidate{
		Parallel: Parallel{
			TP: s.Parallel.TP, PP: s.Parallel.PP, VPP: s.Parallel.VPP, CP: s.Parallel.CP,
			EP: s.Parallel.EP, ETP: d.ETP, DP: d.DP, SP: d.SP,
			AccountForEmbedding: s.Parallel.AccountForEmbedding, AccountForLoss: s.Parallel.AccountForLoss,
			FirstStageLayers: s.Parallel.FirstStageLayers, LastStageLayers: s.Parallel.LastStageLayers,
			Layout: s.Parallel.Layout, MicrobatchGroupSize: s.Parallel.MicrobatchGroupSize,
		},
		Train: Train{MicroBatch: s.Train.MicroBatch, Recompute: s.Train.Recompute, RecomputeModules: s.Train.RecomputeModules,
			RecomputeLayers: specBlockLayers(&s.Train), RecomputeMethod: fullMethod(&s.Train), DistributedOptimizer: s.Train.DistributedOptimizer, FSDP: s.Train.FSDP},
		StepTimeS:  stable(e.StepTimeS),
		TokensPerS: stable(e.TokensPerS),
		MFU:        stable(e.MFU),
		Memory:     Memory{PerGPUPeakBytes: e.Memory.PerGPUPeakBytes, FractionOfGPU: e.Memory.FractionOfGPU, PeakStage: e.Memory.PeakStage},
		Breakdown: Breakdown{
			ComputeS: stable(e.Compute.TimeS), BubbleS: stable(e.Pipeline.BubbleTimeS), BubbleFraction: e.Pipeline.BubbleFraction,
			Microbatches: e.Pipeline.Microbatches, ExposedCommS: map[string]float64{}, Links: map[string]string{},
			Collectives: map[string]string{}, SlowestNodeWaitS: stable(e.Compute.SlowestNodeWaitS),
		},
		Spec: s,
		plan: p,
	}
	for _, ax := range e.Axes() {
		ac := e.Comms[ax]
		c.Breakdown.ExposedCommS[ax] = stable(ac.ExposedS)
		c.Breakdown.Links[ax] = ac.Link
		c.Breakdown.Collectives[ax] = ac.Collective
	}
	for _, x := range ds {
		if x.Severity == diag.Warning && !slices.Contains(c.Warnings, x.Code) {
			c.Warnings = append(c.Warnings, x.Code)
		}
	}
	slices.Sort(c.Warnings)
	c.leaf = i
	return c, ds
}

// fillAll fills the dotted paths of vals into v at once: one unification
// of a struct instead of one FillPath a field (several times faster on a
// plan that imports the stdlib).
func fillAll(v cue.Value, vals map[string]any) cue.Value {
	if len(vals) == 0 {
		return v
	}
	root := map[string]any{}
	for p, x := range vals {
		m := root
		parts := strings.Split(p, ".")
		for _, k := range parts[:len(parts)-1] {
			sub, ok := m[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[k] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = x
	}
	return v.FillPath(cue.Path{}, root)
}

// rejectVerified counts a found plan whose verification failed under its
// first error (fail moves it from the feasible to the infeasible).
func (sv *solver) rejectVerified(ds diag.List) {
	for _, x := range ds {
		if x.Severity == diag.Error {
			sv.leafRejected[x.Code]++
			sv.reject(x.Code, 1, func() string { return x.Message })
			return
		}
	}
	sv.leafRejected["verification"]++
	sv.reject("verification", 1, nil)
}

// sharedChecked is the errors every plan checked so far shares (they do
// not depend on the open fields: model.hidden not a multiple of
// model.heads), at the user's positions.
func (sv *solver) sharedChecked() diag.List {
	if sv.checked == 0 {
		return nil
	}
	var shared []diagKey
	for k, n := range sv.common {
		if n == sv.checked {
			shared = append(shared, k)
		}
	}
	if len(shared) == 0 {
		return nil
	}
	// Check the first leaf again with the locator.
	var out diag.List
	s := sv.leafSpec(sv.leaves.at(sv.firstChecked))
	for _, x := range check.RunWith(&s, spec.Derive(&s), sv.at, sv.opts.checkOptions()) {
		if slices.Contains(shared, diagKey{x.Code, x.Path, x.Message}) {
			out = append(out, x)
		}
	}
	return out
}

// leastMemory is the variant of leaf i's shape (its grid, vpp, pipeline
// split and optimizer sharding) that needs the least memory: each
// recomputation choice at the smallest micro batch the rules allow, full
// recomputation rerunning every layer where parc chooses the layers. The
// search does not estimate these once a larger micro batch of the shape did
// not fit or its state alone exceeded the headroom, so the least peak it
// saw can be far above what the shape needs at best; a user who is told how
// far from fitting the model is needs this one.
func (sv *solver) leastMemory(i int32) (leaf, foundPlan, bool) {
	base := *sv.leaves.at(i)
	base.node, base.fixedMB, base.g = false, false, 0
	var best leaf
	var bestFP foundPlan
	found := false
	for rc := range sv.recomputes {
		lf := base
		lf.rc, lf.rl = int16(rc), 0
		if sv.recomputes[rc].layersImplied {
			lf.rl = -1
		}
		for _, mb := range slices.Sorted(slices.Values(sv.dom[fMB])) {
			lf.mb = int32(mb)
			s := sv.leafSpec(&lf)
			d := spec.Derive(&s)
			sv.spendEstimates(1)
			if slices.ContainsFunc(check.VerdictWith(&s, d, diag.NoPos, sv.opts.checkOptions()), func(x diag.Diagnostic) bool {
				return x.Severity == diag.Error && x.Code != estimate.CodeMemoryExceedsGPU
			}) {
				continue
			}
			mem := estimate.Fit(&s, d)
			if !found || mem.PerGPUPeakBytes < bestFP.peak {
				best, bestFP, found = lf, foundPlan{leaf: i, peak: mem.PerGPUPeakBytes, frac: mem.FractionOfGPU}, true
			}
			break // a larger micro batch needs at least as much
		}
	}
	return best, bestFP, found
}

// noFeasiblePlan explains why no assignment passed: the errors every
// checked assignment shares (they do not depend on the open fields) as they
// are, and a no-feasible-plan error naming the rules that rejected the most.
func (sv *solver) noFeasiblePlan(r *Result) {
	// sharedHint: the hint of a diagnostic every checked plan shares, by
	// code; it is reported beside this one and its hint names values.
	sharedHint := map[string]string{}
	reportShared := func(x diag.Diagnostic) {
		sv.diags = append(sv.diags, x)
		if _, ok := sharedHint[x.Code]; !ok && x.Hint != "" {
			sharedHint[x.Code] = x.Hint
		}
	}
	for _, x := range sv.sharedChecked() {
		reportShared(x)
	}
	// Likewise the errors every failed verification shares, each once.
	var shared []diagKey
	for k, sd := range sv.verifyCommon {
		if sd.n == sv.verifyFailed && !slices.ContainsFunc(sv.diags, func(x diag.Diagnostic) bool {
			return diagKey{x.Code, x.Path, x.Message} == k
		}) {
			shared = append(shared, k)
		}
	}
	slices.SortFunc(shared, func(a, b diagKey) int { return cmp.Compare(a.code+a.path+a.message, b.code+b.path+b.message) })
	for _, k := range shared {
		reportShared(sv.verifyCommon[k].x)
	}
	// least: the plan with the least memory parc found, at its least-memory
	// variant; when it fits the GPU, the headroom it needs (hint).
	var least foundPlan
	if sv.hasSmallest {
		lf, fp := *sv.leaves.at(sv.smallest.leaf), sv.smallest
		cands := []int32{sv.smallest.leaf}
		if sv.hasLeastState {
			cands = append(cands, sv.leastState.leaf)
		}
		for _, i := range cands {
			if l, f, ok := sv.leastMemory(i); ok && f.peak < fp.peak {
				lf, fp = l, f
			}
		}
		least = fp
		code := estimate.CodeMemoryExceedsGPU
		if fp.frac <= 1 {
			// The plans over the GPU are then an arbitrary one's numbers
			// (the first estimated): the least plan says more.
			code = CodeAboveHeadroom
			delete(sv.examples, estimate.CodeMemoryExceedsGPU)
		}
		sv.examples[code] = fmt.Sprintf("the plan with the least memory parc found needs %s per GPU (%.1f%% of the GPU): %s",
			estimate.GiB(fp.peak), 100*fp.frac, sv.leafLabel(&lf))
	}
	// The assignments that satisfy the rules failed for the reasons that
	// matter; when there are none, the rules themselves are the reason.
	counts, total := topCounts(sv.leafRejected)
	passed := sv.spaceSize() - sv.pruned
	what := fmt.Sprintf("none of the %d assignments that satisfy Megatron's rules passes every check", passed)
	if passed == 0 {
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
	open := r.Open
	if len(open) == 0 {
		open = r.Implied // parc chose only the pipeline split
	}
	msg := fmt.Sprintf("%s (open: %s)", what, strings.Join(open, ", "))
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	hint := "widen the constraints on the open fields, or change the cluster or the training shape"
	if len(counts) > 0 {
		if info, ok := check.Lookup(counts[0].code); ok {
			hint = asHint(info.Fix, hint)
		}
		if h, ok := sharedHint[counts[0].code]; ok {
			// Every plan fails that one diagnostic: its own hint, not the
			// code's general advice.
			hint = h
		}
		if passed == 0 {
			// No plan satisfies the rules: the node count's factors are
			// the usual cause (every degree divides the world size, and
			// its data-parallel share the global batch), so the nearest
			// counts with a plan are named. The most frequent rule's own
			// advice is not added to them: it is the first rule each
			// assignment breaks, not the one that blocks them all (on a
			// dense model with ep open and a batch no data-parallel size
			// divides, "set ep to 1" finds no plan).
			if near := sv.nearestWithPlan(); near != "" {
				hint = near
			} else if len(counts) > 1 {
				// Several rules share the assignments: fixing the most
				// frequent one alone may leave the others (tp open on a
				// plan with vpp 3 and pp 1: a tp that divides the heads
				// still breaks vpp-pp), so each one's advice is given.
				var each []string
				for i, c := range counts {
					if i == 3 {
						break
					}
					if info, ok := check.Lookup(c.code); ok {
						if fix := asHint(info.Fix, ""); fix != "" {
							each = append(each, fmt.Sprintf("%s: %s", c.code, strings.TrimSuffix(fix, ".")))
						}
					}
				}
				if len(each) > 1 {
					hint = "each assignment breaks one of these rules; clear all of them: " + strings.Join(each, "; ")
				}
			}
		}
		if c := counts[0].code; c == estimate.CodeMemoryExceedsGPU || c == CodeAboveHeadroom {
			if why := sv.stateFloorText(); why != "" {
				msg += "; " + why
			}
			add := "add nodes"
			n := sv.base.Cluster.Nodes
			var more []int
			for k := 2 * n; k <= 64*n && k*sv.base.Cluster.GPUsPerNode <= spec.MaxWorld; k *= 2 {
				more = append(more, k)
			}
			// What the hint knows of the node count: below how many the
			// model's state cannot fit (stateFloorText), and one with a plan.
			var about []string
			if need, ok := sv.stateFloor().Nodes(sv.base.Cluster.GPUsPerNode, sv.headroomBytes()); ok && need > n {
				about = append(about, fmt.Sprintf("with these settings fewer than %d cannot hold the model's state", need))
			}
			if k, ok := sv.withPlan(more, setNodes); ok {
				about = append(about, fmt.Sprintf("with cluster.nodes %d, now %d, parc finds a plan", k, n))
			}
			if len(about) > 0 {
				add += " (" + strings.Join(about, "; ") + ")"
			}
			fixes := []string{add, "use GPUs with more memory"}
			// A setting is suggested only when a search with it finds a plan.
			if !sv.open[fRC] && sv.base.Train.Recompute != "full" && sv.fixFits(fixFullRecompute) {
				fixes = append(fixes, `leave train.recompute open (or set it to "full")`)
			}
			if !sv.open[fDO] && !sv.base.Train.DistributedOptimizer && sv.fixFits(fixDistributedOptimizer) {
				fixes = append(fixes, "set train.distributed_optimizer: true")
			}
			// The settings NVIDIA's published runs fit with (the memory
			// hints of parc vet offer them too: estimate.memoryRemedies).
			if t := sv.base.Train; t.Precision == "fp8" && !t.FP8ParamGather && sv.fixFits(fixFP8ParamGather) {
				fixes = append(fixes, "set train.fp8_param_gather: true")
			}
			if sv.base.Train.FP32AdamMoments() && sv.fixFits(fixBF16Moments) {
				fixes = append(fixes, `set train.precision_aware_optimizer: true, train.exp_avg_dtype: "bf16" and train.exp_avg_sq_dtype: "bf16"`)
			}
			// Name only the degrees the spec fixed: one already open needs no advice.
			var fixed []string
			for _, f := range []struct {
				open bool
				path string
			}{{sv.open[fTP], "parallel.tp"}, {sv.open[fPP], "parallel.pp"}} {
				if !f.open {
					fixed = append(fixed, f.path)
				}
			}
			if len(fixed) > 0 {
				fixes = append(fixes, "leave "+strings.Join(fixed, " and ")+" open")
			}
			// The least headroom, in hundredths, that the plan with the
			// least memory fits: a search with it finds that plan (not
			// when that plan is within the headroom already and failed
			// for another reason).
			if need := math.Ceil(least.frac*100) / 100; sv.hasSmallest && least.frac <= 1 && need > sv.opts.MemoryHeadroom {
				fixes = append(fixes, fmt.Sprintf("raise solve.memory_headroom (or --memory-headroom; now %g) to %g if the runtime's own buffers fit in the rest", sv.opts.MemoryHeadroom, need))
			}
			hint = strings.Join(fixes[:len(fixes)-1], ", ") + " or " + fixes[len(fixes)-1]
		}
	}
	path := "parallel"
	if open := append(slices.Clone(r.Open), r.Implied...); len(open) > 0 {
		path = open[0]
	}
	sv.diags.Errorf(sv.at(path), path, CodeNoFeasiblePlan, hint, "%s", msg)
}

// hintRef is how a code's general advice points at the hint a single
// diagnostic carries: "(the hint lists them)", "; the hint lists what fits".
var hintRef = regexp.MustCompile(`\s*\((?:the|as the) hint[^)]*\)|;\s*the hint[^.;]*`)

// asHint is a code's general advice (check.CodeInfo.Fix) as the hint of a
// no-feasible-plan error, which lists no values of its own: the references
// to a single diagnostic's hint dropped; general when the advice is only
// such a reference ("Follow the hint").
func asHint(fix, general string) string {
	h := strings.TrimSpace(hintRef.ReplaceAllString(fix, ""))
	if h == "" || strings.Contains(strings.ToLower(h), "hint") {
		return general
	}
	return h
}

// hintFix is a setting a no-feasible-plan hint may suggest.
type hintFix int8

const (
	noFix                   hintFix = iota
	fixFullRecompute                // train.recompute "full" (what an open recompute may choose)
	fixDistributedOptimizer         // train.distributed_optimizer: true
	fixShape                        // another cluster.nodes or train.global_batch (Options.nodes, globalBatch)
	fixFP8ParamGather               // train.fp8_param_gather: true (Options.instead)
	fixBF16Moments                  // the precision-aware optimizer with bf16 moments (Options.instead)
)

// fixFits reports whether a search of the same spec with fix applied finds
// a plan: the hint names a fix only then. A search that is itself trying a
// fix tries no other, and each try gets hintShare (one that runs out finds
// no plan: the fix goes unnamed; withPlan counts the tries).
func (sv *solver) fixFits(fix hintFix) bool {
	if sv.opts.trying != noFix {
		return false
	}
	found, _, _ := sv.tryFix(fix, sv.hintShare(), func(*Options) {})
	return found
}

// hintShare is the work a no-feasible-plan hint's tries get: half what
// this search and the tries before had left.
func (sv *solver) hintShare() int64 { return max((sv.limitOf()-sv.work-sv.hintWork)/2, 1) }

// tryFix runs a search of the same spec with fix applied and set's change
// to its options, doing at most budget work: whether it found a plan, the
// work it did, and whether it ran out.
func (sv *solver) tryFix(fix hintFix, budget int64, set func(*Options)) (found bool, work int64, exhausted bool) {
	o := sv.opts
	o.trying, o.Top, o.budget = fix, 1, budget
	set(&o)
	t, _ := newSolver(sv.res, o)
	if t == nil || (hintStateFloor && !t.stateCanFit()) {
		return false, 0, false
	}
	r := t.run()
	sv.hintWork += t.work + t.hintWork
	return len(r.Candidates) > 0, t.work, t.exhausted
}

// nearestWithPlan names the node counts and the global batches nearest the
// spec's, below and above (within half and twice of them, 16 tries each
// way), with which a search finds a plan: "use cluster.nodes 12 or 14 (now
// 13), or train.global_batch 988 or 1001 (now 1000): parc finds a plan with
// each"; "" when none does.
func (sv *solver) nearestWithPlan() string {
	var parts []string
	values := 0
	for _, f := range []struct {
		path string
		now  int
		max  int
		set  func(*Options, int)
	}{
		{"cluster.nodes", sv.base.Cluster.Nodes, spec.MaxWorld / sv.base.Cluster.GPUsPerNode, setNodes},
		{"train.global_batch", sv.base.Train.GlobalBatch, spec.MaxGlobalBatch, setGlobalBatch},
	} {
		const tries = 16
		var below, above []int
		for k := f.now - 1; k >= max(1, f.now/2) && len(below) < tries; k-- {
			below = append(below, k)
		}
		for k := f.now + 1; k <= min(2*f.now, f.max) && len(above) < tries; k++ {
			above = append(above, k)
		}
		if f.path == "train.global_batch" {
			// The batches a plan's micro batch · dp divides, nearest first:
			// where the neighbours of a small batch are all below every
			// data-parallel size, one of these is the nearest that can work.
			lo, hi := sv.batchMultiples(f.now, f.max)
			near := func(m, n []int) []int {
				m = m[:min(len(m), tries)]
				return append(m, slices.DeleteFunc(n, func(k int) bool { return slices.Contains(m, k) })...)
			}
			below, above = near(lo, below), near(hi, above)
		}
		var found []string
		for _, counts := range [][]int{below, above} {
			if k, ok := sv.withPlan(counts, f.set); ok {
				found = append(found, strconv.Itoa(k))
			}
		}
		if len(found) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s (now %d)", f.path, strings.Join(found, " or "), f.now))
			values += len(found)
		}
	}
	switch values {
	case 0:
		return ""
	case 1:
		return "use " + parts[0] + ": parc finds a plan with it"
	}
	return "use " + strings.Join(parts, ", or ") + ": parc finds a plan with each"
}

// batchMultiples are the global batches nearest now, below and above it
// (up to most), that the least micro batch times one of the data-parallel
// sizes the searched degrees give divides: for each dp, the multiples of
// mb·dp either side of now, nearest first.
func (sv *solver) batchMultiples(now, most int) (below, above []int) {
	mb := slices.Min(sv.dom[fMB])
	seen := map[int]bool{}
	for _, tp := range sv.dom[fTP] {
		for _, cp := range sv.dom[fCP] {
			for _, pp := range sv.dom[fPP] {
				model := tp * cp * pp
				if model <= 0 || sv.world%model != 0 {
					continue
				}
				unit := max(mb, 1) * sv.world / model
				if k := now / unit * unit; k >= 1 && k != now && !seen[k] {
					seen[k] = true
					below = append(below, k)
				}
				if k := (now/unit + 1) * unit; k <= most && !seen[k] {
					seen[k] = true
					above = append(above, k)
				}
			}
		}
	}
	slices.Sort(below)
	slices.Reverse(below)
	slices.Sort(above)
	return below, above
}

func setNodes(o *Options, n int)       { o.nodes = n }
func setGlobalBatch(o *Options, n int) { o.globalBatch = n }

// hintStateFloor: a hint's search is not run when the model's state cannot
// fit (stateCanFit); off only in TestHintStateFloorChangesNothing.
var hintStateFloor = true

// stateFloor is the least model state of the spec's plans over every GPU
// (estimate.StateFloorOf), under the optimizer sharding of the search's
// that keeps the least.
func (sv *solver) stateFloor() estimate.StateFloor {
	var least estimate.StateFloor
	for i, sh := range sv.shards {
		s := sv.base
		sh.apply(&s.Train)
		if f := estimate.StateFloorOf(&s); i == 0 || f.Bytes() < least.Bytes() {
			least = f
		}
	}
	return least
}

// headroomBytes is the memory a plan may need per GPU.
func (sv *solver) headroomBytes() float64 {
	return sv.opts.MemoryHeadroom * float64(sv.base.Cluster.GPU.Bytes())
}

// stateCanFit reports whether the spec's nodes can hold the model's state
// within the headroom (stateFloor). When they cannot, no plan fits, so a
// hint's search (tryFix: more nodes, another batch, a memory setting) is
// not run.
func (sv *solver) stateCanFit() bool {
	c := sv.base.Cluster
	return sv.stateFloor().Fits(c.Nodes, c.GPUsPerNode, sv.headroomBytes())
}

// stateFloorText says why no plan fits when the nodes cannot hold the
// model's state within the headroom: "" when they can.
func (sv *solver) stateFloorText() string {
	c := sv.base.Cluster
	return sv.stateFloor().Note(c.Nodes, c.GPUsPerNode, sv.headroomBytes(),
		fmt.Sprintf("the headroom's %s (%g of the GPU)", estimate.GiB(int64(sv.headroomBytes())), sv.opts.MemoryHeadroom))
}

// withPlan returns the first value of values with which a search of the
// same spec, set sets on its options (the node count, the global batch),
// finds a plan, one that passes every check, so the hint may name it. The
// searches share hintShare, in turn, as each of fixFits' tries gets it: a
// failed search makes at most five such runs of tries (a memory failure:
// the nodes and fixFits' four; a rules failure: the nodes and the global
// batch, below and above), each getting half of what the search and the
// runs before it left, so together they stay within the budget. The first
// that runs out ends the list.
func (sv *solver) withPlan(values []int, set func(*Options, int)) (int, bool) {
	if sv.opts.trying != noFix {
		return 0, false
	}
	left := sv.hintShare()
	for _, n := range values {
		found, work, out := sv.tryFix(fixShape, left, func(o *Options) { set(o, n) })
		if found {
			return n, true
		}
		if left -= work; out || left <= 0 {
			break
		}
	}
	return 0, false
}

func (sv *solver) leafLabel(lf *leaf) string {
	etp := lf.etp
	if etp == etpFollowsTP {
		etp = lf.tp
	}
	s := fmt.Sprintf("tp=%d pp=%d vpp=%d cp=%d ep=%d etp=%d micro_batch=%d recompute=%s",
		lf.tp, lf.pp, lf.vpp, lf.cp, lf.ep, etp, lf.mb, sv.recomputes[lf.rc].mode)
	if m := sv.recomputes[lf.rc].modules; m != nil {
		s += " recompute_modules=" + strings.Join(m, ",")
	}
	if k := blockLayers(sv.recomputes[lf.rc], lf.rl); k != nil {
		s += fmt.Sprintf(" recompute_method=block recompute_layers=%d", *k)
	}
	if sp := sv.splits[lf.split].String(); sp != "" {
		s += " " + sp
	}
	if lf.g > 0 {
		s += fmt.Sprintf(" microbatch_group_size=%d", lf.g)
	}
	return s
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

// blockLayers is a leaf's train.recompute_layers when parc chose the block
// method for it (nil otherwise).
func blockLayers(r recompute, rl int32) *int {
	if !r.layersImplied || rl <= 0 {
		return nil
	}
	k := int(rl)
	return &k
}

// fullMethod is a plan's train.recompute_method with full recomputation
// ("" otherwise).
func fullMethod(t *spec.Train) string {
	if t.Recompute != "full" {
		return ""
	}
	if t.RecomputeMethod == "" {
		return "uniform" // the schema's default
	}
	return t.RecomputeMethod
}

// variantMethod is the recompute_method of a variant with recomputation r
// and rl block layers: parc's choice when the spec leaves it (block with
// rl layers, uniform for every layer), else the spec's.
func (sv *solver) variantMethod(r recompute, rl int32) string {
	switch {
	case r.mode != "full":
		return ""
	case blockLayers(r, rl) != nil:
		return "block"
	case r.layersImplied:
		return "uniform"
	}
	return fullMethod(&sv.base.Train)
}

// specBlockLayers is a plan's train.recompute_layers with full block
// recomputation (nil otherwise).
func specBlockLayers(t *spec.Train) *int {
	if t.Recompute != "full" || t.RecomputeMethod != "block" {
		return nil
	}
	k := 1
	if t.RecomputeLayers != nil {
		k = *t.RecomputeLayers
	}
	return &k
}

// listed are the groups of gs (ranked) that run lists as candidates: the
// first of each distinct parallel shape, the first top of them.
func listed(gs []group, top int) []group {
	var out []group
	seen := map[shapeKey]bool{}
	for _, g := range gs {
		if k := g.shape.distinct(); !seen[k] && len(out) < top {
			seen[k] = true
			out = append(out, g)
		}
	}
	return out
}

// distinctShapes is how many parallel shapes gs hold, whatever their
// pipeline splits.
func distinctShapes(gs []group) int {
	seen := map[shapeKey]bool{}
	for _, g := range gs {
		seen[g.shape.distinct()] = true
	}
	return len(seen)
}

// variant is found plan fp as a variant of the listed plan own of its
// parallel shape: its micro batch, recomputation, optimizer sharding and
// group size, and its pipeline split when that differs from own's.
func (sv *solver) variant(fp, own foundPlan) Variant {
	lf := sv.leaves.at(fp.leaf)
	sh := sv.shards[lf.shard]
	mods := sv.recomputes[lf.rc].modules
	if sv.modulesOpen && sv.recomputes[lf.rc].mode == "selective" {
		mods = modulesWritten(mods) // as verify writes it
	}
	v := Variant{
		Train: Train{MicroBatch: int(lf.mb), Recompute: sv.recomputes[lf.rc].mode, RecomputeModules: mods,
			RecomputeLayers: blockLayers(sv.recomputes[lf.rc], lf.rl), RecomputeMethod: sv.variantMethod(sv.recomputes[lf.rc], lf.rl),
			DistributedOptimizer: sh.distopt, FSDP: sh.fsdp},
		MicrobatchGroupSize: groupOf(lf.g),
		StepTimeS:           fp.step, VsShapePct: 100 * (fp.step - own.step) / own.step, PerGPUPeakBytes: fp.peak,
	}
	ol := sv.leaves.at(own.leaf)
	if lf.vpp != ol.vpp {
		vpp := int(lf.vpp)
		v.VPP = &vpp
	}
	switch {
	case lf.split == ol.split && (lf.vpp == ol.vpp || !sv.layoutOpen):
	case sv.layoutOpen:
		if l, ok := sv.planLayout(lf); ok {
			v.Split = &Split{Layout: &l}
		}
	default:
		q := spec.Parallel{PP: int(lf.pp), VPP: int(lf.vpp)}
		sv.applySplit(lf.split, &q)
		v.Split = &Split{AccountForEmbedding: q.AccountForEmbedding, AccountForLoss: q.AccountForLoss,
			FirstStageLayers: q.FirstStageLayers, LastStageLayers: q.LastStageLayers, Layout: q.Layout}
	}
	return v
}
