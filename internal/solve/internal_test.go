package solve

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/resolve"
	"parc.dev/parc/internal/spec"
)

// randomGrid draws degrees that tile a world of nodes × gpn ranks.
func randomGrid(rng *rand.Rand) layout.Config {
	pick := func(xs ...int) int { return xs[rng.Intn(len(xs))] }
	gpn := pick(1, 2, 4, 8)
	c := layout.Config{GPUsPerNode: gpn, Order: pick2(rng, spec.OrderDefault, spec.OrderPPDP)}
	c.NVLinkDomain = pick(gpn, gpn, 2*gpn, 72, max(gpn/2, 1), 3*gpn)
	for {
		c.Nodes = pick(1, 2, 3, 4, 6, 8, 9, 18, 36)
		w := c.Nodes * gpn
		c.TP, c.CP, c.PP = pick(1, 2, 3, 4, 8), pick(1, 2, 3, 4), pick(1, 2, 3, 4)
		c.EP, c.ETP = pick(1, 2, 4, 8), pick(1, 2, 4)
		if w%(c.TP*c.CP*c.PP) == 0 && w%(c.ETP*c.EP*c.PP) == 0 && w <= 4096 {
			return c
		}
	}
}

func pick2(rng *rand.Rand, a, b string) string {
	if rng.Intn(2) == 0 {
		return a
	}
	return b
}

// TestLinksMatchLayout: the closed form agrees with the groups layout.Build
// enumerates, for every family the estimate and the topology checks use.
func TestLinksMatchLayout(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for range 3000 {
		c := randomGrid(rng)
		l, ds := layout.New(c) // errors only for Megatron's order asserts
		require.NotNil(t, l, "%+v: %v", c, ds)
		w := c.Nodes * c.GPUsPerNode
		dp, edp := w/(c.TP*c.CP*c.PP), w/(c.ETP*c.EP*c.PP)
		gl := linksFor(c.Order, c.NVLinkDomain, c.TP, c.CP, c.PP, dp, c.EP, c.ETP, edp)
		for _, fam := range []string{"tp", "cp", "dp", "dp-cp", "pp", "ep", "etp", "edp"} {
			assert.Equal(t, l.SummaryOf(fam).Link, gl.links[fam], "%s in %+v", fam, c)
		}
		// Nodes: the warnings' families.
		dense := newRankGrid(c.Order, map[string]int{"tp": c.TP, "cp": c.CP, "ep": 1, "dp": dp, "pp": c.PP})
		expert := newRankGrid(c.Order, map[string]int{"tp": c.ETP, "cp": 1, "ep": c.EP, "dp": edp, "pp": c.PP})
		assert.Equal(t, l.SummaryOf("cp").GroupsLeavingNode > 0, dense.crosses([]string{"cp"}, c.GPUsPerNode), "cp nodes %+v", c)
		assert.Equal(t, l.SummaryOf("ep").GroupsLeavingNode > 0, expert.crosses([]string{"ep"}, c.GPUsPerNode), "ep nodes %+v", c)
		assert.Equal(t, l.SummaryOf("tp-pp").Link == estimate.LinkNetwork, dense.crosses([]string{"tp", "pp"}, c.NVLinkDomain), "tp-pp %+v", c)
	}
}

// TestLinksMatchEstimate: the same against the estimate's own fallback,
// for the families the estimate asks about (embd only matters, and only
// then equals the pp link, with tied embeddings).
func TestLinksMatchEstimate(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for range 500 {
		c := randomGrid(rng)
		w := c.Nodes * c.GPUsPerNode
		s := &spec.Spec{Cluster: spec.Cluster{Nodes: c.Nodes, GPUsPerNode: c.GPUsPerNode, NVLinkDomain: c.NVLinkDomain},
			Model:    spec.Model{Layers: 4, Hidden: 64, Heads: 4, Vocab: 100, MakeVocabDivisibleBy: 128, TieEmbeddings: true},
			Parallel: spec.Parallel{TP: c.TP, CP: c.CP, PP: c.PP, EP: c.EP, ETP: &c.ETP, Order: c.Order, VPP: 1}}
		d := spec.Derive(s)
		want := estimate.DefaultLinks(s, d)
		gl := linksFor(c.Order, c.NVLinkDomain, c.TP, c.CP, c.PP, w/(c.TP*c.CP*c.PP), c.EP, c.ETP, w/(c.ETP*c.EP*c.PP))
		for fam, l := range gl.links {
			assert.Equal(t, want[fam], l, "%s in %+v", fam, c)
		}
	}
}

