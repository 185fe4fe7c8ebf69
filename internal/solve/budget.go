package solve

import "strings"

// CodeSearchTooLarge: the open fields span more work than a search may do.
const CodeSearchTooLarge = "solve-search-too-large"

// The search is exact, so its work grows with the product of the open
// fields' domains and, per plan estimated, with the model's layers (the
// memory and time estimates walk every layer of every stage). parc runs on
// specs it does not own: a schema-valid spec with tp, pp, cp and vpp open
// on 65,536 layers and 4M GPUs, where no plan fits (so no bound prunes),
// ran for more than 5 minutes before this budget. Work is counted, not
// timed, so the outcome does not depend on the machine.
//
// A unit is about a nanosecond of one core of a 2-vCPU AMD EPYC (CI's
// machine), fitted on four searches (DeepSeek-V3 on 1,024 GPUs, a
// 65,536-layer model, and two highly divisible worlds with nothing that
// fits). BenchmarkWorkUnit measures it: 0.98 ns/unit for the 65,536-layer
// search, 1.16 for DeepSeek-V3 and 2.7 for Llama 3.1 405B on 16,384 GPUs, a
// small search whose fixed setup and verification the units undercount.
// testdata/budget/divisible.cue measured 1.05-1.41 while every plan of it
// broke hidden-heads; that rule now stops a search before it starts
// (check.FixedBySpec), and with a rule checked plan by plan instead it
// measures 0.35-0.39: a plan the rules reject is charged as the two
// estimates it never gets, so such a search stops after about 3 s.
// testdata/budget/wide-moe.cue, which stores two million plans and nodes,
// measures 1.59-1.65 (10 s); before a node of one micro batch whose every
// variant the memory rules out was rejected whole, it stored 9 million and
// measured 2.77 (the units count no memory).
//
// One estimate costs estimateFixedWork plus layerWork per layer (10 µs plus
// 17 ns a layer: 11 µs for 61 layers, 1.1 ms for 65,536), a plan taken
// from the search's heap leafWork (its bound, the
// memory already found, the heap itself), a bound from the tables boundWork
// (a node's micro batches each get one), an enumerated node, a split's
// stages compared or a layout written nodeWork plus one unit per stage (or
// layer) it lays out. The budget stops any search after about 8 s there
// (counted in estimates alone, the units undercounted small models up to
// tenfold: a 120-layer search on 20,160 GPUs ran 21 s before it stopped).
// The published corpus's largest search (TestPublishedCorpus -corpus, its
// units read with a temporary counter in Solve) spends about 5.1e9 units
// (a 128-GPU row; 6.7e9, Qwen3-235B-A22B on 256 GPUs, before smaller micro
// batches were ruled out by memory: memFail.peakBelow);
// BenchmarkSolveDeepSeek1kOpen about 0.5e9.
//
// A plan's verification (its spec decoded from CUE, every rule with its
// hints, the layout, the estimate) costs verifyWork: 4.3-6.0 ms each on
// Llama 3 8B on 56 GPUs, DeepSeek-V3 on 1,024, Llama 3.1 405B on 16,384
// and Qwen3-235B-A22B on 256 (a temporary test timing 20 verifications of
// each search's best plan). Counted as four estimates, about 44,000 units,
// it was undercounted a hundredfold: a search whose every verification
// failed (a try of another node count whose spec the verification read
// back with the spec's own nodes) ran 86 s at 2e9 units. A search verifies
// its top shapes and the fastest plan, some 5-20 plans: 0.1e9 units.
const (
	estimateFixedWork = 10_000
	layerWork         = 17
	leafWork          = 150
	boundWork         = 45
	nodeWork          = 50
	verifyWork        = 5_000_000
	searchBudget      = 8_000_000_000
)

// minSharedSample is how many plans a stopped search must have checked
// before it reports the errors they all had as the spec's.
const minSharedSample = 100

// budget is the search's work account.
type budget struct {
	work int64
	// limit is the work the search may do (0: searchBudget; a search
	// trying a hint's fix gets what its caller had left, fixFits).
	limit int64
	// exhausted is set once work passes the limit; every loop of the
	// search stops at its next step.
	exhausted bool
	// hintWork is the work the searches a no-feasible-plan hint tried
	// (tryFix) did between them: each try gets half of what is left after
	// the search and the tries before it (hintShare), so the tries together
	// stay within the budget.
	hintWork int64
}

// limitOf is the work the search may do.
func (b *budget) limitOf() int64 {
	if b.limit <= 0 {
		return searchBudget
	}
	return b.limit
}

// spend adds units of work and reports whether the budget is exhausted.
func (b *budget) spend(units int64) bool {
	b.work += units
	if b.work > b.limitOf() {
		b.exhausted = true
	}
	return b.exhausted
}

// estimateWork is the work of one estimate of a plan of the spec's model.
func (sv *solver) estimateWork() int64 {
	return estimateFixedWork + layerWork*int64(sv.base.Model.Layers+sv.base.Model.MTPLayers)
}

// spendEstimates charges n estimates of a plan.
func (sv *solver) spendEstimates(n int) bool { return sv.spend(int64(n) * sv.estimateWork()) }

// stopped is the result of a search that exhausted its budget: no
// candidate, the counts so far, and the error at the first open field.
func (sv *solver) stopped(r *Result) *Result {
	r.Pruned, r.Infeasible, r.Evaluated = sv.pruned, sv.infeasible, sv.evaluated
	r.Feasible = int64(len(sv.found))
	// An error every plan checked so far had (of enough of them to say
	// so) is likely why nothing was found: said as it is, it may be what
	// the user has to fix.
	if sv.checked >= minSharedSample {
		sv.diags = append(sv.diags, sv.sharedChecked()...)
	}
	sv.searchTooLarge(r)
	return r
}

// searchTooLarge reports the exhausted budget at the first open field.
func (sv *solver) searchTooLarge(r *Result) {
	open := append(append([]string(nil), r.Open...), r.Implied...)
	path := "parallel"
	if len(open) > 0 {
		path = open[0]
	}
	sv.diags.Errorf(sv.at(path), path, CodeSearchTooLarge,
		"write some of the open fields as a value or a short list of values instead of `int` or a bound, or leave fewer of them open",
		"the search for the open fields (%s) stopped after %d units of work, its limit, with %d plans estimated (%d assignments in all, %d layers per plan): parc does not pick a plan from a search it could not finish",
		strings.Join(open, ", "), sv.work, sv.evaluated, r.Space, sv.base.Model.Layers)
}
