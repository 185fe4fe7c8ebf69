package estimate

import (
	"fmt"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// TestOneLocalExpert: with one expert per GPU, a coarse MoE's expert GEMMs
// run without the grouped penalty (GroupedRel), as Mixtral's measured runs
// at EP 8 of 8 experts do, and a fine-grained MoE's keep it, since no
// published run of one measures the case (moeBlock). With the penalty off
// (GroupedRel 1) the step is shorter exactly when the penalty applied.
func TestOneLocalExpert(t *testing.T) {
	for _, tc := range []struct {
		experts int
		penalty bool
	}{{8, false}, {16, false}, {64, true}} {
		s := loadPlanText(t, fmt.Sprintf(`package plan

import "parc.dev/stdlib/clusters"

model: {layers: 8, hidden: 4096, heads: 32, vocab: 32000, bias: false, moe: {experts: %[1]d, topk: 2, ffn_hidden: 8192}}
cluster: clusters.dgx_h100 & {nodes: %[2]d}
parallel: {tp: 1, pp: 1, ep: %[1]d}
train: {seq_length: 4096, micro_batch: 4, global_batch: %[3]d, precision: "bf16", iters: 10}
`, tc.experts, tc.experts/8, 4*tc.experts))
		d := spec.Derive(s)
		step := func(rel float64) float64 {
			o := DefaultOptions()
			o.Calibration.GroupedRel = rel
			e, _ := RunWith(s, d, DefaultLinks(s, d), diag.NoPos, o)
			return e.StepTimeS
		}
		with, without := step(DefaultCalibration().GroupedRel), step(1)
		if got := with > without*(1+1e-9); got != tc.penalty {
			t.Errorf("%d experts, one per GPU: step %.4g s with the grouped penalty, %.4g s without: penalty applied %v, want %v",
				tc.experts, with, without, got, tc.penalty)
		}
	}
}