// leavesOf builds a solver for a test spec and enumerates its leaves.
func leavesOf(t *testing.T, path string, setup ...func(*solver)) *solver {
	t.Helper()
	res := loadFile(t, path)
	sv, ds := newSolver(res, Options{Top: 5})
	require.NotNil(t, sv, "%v", ds)
	for _, f := range setup {
		f(sv)
	}
	sv.startSearch(map[string]int64{})
	sv.prepareBounds()
	sv.enumerate()
	// Expand every node, and the nodes of one micro batch they expand
	// into: the tests look at complete assignments.
	for i := 0; i < sv.leaves.len(); i++ {
		if sv.leaves.at(int32(i)).node {
			sv.expand(int32(i))
		}
	}
	var rest leafStore
	for i := range sv.leaves.len() {
		if lf := sv.leaves.at(int32(i)); !lf.node {
			rest.add(*lf)
		}
	}
	sv.leaves = rest
	return sv
}

// sample picks n leaves spread over the enumeration.
func sample(sv *solver, n int) []int32 {
	var out []int32
	// A stride that shares no small factor with the enumeration's inner
	// levels (recompute modes, shardings, micro batches), so the sample does
	// not fall on one value of them.
	step := max(sv.leaves.len()/n, 1)
	for gcd(step, 2*3*5*7*11*13) != 1 {
		step++
	}
	for i := 0; i < sv.leaves.len(); i += step {
		out = append(out, int32(i))
	}
	return out
}

// TestFastEstimateMatchesReal: the search's estimate (every link from the
// closed form) gives the numbers and diagnostics of estimate.Run with the
// layout's links.
func TestFastEstimateMatchesReal(t *testing.T) {
	for _, f := range []string{"testdata/bench-405b-16k.cue", "testdata/bench-deepseek-2k.cue", "testdata/mixtral-64.cue"} {
		sv := leavesOf(t, f)
		n := 0
		for _, i := range sample(sv, 60) {
			lf := sv.leaves.at(i)
			s := sv.leafSpec(lf)
			d := spec.Derive(&s)
			real, rds := estimate.Run(&s, d, nil, diag.NoPos) // links from the layout
			fast, fds := estimate.Run(&s, d, sv.grids[lf.grid].links.links, diag.NoPos)
			label := sv.leafLabel(lf)
			// The estimate's own sums vary in the last bit (map order).
			assert.InEpsilon(t, real.StepTimeS, fast.StepTimeS, 1e-14, label)
			assert.Equal(t, real.Memory, fast.Memory, label)
			assert.InEpsilon(t, real.MFU, fast.MFU, 1e-14, label)
			assert.Equal(t, real.Comms, fast.Comms, label)
			assert.Equal(t, real.Pipeline.Microbatches, fast.Pipeline.Microbatches, label)
			assert.InEpsilon(t, real.Pipeline.BubbleTimeS+1, fast.Pipeline.BubbleTimeS+1, 1e-14, label)
			assert.Equal(t, codes(rds), codes(fds), label)
			n++
		}
		assert.Greater(t, n, 30, f)
	}
}

func codes(ds diag.List) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Severity.String()+" "+d.Code)
	}
	slices.Sort(out)
	return out
}

// TestBoundsBelowStepTime: both bounds of every sampled leaf are at most its
// estimated step time.
func TestBoundsBelowStepTime(t *testing.T) {
	for _, f := range []string{"testdata/bench-405b-16k.cue", "testdata/bench-deepseek-2k.cue", "testdata/mixtral-64.cue"} {
		sv := leavesOf(t, f)
		n := 0
		for _, i := range sample(sv, 400) {
			lf := sv.leaves.at(i)
			s := sv.leafSpec(lf)
			d := spec.Derive(&s)
			e, _ := estimate.Run(&s, d, sv.grids[lf.grid].links.links, diag.NoPos)
			b1 := lf.key
			b2 := sv.stageBoundOf(lf)
			b3, _ := sv.exactBoundOf(lf, true)
			label := fmt.Sprintf("%s %s", f, sv.leafLabel(lf))
			assert.LessOrEqual(t, b1, e.StepTimeS*(1+1e-12), "compute bound: "+label)
			assert.LessOrEqual(t, b2, e.StepTimeS*(1+1e-12), "one-stage bound: "+label)
			assert.LessOrEqual(t, b3, e.StepTimeS*(1+1e-12), "exact one-stage bound: "+label)
			n++
		}
		assert.Greater(t, n, 200, f)
	}
}

