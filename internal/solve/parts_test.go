package solve

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/spec"
)

// TestSearchPartsMatchRun: the parts of the estimate the search runs alone
// give Run's numbers on sampled complete assignments: estimate.Fit Run's
// Memory (and ExceedsGPU its memory-exceeds-gpu error), estimate.StepTime
// Run's step time, compute, pipeline and comms.
func TestSearchPartsMatchRun(t *testing.T) {
	for _, f := range []string{"testdata/acceptance/deepseek-v3-1k.cue", "testdata/acceptance/llama3-405b-16k.cue", "testdata/mixtral-64.cue"} {
		sv := leavesOf(t, f)
		n, over := 0, 0
		for _, i := range sample(sv, 150) {
			lf := sv.leaves.at(i)
			s := sv.leafSpec(lf)
			d := spec.Derive(&s)
			links := sv.grids[lf.grid].links.links
			e, ds := estimate.Run(&s, d, links, diag.NoPos)
			label := f + " " + sv.leafLabel(lf)
			mem := estimate.Fit(&s, d)
			assert.Equal(t, e.Memory, mem, label)
			exceeds := slices.ContainsFunc(ds, func(x diag.Diagnostic) bool {
				return x.Severity == diag.Error && x.Code == estimate.CodeMemoryExceedsGPU
			})
			assert.Equal(t, exceeds, mem.ExceedsGPU(), label)
			assert.Equal(t, exceeds, ds.HasErrors(), "Run's only error is memory-exceeds-gpu: "+label)
			over += btoi(exceeds)
			st := estimate.StepTime(&s, d, links)
			assert.Equal(t, e.StepTimeS, st.StepTimeS, label)
			assert.Equal(t, e.Compute, st.Compute, label)
			assert.Equal(t, e.Pipeline, st.Pipeline, label)
			assert.Equal(t, e.Comms, st.Comms, label)
			n++
		}
		assert.Greater(t, n, 100, f)
		assert.Greater(t, over, 0, f)
		assert.Less(t, over, n, f)
	}
}
