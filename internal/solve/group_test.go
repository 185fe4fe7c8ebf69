package solve

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/spec"
)

// groupLeaves is leavesOf with parc choosing the group size.
func groupLeaves(t *testing.T, path string) *solver {
	t.Helper()
	return leavesOf(t, path, func(sv *solver) {
		require.True(t, sv.groupSearched(), path)
		sv.groupChosen = true
	})
}

// TestGroupRuleIsChecks: the group sizes parc tries are those check (its
// own reading of schedules.py's P25/P26) accepts.
func TestGroupRuleIsChecks(t *testing.T) {
	sv, ds := newSolver(loadFile(t, "testdata/published/megatron-76.1b.cue"), Options{Top: 5})
	require.NotNil(t, sv, "%v", ds)
	base := &sv.base
	n := 0
	for _, pp := range []int{2, 4} {
		for _, gb := range []int{8, 12, 20, 36, 40, 44} {
			sp := *base
			sp.Cluster.Nodes = 4
			sp.Parallel.TP, sp.Parallel.PP, sp.Parallel.CP, sp.Parallel.VPP = 8, pp, 1, 2
			sp.Model.Layers = 8 * pp
			sp.Train.MicroBatch, sp.Train.GlobalBatch = 1, gb
			d := spec.Derive(&sp)
			m := gb / d.DP
			for g := 1; g <= m+2; g++ {
				sp.Parallel.MicrobatchGroupSize = &g
				d := spec.Derive(&sp)
				rejected := false
				for _, x := range check.Verdict(&sp, d, diag.NoPos) {
					rejected = rejected || x.Severity == diag.Error && x.Code == "interleave-microbatches"
				}
				assert.Equal(t, !rejected, check.InterleaveGroupValid(g, m, pp), "pp=%d M=%d N=%d", pp, m, g)
				n++
			}
			assert.Equal(t, len(sv.groupSizes(m, pp)) > 0, m >= pp)
		}
	}
	assert.Greater(t, n, 50)
}

// TestGroupChoice: in parc's model a larger group never lowers the peak
// and never slows the step (what chooseGroup's two halvings rest on), and
// chooseGroup picks what trying every valid group picks: the smallest of
// the fastest that fit.
func TestGroupChoice(t *testing.T) {
	for _, f := range []string{"testdata/published/megatron-76.1b.cue", "testdata/bench-405b-16k.cue"} {
		sv := groupLeaves(t, f)
		n, larger := 0, 0
		for _, i := range sample(sv, 3000) {
			lf := *sv.leaves.at(i)
			sizes := sv.leafGroups(&lf)
			if len(sizes) < 2 || len(sizes) > 64 {
				continue
			}
			links := sv.grids[lf.grid].links.links
			label := fmt.Sprintf("%s %s", f, sv.leafLabel(&lf))
			type at struct {
				peak int64
				step float64
				fits bool
			}
			var all []at
			for _, g := range sizes {
				lf.g = leafGroup(g, int(lf.pp))
				s := sv.leafSpec(&lf)
				d := spec.Derive(&s)
				m := estimate.Fit(&s, d)
				all = append(all, at{m.PerGPUPeakBytes, estimate.StepTime(&s, d, links).StepTimeS,
					!m.ExceedsGPU() && float64(m.PerGPUPeakBytes) <= sv.opts.MemoryHeadroom*float64(m.GPUBytes)})
			}
			for j := 1; j < len(all); j++ {
				assert.GreaterOrEqual(t, all[j].peak, all[j-1].peak, "peak grows with the group: %s N=%d", label, sizes[j])
				assert.LessOrEqual(t, all[j].step, all[j-1].step, "step time does not grow with the group: %s N=%d", label, sizes[j])
			}
			if !all[0].fits {
				continue
			}
			want := 0
			for j, a := range all {
				if a.fits && a.step < all[want].step {
					want = j
				}
			}
			lf.g = leafGroup(sizes[0], int(lf.pp))
			s := sv.leafSpec(&lf)
			mem, step, _, deferred := sv.chooseGroup(&lf, &s, sizes, estimate.Fit(&s, spec.Derive(&s)), all[0].step, math.Inf(1))
			assert.False(t, deferred, label)
			assert.Equal(t, leafGroup(sizes[want], int(lf.pp)), lf.g, label)
			assert.Equal(t, all[want].step, step, label)
			assert.Equal(t, all[want].peak, mem.PerGPUPeakBytes, label)
			larger += btoi(want > 0)
			n++
		}
		t.Logf("%s: %d leaves, %d choose a larger group than the smallest", f, n, larger)
		assert.Greater(t, n, 20, f)
	}
}