// TestDataParallelFloorBelowStepTime: behindDataParallel's bound, the third
// bound plus estimate.OverlapResidual of the data-parallel collectives'
// time as a plan of the same state with another micro batch measured it
// (dataParallelFloor.at), stays at or below the step time, with every
// optimizer sharding and each Megatron-FSDP strategy.
func TestDataParallelFloorBelowStepTime(t *testing.T) {
	src, err := os.ReadFile("testdata/mixtral-64.cue")
	require.NoError(t, err)
	n, raised := 0, 0
	for _, strategy := range []string{"", `, data_parallel_sharding_strategy: "optim_grads"`} {
		text := strings.Replace(string(src), "distributed_optimizer: true", "distributed_optimizer: bool, fsdp: bool"+strategy, 1)
		path := filepath.Join(t.TempDir(), "plan.cue")
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		sv := leavesOf(t, path)
		timed := map[stateKey]dataParallelFloor{}
		for _, i := range sample(sv, 400) {
			lf := *sv.leaves.at(i)
			s := sv.leafSpec(&lf)
			e := estimate.StepTime(&s, spec.Derive(&s), sv.grids[lf.grid].links.links)
			k := stateKey{lf.grid, lf.vpp, lf.split, int32(lf.shard)}
			f, ok := timed[k]
			if !ok {
				// A plan of the state with another micro batch.
				for _, mb := range sv.mbs {
					if mb != lf.mb {
						other := lf
						other.mb = mb
						os2 := sv.leafSpec(&other)
						oe := estimate.StepTime(&os2, spec.Derive(&os2), sv.grids[lf.grid].links.links)
						f = dataParallelFloor{oe.Comms["dp"].TimeS + oe.Comms["edp"].TimeS, sv.microbatches(&other)}
						break
					}
				}
				timed[k] = f
			}
			third, _ := sv.exactBoundOf(&lf, true)
			floor := estimate.OverlapResidual * f.at(sv.microbatches(&lf))
			label := sv.leafLabel(&lf)
			assert.LessOrEqual(t, third+floor, e.StepTimeS*(1+1e-12), label)
			n++
			if floor > 0.02*e.StepTimeS {
				raised++
			}
		}
	}
	assert.Greater(t, n, 400)
	// The floor is worth having: with FSDP's collectives every microbatch it
	// is a sizeable share of the step.
	assert.Greater(t, raised, n/10)
	t.Logf("%d leaves, %d with a floor above 2%% of the step", n, raised)
}

// TestRestSameUnderEverySharding checks restRules' premise: what each
// pipeline stage holds beside its weights, gradients and optimizer state is
// the same under every optimizer sharding (no sharding, the distributed
// optimizer, Megatron-FSDP's full and optim_grads), on sampled plans of
// Mixtral 8x7B and DeepSeek-V3 in bf16 and fp8 (whose weight copies move
// with the sharding: they must stay in the state).
func TestRestSameUnderEverySharding(t *testing.T) {
	n := 0
	for _, tc := range []struct{ path, edit string }{
		{"testdata/mixtral-64.cue", ""},
		{"testdata/mixtral-64.cue", "\tprecision: \"fp8\"\n\tfp8_param_gather: true\n"},
		{"testdata/deepseek-v3-1k-sharding-open.cue", ""},
	} {
		src, err := os.ReadFile(tc.path)
		require.NoError(t, err)
		text := strings.Replace(string(src), "distributed_optimizer: true", "distributed_optimizer: bool, fsdp: bool", 1)
		text = strings.Replace(text, "\tseq_length:", tc.edit+"\tseq_length:", 1)
		path := filepath.Join(t.TempDir(), "plan.cue")
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		sv := leavesOf(t, path)
		for _, i := range sample(sv, 150) {
			lf := *sv.leaves.at(i)
			var want []int64
			for sh := range sv.shards {
				for _, strategy := range []string{"", "optim_grads"} {
					if strategy != "" && !sv.shards[sh].fsdp {
						continue
					}
					lf.shard = int8(sh)
					s := sv.leafSpec(&lf)
					s.Train.DataParallelShardingStrategy = strategy
					mem := estimate.Fit(&s, spec.Derive(&s))
					var rest []int64
					for _, st := range mem.Stages {
						rest = append(rest, st.Total-st.Weights-st.Gradients-st.Optimizer)
					}
					if want == nil {
						want = rest
						continue
					}
					assert.Equal(t, want, rest, "%s %s %s", tc.path, sv.leafLabel(&lf), strategy)
					n++
				}
			}
		}
	}
	assert.Greater(t, n, 300)
}

