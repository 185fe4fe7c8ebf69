package measured

import (
	"testing"
)

// TestTokensPerSPerGPU: each published unit converts to tokens/s/GPU by its
// own rule, in the order tokens/s/GPU, step time, model TFLOP/s/GPU, and a
// run without any of them is an error.
func TestTokensPerSPerGPU(t *testing.T) {
	run := func(measured map[string]any) *Run {
		gbs := 1024
		r := &Run{ID: "r", GPUs: 64, Measured: measured}
		r.Train.GlobalBatch, r.Train.SeqLength = &gbs, 8192
		return r
	}
	for _, c := range []struct {
		name          string
		measured      map[string]any
		flopsPerToken float64
		want          float64
		from          string
	}{
		{"tokens as printed", map[string]any{"tokens_per_s_per_gpu": 12345.0, "step_time_s": 1.0}, 0, 12345, FromTokens},
		// 1024 × 8192 tokens a step in 4 s on 64 GPUs.
		{"step time", map[string]any{"step_time_s": 4.0, "mfu": 0.4}, 0, 1024 * 8192 / 4.0 / 64, FromStepTime},
		{"step time before TFLOP/s", map[string]any{"step_time_s": 4.0, "model_tflops_per_gpu": 400.0}, 1e9, 1024 * 8192 / 4.0 / 64, FromStepTime},
		// 400 TFLOP/s at 1e9 FLOPs a token.
		{"model TFLOP/s", map[string]any{"model_tflops_per_gpu": 400.0}, 1e9, 400e3, FromModelTFLOPs},
	} {
		got, from, err := run(c.measured).TokensPerSPerGPU(c.flopsPerToken)
		if err != nil || got != c.want || from != c.from {
			t.Errorf("%s: got %v %q %v, want %v %q", c.name, got, from, err, c.want, c.from)
		}
	}
	for _, c := range []struct {
		name          string
		measured      map[string]any
		flopsPerToken float64
	}{
		{"only an MFU", map[string]any{"mfu": 0.45}, 1e9},
		{"unknown unit", map[string]any{"samples_per_s": 100.0}, 1e9},
		{"nothing measured", nil, 1e9},
		{"TFLOP/s without a FLOP count", map[string]any{"model_tflops_per_gpu": 400.0}, 0},
	} {
		if got, from, err := run(c.measured).TokensPerSPerGPU(c.flopsPerToken); err == nil {
			t.Errorf("%s: got %v %q, want an error", c.name, got, from)
		}
	}
	r := run(map[string]any{"step_time_s": 4.0})
	r.Train.GlobalBatch = nil
	if got, _, err := r.TokensPerSPerGPU(0); err == nil {
		t.Errorf("step time without a global batch: got %v, want an error", got)
	}
}
