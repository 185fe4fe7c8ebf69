package solve_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/solve"
)

// testdata/budget/huge.cue is schema-valid and as large as the schema allows where it costs
// the search: 65,536 layers, 4,096 nodes of 1,024 GPUs, the longest
// sequence, and the degrees open. No plan fits, so no bound prunes: before
// the work budget the search estimated every plan, for minutes (tp, pp, cp
// and vpp open: past 100 s, 1 GB).

// TestSearchBudget: a search too large to finish stops at its work budget
// with solve-search-too-large at the first open field, and picks nothing.
func TestSearchBudget(t *testing.T) {
	res := loadPath(t, "testdata/budget/huge.cue")
	start := time.Now()
	r, d := failedSearch(t, res)
	t.Logf("%.1f s, %d plans estimated", time.Since(start).Seconds(), r.Evaluated)
	assert.Equal(t, solve.CodeSearchTooLarge, d.Code)
	assert.Equal(t, "parallel.tp", d.Path)
	assert.Equal(t, 4, d.Line, "at the user's parallel.tp")
	assert.Contains(t, d.Message, "65536 layers per plan")
	assert.NotContains(t, d.Hint, "|", "the hint suggests no value it has not checked")
}

// testdata/budget/divisible.cue has few layers but a world, batch and sequence with many
// divisors (20,160 GPUs, global batch 55,440), and a setting Megatron-LM
// rejects in every plan (Transformer Engine's cross-entropy fusion,
// kernel-options; a rule the search checks plan by plan, unlike those of
// check.FixedBySpec, which stop it before it starts): millions of plans to
// check, each cheap, none valid. (Until check.FixedBySpec it was a model
// whose hidden size is no multiple of its heads.) Before its work counted
// each estimate's fixed cost and each plan taken from the heap, it ran 21 s
// before the budget stopped it, and said only that the search was too
// large.

// TestSearchBudgetManyPlans: a search of many cheap plans stops at the
// same budget, and the error every plan it checked had is reported as it
// is beside it.
func TestSearchBudgetManyPlans(t *testing.T) {
	res := loadPath(t, "testdata/budget/divisible.cue")
	start := time.Now()
	r, ds := solve.Solve(res, solve.Options{})
	t.Logf("%.1f s, %d plans checked", time.Since(start).Seconds(), r.Infeasible)
	require.NotNil(t, r)
	assert.Empty(t, r.Candidates)
	var codes []string
	for _, d := range ds {
		codes = append(codes, d.Code)
	}
	assert.Equal(t, []string{solve.CodeSearchTooLarge, "kernel-options"}, codes)
	assert.Equal(t, 6, ds[1].Line, "at the user's kernels")
}

// loadPath loads a spec file of testdata.
func loadPath(t *testing.T, path string) *load.Result {
	t.Helper()
	res, ds := load.Load(load.Source{Path: path})
	require.NotNil(t, res, "%v", ds)
	require.False(t, ds.HasErrors(), "%v", ds)
	return res
}