// TestRerunBoundBelowStepTime: the fourth bound (rerunBoundOf) stays at or
// below the step time of full recomputation rerunning rl layers of each
// model chunk, for every rl, on a dense model and an all-MoE one (any rl)
// and on DeepSeek-V3, whose first layers are dense (every layer only).
func TestRerunBoundBelowStepTime(t *testing.T) {
	for _, f := range []string{"testdata/llama3-70b-64.cue", "testdata/mixtral-64.cue", "testdata/bench-deepseek-2k.cue"} {
		sv := leavesOf(t, f)
		n, tighter := 0, 0
		for _, i := range sample(sv, 1500) {
			lf := *sv.leaves.at(i)
			if !sv.recomputes[lf.rc].layersImplied {
				continue
			}
			s := sv.leafSpec(&lf)
			d := spec.Derive(&s)
			most := spec.LargestChunk(d.Stages)
			for _, rl := range []int32{-1, 1, 2, int32(most / 2), int32(most - 1)} {
				if rl == 0 || int(rl) >= most {
					continue
				}
				lf.rl = rl
				b, ok := sv.rerunBoundOf(&lf, rl, d)
				if rl > 0 && !sv.oneLayerKind {
					assert.False(t, ok, f)
					continue
				}
				require.True(t, ok, f)
				s := sv.leafSpec(&lf)
				e := estimate.StepTime(&s, spec.Derive(&s), sv.grids[lf.grid].links.links)
				assert.LessOrEqual(t, b, e.StepTimeS*(1+1e-12), "%s %s rl=%d", f, sv.leafLabel(&lf), rl)
				n++
				if third, _ := sv.exactBoundOf(&lf, true); b > 1.1*third {
					tighter++
				}
			}
		}
		assert.Greater(t, n, 100, f)
		// The bound is worth its estimate: often well above the third.
		assert.Greater(t, tighter, n/10, f)
		t.Logf("%s: %d bounds checked, %d more than 10%% above the third bound", f, n, tighter)
	}
}

// TestRerunFloorSound samples rerunFloor's premise: with full recomputation
// whose layers parc chooses, the layers fitLeaf chooses for a variant do not
// fall as the micro batch grows (with a smallest group at least as large).
// The last spec has the flex dispatcher's HybridEP buffer and fine-grained
// activation offloading.
func TestRerunFloorSound(t *testing.T) {
	for _, f := range []string{"testdata/bench-405b-16k.cue", "testdata/bench-deepseek-2k.cue", "testdata/mixtral-64.cue", "testdata/llama3-70b-64.cue", "testdata/deepseek-gb300-offload.cue"} {
		sv := leavesOf(t, f)
		rerun := func(lf leaf) int32 {
			if n := sv.groupMin(&lf); n > 0 {
				lf.g = leafGroup(n, int(lf.pp))
			}
			s := sv.leafSpec(&lf)
			sv.fitLeaf(&lf, &s, spec.Derive(&s), math.Inf(1))
			return lf.rl
		}
		n, more := 0, 0
		for _, i := range sample(sv, 1200) {
			lf := *sv.leaves.at(i)
			if lf.mb == 1 || !sv.recomputes[lf.rc].layersImplied {
				continue
			}
			rl := rerun(lf)
			dp := sv.grids[lf.grid].dp
			for _, mb := range sv.mbs {
				small := lf
				small.mb = mb
				if mb >= lf.mb || sv.groupMin(&small) > sv.groupMin(&lf) {
					continue
				}
				if code, _ := sv.batchRule(int(lf.pp), int(lf.vpp), dp, int(sv.groupMin(&small)), int(mb)); code != "" {
					continue
				}
				got := rerun(small)
				assert.False(t, rerunMore(got, rl), "%s %s: micro batch %d reruns %d layers per chunk, %d reruns %d",
					f, sv.leafLabel(&lf), mb, got, lf.mb, rl)
				n++
				more += btoi(rerunMore(rl, got))
			}
		}
		assert.Greater(t, n, 30, f)
		assert.Greater(t, more, 0, f) // the micro batch does move the layers
		t.Logf("%s: %d pairs, %d with more layers at the larger micro batch", f, n, more)
	}
}

