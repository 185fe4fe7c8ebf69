package solve

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"parc.dev/parc/internal/estimate"
)

// TestWholeRunNote: with a batch schedule the candidates, ranked by their
// step at the first batch, are rated over the whole run; the note names the
// one that trains it fastest and by how much, or says the pick is, and
// says nothing without a second phase.
func TestWholeRunNote(t *testing.T) {
	two := []estimate.RunPhase{{Batch: 16, Steps: 10}, {Batch: 1024, Steps: 990}}
	cands := func() []Candidate {
		return []Candidate{
			{Rank: 1, Parallel: Parallel{TP: 1, PP: 1, VPP: 1, CP: 1, EP: 1, ETP: 1, DP: 16}, Train: Train{MicroBatch: 1, Recompute: "none"}},
			{Rank: 2, Parallel: Parallel{TP: 2, PP: 1, VPP: 1, CP: 1, EP: 1, ETP: 2, DP: 8}, Train: Train{MicroBatch: 4, Recompute: "none"}},
			{Rank: 3, Parallel: Parallel{TP: 1, PP: 2, VPP: 1, CP: 1, EP: 1, ETP: 1, DP: 8}, Train: Train{MicroBatch: 2, Recompute: "none"}},
		}
	}
	pick := &estimate.TrainingRun{Phases: two, TimeS: 7200}
	runs := map[int]float64{2: 5400, 3: 6000}
	runOf := func(c *Candidate) *estimate.TrainingRun {
		return &estimate.TrainingRun{Phases: two, TimeS: runs[c.Rank]}
	}

	cs := cands()
	note := wholeRunNote(cs, pick, runOf)
	assert.Contains(t, note, "candidate 2, tp=2 pp=1")
	assert.Contains(t, note, "trains the run in 90.0 min, 25.0% less than the pick's 2.0 h")
	assert.Equal(t, []float64{7200, 5400, 6000}, []float64{cs[0].RunS, cs[1].RunS, cs[2].RunS})

	runs = map[int]float64{2: 7300, 3: 9000}
	cs = cands()
	assert.Contains(t, wholeRunNote(cs, pick, runOf), "the pick is also the fastest of the 3 candidates as listed")

	one := &estimate.TrainingRun{Phases: two[:1], TimeS: 7200}
	cs = cands()
	assert.Empty(t, wholeRunNote(cs, one, runOf))
	assert.Zero(t, cs[1].RunS, "no run rated without a schedule")
	assert.Empty(t, wholeRunNote(cs[:1], pick, runOf), "one candidate: nothing to compare")
}
