package estimate

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestModelKind: the accuracy table's kinds, on the presets whose published
// runs fill it: dense, Mixtral's coarse experts, the fine-grained MoEs of
// up to 150B parameters (Qwen3-30B-A3B, GPT-OSS-120B with its 117B) and the
// larger ones (Qwen3-235B-A22B, DeepSeek-V3's 671B, Kimi-K2's 1T), which
// the model rates slower than measured where the smaller ones are close.
func TestModelKind(t *testing.T) {
	for model, want := range map[string]string{
		"llama3_70b":      KindDense,
		"mixtral_8x22b":   KindCoarseMoE,
		"qwen3_30b_a3b":   KindFineMoE,
		"gpt_oss_120b":    KindFineMoE,
		"qwen3_235b_a22b": KindLargeFineMoE,
		"deepseek_v3":     KindLargeFineMoE,
		"kimi_k2":         KindLargeFineMoE,
	} {
		s := loadSpecText(t, fmt.Sprintf(`model: models.%s
cluster: clusters.gb200_nvl72 & {nodes: 2}
parallel: {tp: 1, pp: 1, cp: 1}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64, precision: "bf16", recompute: "none", iters: 10}
`, model))
		assert.Equal(t, want, ModelKind(s), model)
		if a := AccuracyOf(s); assert.NotNil(t, a, model) {
			assert.Equal(t, want, a.Model, model)
			assert.Equal(t, "GB200", a.GPU, model)
		}
	}
	// A dense model on 4,096 GPUs or more reads its own line: the published
	// runs at that scale (H100) are all rated faster than they ran.
	s := loadSpecText(t, `model: models.llama3_405b
cluster: clusters.dgx_h100 & {nodes: 1024}
parallel: {tp: 8, pp: 16, cp: 1, first_stage_layers: 6}
train: {seq_length: 8192, micro_batch: 1, global_batch: 2048, precision: "bf16", recompute: "none", iters: 10}
`)
	assert.Equal(t, KindDenseAtScale, ModelKind(s))
	// So does a dense plan of one microbatch per GPU on 32 GPUs or more:
	// the published runs of that kind on B200 (MLPerf Training v5.1's Llama
	// 3.1 8B, 32 to 256 GPUs) were all rated faster than they ran (+3% to
	// +16%) until each step waited for its slowest node
	// (Calibration.StepJitterS); now their median is within 10%.
	one := loadSpecText(t, `model: models.llama3_8b
cluster: clusters.dgx_b200 & {nodes: 8}
parallel: {tp: 1, pp: 1, cp: 2}
train: {seq_length: 8192, micro_batch: 1, global_batch: 32, precision: "bf16", recompute: "none", iters: 10}
`)
	assert.Equal(t, KindDenseOneMicrobatch, ModelKind(one))
	if a := AccuracyOf(one); assert.NotNil(t, a) {
		assert.GreaterOrEqual(t, a.Runs, 5)
		assert.Less(t, math.Abs(a.MedianError), 0.10, "the published one-microbatch dense runs on 32 B200 or more, at the median")
	}
	if a := AccuracyOf(s); assert.NotNil(t, a) {
		assert.GreaterOrEqual(t, a.Runs, minPrecisionRuns)
		assert.Greater(t, a.LowestError, 0.0, "every published dense run on 4,096 H100 or more is rated faster than measured")
	}
}

// TestAccuracyByPrecision: where the accuracy table splits a kind of model
// on a GPU by precision, a plan in a precision with a line of its own reads
// that line, and a plan in a precision without one reads the line of every
// precision. Dense models on GB300 split (the corpus has their runs in FP8
// and NVFP4 and none in BF16 beyond a few); the NVFP4 line counts only the
// NVFP4 runs, fewer than the whole line.
func TestAccuracyByPrecision(t *testing.T) {
	plan := func(precision string) *Accuracy {
		s := loadSpecText(t, fmt.Sprintf(`model: models.llama3_70b
cluster: clusters.gb300_nvl72 & {nodes: 4}
parallel: {tp: 2, pp: 1, cp: 1}
train: {seq_length: 8192, micro_batch: 1, global_batch: 64, precision: %q, recompute: "none", iters: 10}
`, precision))
		assert.Equal(t, KindDense, ModelKind(s))
		return AccuracyOf(s)
	}
	lines := map[string]Accuracy{}
	for _, a := range measuredAccuracy {
		if a.Model == KindDense && a.GPU == "GB300" {
			lines[a.Precision] = a
		}
	}
	if _, ok := lines["NVFP4"]; !ok {
		t.Fatal("the accuracy table has no NVFP4 line for dense models on GB300")
	}
	for _, prec := range []string{"fp4", "fp8", "bf16"} {
		a := plan(prec)
		if !assert.NotNil(t, a, prec) {
			continue
		}
		want, ok := lines[map[string]string{"fp4": "NVFP4", "fp8": "FP8", "bf16": "BF16"}[prec]]
		if !ok {
			want = lines[""]
		}
		assert.Equal(t, want, *a, prec)
	}
	assert.Less(t, plan("fp4").Runs, lines[""].Runs, "the NVFP4 line counts only NVFP4 runs")
	// A kind of model whose runs on a GPU are of one precision keeps one
	// line: nothing to split.
	for _, a := range measuredAccuracy {
		if a.Precision == "" {
			continue
		}
		n := 0
		for _, b := range measuredAccuracy {
			if b.Model == a.Model && b.GPU == a.GPU && b.Precision == "" {
				n++
				assert.Less(t, a.Runs, b.Runs, "%s on %s in %s: a precision line of a line that spans precisions", a.Model, a.GPU, a.Precision)
			}
		}
		assert.Equal(t, 1, n, "%s on %s in %s: one line of every precision beside it", a.Model, a.GPU, a.Precision)
		assert.GreaterOrEqual(t, a.Runs, minPrecisionRuns)
	}
}