// TestOpenGroupSize: a group size left open (microbatch_group_size: int) is
// chosen as an unwritten one is, and listed among the open fields; a
// constraint on it is kept.
func TestOpenGroupSize(t *testing.T) {
	const path = "testdata/published/megatron-76.1b.cue"
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	const from = "parallel: {tp: int, pp: int, vpp: int, cp: int, ep: int, etp: int, sp: false}"
	require.Contains(t, string(data), from)
	solveWith := func(group string) *Result {
		src := strings.Replace(string(data), from, strings.TrimSuffix(from, "}")+group+"}", 1)
		res, ds := load.Load(load.Source{Path: path, Data: []byte(src)})
		require.NotNil(t, res, "%v", ds)
		r, ds := Solve(res, Options{})
		require.NotNil(t, r, "%v", ds)
		require.NotEmpty(t, r.Candidates, "%v", ds)
		return r
	}
	unset, open := solveWith(""), solveWith(", microbatch_group_size: int")
	assert.Contains(t, unset.Implied, groupPath)
	assert.Contains(t, open.Open, groupPath)
	assert.NotContains(t, open.Implied, groupPath)
	require.Equal(t, len(unset.Candidates), len(open.Candidates))
	for i, c := range open.Candidates {
		u := unset.Candidates[i]
		assert.Equal(t, u.StepTimeS, c.StepTimeS)
		require.NotNil(t, c.Parallel.MicrobatchGroupSize, "an open field is written")
		want := c.Parallel.PP
		if u.Parallel.MicrobatchGroupSize != nil {
			want = *u.Parallel.MicrobatchGroupSize
		}
		assert.Equal(t, want, *c.Parallel.MicrobatchGroupSize, c.Label())
	}
	// The constraint: only multiples of 8 (the pick's group, 7, is not).
	r := solveWith(", microbatch_group_size: 8 | 16 | 24 | 32")
	for _, c := range r.Candidates {
		g := *c.Parallel.MicrobatchGroupSize
		assert.Contains(t, []int{8, 16, 24, 32}, g, c.Label())
		if c.Parallel.VPP > 1 {
			m := 1792 / (c.Train.MicroBatch * c.Parallel.DP)
			assert.True(t, check.InterleaveGroupValid(g, m, c.Parallel.PP), c.Label())
		}
	}
}

// TestDeferredGroupChoice: a plan whose fastest group cannot reach the top
// goes back to the heap instead of having its group chosen (evaluate); the
// candidates, their variants and the explanation are the same as when
// every plan that fits has its group chosen, and fewer plans are estimated
// in full.
func TestDeferredGroupChoice(t *testing.T) {
	shortcutChangesNothing(t, &deferGroupChoice, feasibleCount, "acceptance/llama3-405b-1k", "acceptance/llama3-405b-16k", "acceptance/deepseek-v3-1k")
}

// TestParkedChangesNothing: leaves whose shapes the simplest shapes in the
// noise band outrank (outranked) are not estimated, and the result is the
// same (parking with >= or without the fastest-step condition fails it).
func TestParkedChangesNothing(t *testing.T) {
	shortcutChangesNothing(t, &parkOutranked, feasibleCount, "acceptance/deepseek-v3-1k", "acceptance/llama3-405b-1k", "scale/qwen3-235b-gb300-256")
}