// TestStateBoundIgnoresBatchAndRecompute: the memory shortcut assumes the
// weights, gradients and optimizer state of a stage do not depend on
// micro_batch or recompute.
func TestStateBoundIgnoresBatchAndRecompute(t *testing.T) {
	sv := leavesOf(t, "testdata/bench-deepseek-2k.cue")
	type key struct{ grid, vpp int32 }
	state := map[key][]int64{}
	for _, i := range sample(sv, 3000) {
		lf := sv.leaves.at(i)
		s := sv.leafSpec(lf)
		e, _ := estimate.Run(&s, spec.Derive(&s), sv.grids[lf.grid].links.links, diag.NoPos)
		var got []int64
		for _, st := range e.Memory.Stages {
			got = append(got, st.Weights+st.Gradients+st.Optimizer)
		}
		k := key{lf.grid, lf.vpp}
		if want, ok := state[k]; ok {
			assert.Equal(t, want, got, sv.leafLabel(lf))
		} else {
			state[k] = got
		}
	}
}

func TestStable(t *testing.T) {
	assert.Equal(t, 5.32370621823, stable(5.323706218232092))
	assert.Equal(t, stable(35.544647274591156), stable(35.54464727459116))
	assert.Equal(t, stable(0.00157145190399999995), stable(0.001571451904000000001))
	assert.Equal(t, 0.0, stable(0))
	assert.Equal(t, 1234567.89013, stable(1234567.890129))
	for _, x := range []float64{1e-9, 0.5, 3, 1e6, 123.456, 0.001571451904} {
		assert.Equal(t, x, stable(x))
		assert.Equal(t, x, stable(math.Nextafter(x, 0)))
		assert.Equal(t, x, stable(math.Nextafter(x, 10*x)))
	}
}

func TestDivisors(t *testing.T) {
	assert.Equal(t, []int{1, 2, 3, 4, 6, 12}, divisors(12))
	assert.Equal(t, []int{1}, divisors(1))
	assert.Equal(t, []int{1, 7, 49}, divisors(49))
	for n := 1; n < 500; n++ {
		var want []int
		for d := 1; d <= n; d++ {
			if n%d == 0 {
				want = append(want, d)
			}
		}
		require.Equal(t, want, divisors(n))
	}
}

// TestAccounting: every assignment of the domains is either pruned by a
// rule (counted with all its completions) or becomes a leaf.
func TestAccounting(t *testing.T) {
	for _, f := range []string{"testdata/bench-deepseek-2k.cue", "testdata/mixtral-64.cue", "testdata/llama3-70b-64.cue"} {
		sv := leavesOf(t, f)
		assert.Equal(t, sv.spaceSize(), sv.pruned+int64(sv.leaves.len()), f)
		for i := range sv.leaves.len() {
			require.False(t, sv.leaves.at(int32(i)).node)
		}
	}
}

// TestAsHint: a code's advice that points at a single diagnostic's hint
// reads on its own as a no-feasible-plan hint, which lists no values.
func TestAsHint(t *testing.T) {
	const general = "widen the constraints"
	for fix, want := range map[string]string{
		"Add nodes, or lower tp, pp or cp; the hint lists what fits.":                                  "Add nodes, or lower tp, pp or cp.",
		"Use a tp that divides model.heads (the hint lists them).":                                     "Use a tp that divides model.heads.",
		"Use an ep that divides model.moe.experts (the hint lists them).":                              "Use an ep that divides model.moe.experts.",
		"Change the global batch (the hint gives the nearest valid ones) or microbatch_group_size.":    "Change the global batch or microbatch_group_size.",
		"Change the setting as the hint says.":                                                         general,
		"Follow the hint; the message gives the character position of a syntax error.":                 general,
		"Use a tp that divides nvlink_domain (and keep the default order, which places tp innermost).": "Use a tp that divides nvlink_domain (and keep the default order, which places tp innermost).",
	} {
		assert.Equal(t, want, asHint(fix, general), fix)
	}
	// Every rule's advice, as a no-feasible-plan hint, points at no hint.
	for _, c := range check.Codes {
		if h := asHint(c.Fix, general); h != general {
			assert.NotContains(t, strings.ToLower(h), "hint", c.Code)
			assert.NotContains(t, h, "()", c.Code)
		}
	}
}

