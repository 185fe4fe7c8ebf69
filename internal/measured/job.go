package measured

import (
	"fmt"
	"strings"
)

// Job is the training job a measured run ran, what every run of it shares
// whatever plan it ran: the model, the GPU, the precision and its recipe,
// the sequence length and the global batch. Two runs of one job under
// different plans (parallel degrees, micro batch, recomputation, GPU
// count) measure which plan is faster: the question parc's solver answers.
// TestMeasuredPairs (internal/estimate) and the solver corpus's outside
// evidence (internal/solve) pair runs by it.
type Job struct {
	// Model is the run's model as runs.jsonl gives it (a stdlib preset
	// name or a JSON object), without white space.
	Model                  string
	GPU                    string
	Precision, FP8Recipe   string
	SeqLength, GlobalBatch int
}

// Job is the training job r ran (global batch 0 when the run leaves it
// unsaid).
func (r *Run) Job() Job {
	j := Job{
		Model:     strings.Join(strings.Fields(string(r.Model)), ""),
		GPU:       r.GPU,
		Precision: r.Train.Precision,
		FP8Recipe: r.Train.FP8Recipe,
		SeqLength: r.Train.SeqLength,
	}
	if r.Train.GlobalBatch != nil {
		j.GlobalBatch = *r.Train.GlobalBatch
	}
	return j
}

func (j Job) String() string {
	return fmt.Sprintf("%s|%s|%s|%s|%d|%d", j.Model, j.GPU, j.Precision, j.FP8Recipe, j.SeqLength, j.GlobalBatch)
}

// DistinctRatio is how far apart two measured throughputs of one job must
// be for the pair to say which plan is faster: closer, run-to-run noise
// and what a release changed beyond the plan can decide the order.
const DistinctRatio = 1.10