// TestMicroBatchNodesChangeNothing: a node expands into one node per micro
// batch, and a node of one micro batch whose every recompute mode and
// optimizer sharding the memory found so far rules out is rejected whole
// (variantsRuledOut), without its assignments in the store and the heap.
// The result is the same, the accounting adds up, and the search stores
// fewer plans and nodes (on DeepSeek-V3's global batch of 15,360 a quarter).
func TestMicroBatchNodesChangeNothing(t *testing.T) {
	shortcutChangesNothing(t, &expandByMicroBatch, storedCount, "acceptance/deepseek-v3-1k", "scale/deepseek-v3-1k-gbs15360", "mixtral-64")
}

// shortcutCount is what a shortcut of the search saves, counted on a
// finished search, and its name.
type shortcutCount struct {
	what string
	of   func(sv *solver, r *Result) int
}

var (
	feasibleCount = shortcutCount{"plans estimated in full", func(_ *solver, r *Result) int { return int(r.Feasible) }}
	storedCount   = shortcutCount{"plans and nodes stored", func(sv *solver, _ *Result) int { return sv.leaves.len() }}
)

// shortcutChangesNothing solves each spec (testdata/NAME.cue) with a
// shortcut of the search on and off (*on false): the same candidates,
// variants, explanation and suggestions, the accounting adds up, and with
// the shortcut count is smaller.
func shortcutChangesNothing(t *testing.T, on *bool, count shortcutCount, names ...string) {
	if testing.Short() {
		t.Skip("solves each spec twice")
	}
	for _, f := range names {
		res := loadFile(t, "testdata/"+f+".cue")
		solve := func() (*Result, int) {
			sv, ds := newSolver(res, Options{Top: DefaultTop, NoiseBand: DefaultNoiseBand}) // as Solve fills them
			require.NotNil(t, sv, "%v", ds)
			r := sv.run()
			return r, count.of(sv, r)
		}
		with, n := solve()
		*on = false
		without, nWithout := solve()
		*on = true
		require.NotEmpty(t, without.Candidates, f)
		sameResult(t, without, with, f)
		assert.Equal(t, without.Space, with.Pruned+with.Infeasible+with.Feasible+with.Bounded, f)
		assert.Less(t, n, nWithout, "%s: %s", f, count.what)
		t.Logf("%s: %d %s, %d without the shortcut", f, n, count.what, nWithout)
	}
}

// sameResult asserts that two searches of one spec print alike: the
// candidates as JSON (the leaves' indices in the search's store follow the
// order nodes were expanded in), the explanation and the suggestions.
func sameResult(t *testing.T, want, got *Result, msg string) {
	t.Helper()
	jw, err := json.Marshal(want.Candidates)
	require.NoError(t, err)
	jg, err := json.Marshal(got.Candidates)
	require.NoError(t, err)
	assert.JSONEq(t, string(jw), string(jg), msg)
	assert.Equal(t, want.Explanation, got.Explanation, msg)
	assert.Equal(t, want.FasterSettings, got.FasterSettings, msg)
}

// TestBoundChangesNothing: with and without the bound (and every other
// shortcut), the same result.
func TestBoundChangesNothing(t *testing.T) {
	mixtral16, err := os.ReadFile("testdata/mixtral-64.cue")
	require.NoError(t, err)
	for f, data := range map[string][]byte{
		"testdata/mixtral-16.cue":    []byte(strings.Replace(string(mixtral16), "nodes: 8", "nodes: 2", 1)),
		"testdata/llama3-70b-64.cue": nil,
	} {
		res, ds := load.Load(load.Source{Path: f, Data: data})
		require.NotNil(t, res, "%v", ds)
		a, _ := Solve(res, Options{Top: 8})
		b, _ := Solve(res, Options{Top: 8, Exhaustive: true})
		require.NotEmpty(t, a.Candidates)
		sameResult(t, b, a, f)
		assert.Less(t, a.Evaluated, b.Evaluated, "the bound should spare estimates: %s", f)
	}
}
