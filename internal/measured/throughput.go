package measured

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// What a run's source printed of its throughput (Run.Measured), in the
// order TokensPerSPerGPU takes them: tokens/s/GPU as printed, a step time
// (exact with the run's batch and GPU count), model TFLOP/s/GPU (needs the
// FLOP count the source divided by).
const (
	FromTokens      = "tokens/s/GPU"      // measured.tokens_per_s_per_gpu
	FromStepTime    = "step time"         // measured.step_time_s
	FromModelTFLOPs = "model TFLOP/s/GPU" // measured.model_tflops_per_gpu
)

// TokensPerStep is the tokens one training step takes: global batch ×
// sequence length (0 when the run leaves the global batch unsaid).
func (r *Run) TokensPerStep() float64 {
	if r.Train.GlobalBatch == nil {
		return 0
	}
	return float64(*r.Train.GlobalBatch) * float64(r.Train.SeqLength)
}

// TokensPerSPerGPUAt is the run's tokens/s per GPU at a step time of
// stepS seconds (measured or estimated): TokensPerStep / stepS / GPUs; 0
// without a step time, global batch or GPU count. A step (iteration)
// trains the whole global batch (micro batch × data parallel × micro
// batches), and Megatron's per-GPU throughput divides by the step time and
// the world size (megatron/training/training.py training_log at d98e8a64).
func (r *Run) TokensPerSPerGPUAt(stepS float64) float64 {
	tokens := r.TokensPerStep()
	if stepS <= 0 || tokens <= 0 || r.GPUs <= 0 {
		return 0
	}
	return tokens / stepS / float64(r.GPUs)
}

// TokensPerSPerGPU is the run's measured throughput in tokens/s per GPU,
// and what its source printed (FromTokens, FromStepTime, FromModelTFLOPs),
// the first of these it publishes:
//   - tokens/s/GPU as printed;
//   - a step time: TokensPerSPerGPUAt the step time;
//   - model TFLOP/s/GPU: × 1e12 / flopsPerToken, the FLOPs per token of
//     the count the source divided by (FLOPsCount). The count needs the
//     model's shapes, which the caller has (internal/estimate's
//     calibration); with flopsPerToken 0 such a run is an error.
//
// A run that publishes none of them (only an MFU, or a unit this does not
// know) is an error.
func (r *Run) TokensPerSPerGPU(flopsPerToken float64) (float64, string, error) {
	num := func(k string) float64 {
		v, _ := r.Measured[k].(float64)
		return v
	}
	switch {
	case num("tokens_per_s_per_gpu") > 0:
		return num("tokens_per_s_per_gpu"), FromTokens, nil
	case num("step_time_s") > 0:
		v := r.TokensPerSPerGPUAt(num("step_time_s"))
		if v <= 0 {
			return 0, FromStepTime, errors.New("step time without global batch, sequence length or GPU count")
		}
		return v, FromStepTime, nil
	case num("model_tflops_per_gpu") > 0:
		if flopsPerToken <= 0 {
			return 0, FromModelTFLOPs, errors.New("model TFLOP/s/GPU without the FLOPs per token of its count")
		}
		return num("model_tflops_per_gpu") * 1e12 / flopsPerToken, FromModelTFLOPs, nil
	}
	return 0, "", fmt.Errorf("no throughput in tokens/s/GPU, step time or model TFLOP/s/GPU (measured: %v)",
		slices.Sorted(maps.Keys(r.Measured)))
}