// TestMemoryBelowSound: memoryRules rejects a smaller micro batch of a
// variant that did not fit when memFail.peakBelow, the failed plan's
// state plus the rest scaled down by the micro batch, exceeds the GPU. That
// assumes the rest does not fall faster than the micro batch: here every
// sampled leaf's memory (as fitLeaf gives it) with each smaller valid micro
// batch is at least the bound (with a smallest group at least as large, as
// memoryRules asks). The last spec has the flex dispatcher's HybridEP
// buffer and fine-grained activation offloading.
func TestMemoryBelowSound(t *testing.T) {
	for _, f := range []string{"testdata/bench-405b-16k.cue", "testdata/bench-deepseek-2k.cue", "testdata/mixtral-64.cue", "testdata/deepseek-gb300-offload.cue"} {
		sv := leavesOf(t, f)
		fit := func(lf leaf) estimate.Memory {
			if n := sv.groupMin(&lf); n > 0 {
				lf.g = leafGroup(n, int(lf.pp))
			}
			s := sv.leafSpec(&lf)
			m, _ := sv.fitLeaf(&lf, &s, spec.Derive(&s), math.Inf(1))
			return m
		}
		n := 0
		for _, i := range sample(sv, 150) {
			lf := *sv.leaves.at(i)
			if lf.mb == 1 {
				continue
			}
			mf := sv.newMemFail(&lf, estimate.CodeMemoryExceedsGPU, fit(lf))
			dp := sv.grids[lf.grid].dp
			for _, mb := range sv.mbs {
				small := lf
				small.mb = mb
				if mb >= lf.mb || int32(sv.groupMin(&small)) < mf.g {
					continue
				}
				if code, _ := sv.batchRule(int(lf.pp), int(lf.vpp), dp, int(sv.groupMin(&small)), int(mb)); code != "" {
					continue
				}
				got := fit(small)
				assert.LessOrEqual(t, mf.peakBelow(mb), float64(got.PerGPUPeakBytes)*(1+1e-12),
					"%s %s: micro batch %d from %d", f, sv.leafLabel(&small), mb, lf.mb)
				n++
			}
		}
		assert.Greater(t, n, 100, f)
		t.Logf("%s: %d pairs", f, n)
	}
}

// TestFailedVerificationsSpendTheBudget: a search whose every verification
// fails (here a target check that rejects every plan, as parc compile's
// targets may) verifies plan after plan; each verification is charged its
// cost (verifyWork), so the budget stops it after at most
// searchBudget/verifyWork of them (1,600, about 8 s; the test gives the
// search an eighth of the budget). Charged as four estimates, as before,
// it could verify 180,000 plans, about 5 ms each.
func TestFailedVerificationsSpendTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("verifies plans until the budget stops the search")
	}
	res := loadFile(t, "testdata/llama3-70b-64.cue")
	reject := func(p *plan.Plan, at diag.Locator) diag.List {
		var ds diag.List
		ds.Errorf(at("parallel.tp"), "parallel.tp", "target-rejects", "", "the target rejects every plan")
		return ds
	}
	const budget = searchBudget / 8 // the same bound, sooner
	sv, ds := newSolver(res, Options{Top: 5, NoiseBand: DefaultNoiseBand, Checks: []resolve.Check{reject}, budget: budget})
	require.NotNil(t, sv, "%v", ds)
	r := sv.run()
	assert.Empty(t, r.Candidates)
	assert.True(t, sv.exhausted, "the search ended before its budget: %d verifications failed", sv.verifyFailed)
	assert.LessOrEqual(t, sv.verifyFailed, int(budget/verifyWork)+1)
	assert.Contains(t, sv.diags.Codes(), CodeSearchTooLarge)
	t.Logf("%d verifications failed, %d plans found", sv.verifyFailed, len(sv.found))
}
