package solve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
)

// TestHintStateFloorChangesNothing: the no-feasible-plan hint's searches
// that the state floor rules out (stateCanFit: more nodes that still
// cannot hold the model's state, a memory setting that does not shrink it
// enough) find nothing when run: with the floor on and off the
// diagnostics are the same, and with it the hints do less work. On 16
// nodes DeepSeek-V3's first hint tries (32 nodes, bf16 Adam moments) find
// plans, which the floor must not rule out: the same work.
func TestHintStateFloorChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("solves each spec twice")
	}
	var sum, sumWithout int64
	for _, f := range []string{"infeasible/deepseek-v3-2-nodes", "infeasible/deepseek-v3-16-nodes", "infeasible/llama3-405b-1-node"} {
		res := loadFile(t, "testdata/"+f+".cue")
		solve := func() (diag.List, int64) {
			sv, ds := newSolver(res, Options{Top: DefaultTop, NoiseBand: DefaultNoiseBand})
			require.NotNil(t, sv, "%v", ds)
			r := sv.run()
			require.Empty(t, r.Candidates, f)
			return sv.diags, sv.hintWork
		}
		with, work := solve()
		hintStateFloor = false
		without, workWithout := solve()
		hintStateFloor = true
		assert.Equal(t, without, with, f)
		assert.LessOrEqual(t, work, workWithout, f)
		sum, sumWithout = sum+work, sumWithout+workWithout
		t.Logf("%s: hint work %d with the floor, %d without", f, work, workWithout)
	}
	assert.Less(t, sum, sumWithout)
}
