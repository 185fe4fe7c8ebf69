package solve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/load"
)

// TestHintTriesShareTheBudget: the searches a no-feasible-plan hint tries
// (other node counts and global batches, fixes) draw on one account with
// the search: each gets half of what the search and the tries before it
// left (hintShare), so together they stay within the search's budget. Each
// used to get half of what the search alone left, so the four runs of
// tries of nearestWithPlan could do twice the budget: on an 800,000-GPU
// spec of 4,096 layers with no feasible plan, parc solve ran 12 s where the
// budget stands for about 8.
func TestHintTriesShareTheBudget(t *testing.T) {
	const text = `model: {name: "x", layers: 4096, hidden: 65536, heads: 512, vocab: 1000000, max_position_embeddings: 1048576, activation: "swiglu", normalization: "rmsnorm", position_embedding: "rope", tie_embeddings: false, bias: false, moe: {experts: 4096, topk: 64, ffn_hidden: 2048, shared_ffn_hidden: 2048}}
cluster: {name: "c", nodes: 100000, gpus_per_node: 8, gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}, nvlink_gbps: 450, network_gbps: 50}
parallel: {tp: int, pp: int, cp: int, ep: int, vpp: int, etp: int}
train: {seq_length: 1048576, micro_batch: int, global_batch: 1048576, precision: "bf16", recompute: _, distributed_optimizer: true}
`
	res, ds := load.Load(load.Source{Path: "hostile.cue", Data: []byte(text)})
	require.False(t, ds.HasErrors(), "%v", ds)
	const limit = 300_000_000
	// The model's state fits none of the node counts the tries would
	// search (stateCanFit), so they are not run; without that floor they
	// are, and share the budget.
	solve := func() *solver {
		sv, ds := newSolver(res, Options{Top: 5, budget: limit})
		require.NotNil(t, sv, "%v", ds)
		r := sv.run()
		require.Empty(t, r.Candidates)
		require.Contains(t, sv.diags.Codes(), CodeNoFeasiblePlan)
		return sv
	}
	sv := solve()
	t.Logf("with the state floor: search %d units, hint tries %d; %s", sv.work, sv.hintWork, sv.stateFloorText())
	assert.Zero(t, sv.hintWork, "no try can fit the state")
	assert.NotEmpty(t, sv.stateFloorText())
	hintStateFloor = false
	defer func() { hintStateFloor = true }()
	sv = solve()
	t.Logf("search %d units, hint tries %d, limit %d", sv.work, sv.hintWork, int64(limit))
	assert.Greater(t, sv.hintWork, int64(limit)/2, "the tries spend what they get")
	assert.LessOrEqual(t, sv.work+sv.hintWork, int64(limit)+verifyWork, "the search and its hint tries within the budget (one try may overrun by a step)")
}

// TestVariantsWithinTheBudget: completing the top shapes' variants
// (completeShapes) may spend half of what the budget has left, and a search
// that found its top shapes keeps them when that runs out: with a budget
// one unit short of what the search spends in full (which used to stop it
// with solve-search-too-large), the same candidates come back, with fewer
// variants, and the counts still add up.
func TestVariantsWithinTheBudget(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "acceptance", "llama3-405b-1k.cue"))
	require.NoError(t, err)
	res, ds := load.Load(load.Source{Path: "plan.cue", Data: data})
	require.False(t, ds.HasErrors(), "%v", ds)
	run := func(limit int64) (*Result, *solver) {
		sv, ds := newSolver(res, Options{Top: 5, budget: limit})
		require.NotNil(t, sv, "%v", ds)
		return sv.run(), sv
	}
	variants := func(r *Result) (n int) {
		for _, c := range r.Candidates {
			n += len(c.Variants)
		}
		return n
	}
	full, sv := run(0)
	require.Len(t, full.Candidates, 5)
	require.Positive(t, variants(full), "the top shapes have variants")
	t.Logf("search %d units", sv.work)
	cut, sv2 := run(sv.work - 1)
	require.Len(t, cut.Candidates, len(full.Candidates), "%v", sv2.diags)
	for i, c := range cut.Candidates {
		assert.Equal(t, full.Candidates[i].Label(), c.Label())
		assert.Equal(t, full.Candidates[i].StepTimeS, c.StepTimeS)
	}
	assert.Less(t, variants(cut), variants(full))
	assert.Less(t, sv2.work, sv.work)
	for _, r := range []*Result{full, cut} {
		assert.Equal(t, r.Space, r.Pruned+r.Infeasible+r.Feasible+r.Bounded)
	}
}
