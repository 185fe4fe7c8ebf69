package estimate

import (
	"math"
	"testing"
)

// TestDeepEPAcrossMNNVL checks the flex dispatcher's backends against
// Megatron-LM's DeepSeek-V3 GB200 guide (docs/discussions/
// deepseek-v3-gb200-optimization at eb0783b6, §3): one plan, TP1 PP8 VPP4
// EP32 on 256 GB200 in MXFP8, whose only change from the row "CUDA Graphs
// capture shared expert" (DeepEP, 829.93 TFLOP/s/GPU) to the row "HybridEP"
// (943.56) is the backend, 1.137x. DeepEP at EP 32 spans more than 8 ranks
// of the NVL72 domain, where the guide measured its dispatch at about 400
// GB/s and its combine at about 190 GB/s (deepEPMNNVLRates); timed at
// NCCL's NVLink rate like HybridEP, the two came out equal. Inside 8 GPUs
// (DeepEP's own NVLink kernels) the backends stay alike.
func TestDeepEPAcrossMNNVL(t *testing.T) {
	if testing.Short() {
		t.Skip("loads measured runs")
	}
	const id = "mlm-dsv3-gb200-guide-deepep-graphs-256"
	rows := calRowsOf(t, id, "bridge-25.11-qwen3-30b-a3b-gb200-fp8-mx-8")
	cal := DefaultCalibration()
	for _, row := range rows {
		with := func(backend string) float64 {
			s := *row.s
			moe := *s.Model.MoE
			moe.Dispatcher, moe.FlexDispatcherBackend = "flex", backend
			s.Model.MoE = &moe
			r := *row
			r.s = &s
			return r.estimated(cal)
		}
		ratio := with("hybridep") / with("deepep")
		if row.id == id {
			const measured = 943.56 / 829.93
			if math.Abs(ratio/measured-1) > 0.10 {
				t.Errorf("%s: HybridEP/DeepEP estimated %.3f, the guide measured %.3f (bound ±10%%)", row.id, ratio, measured)
			}
			continue
		}
		if math.Abs(ratio-1) > 1e-9 {
			t.Errorf("%s: EP 8 inside one NVLink domain of 72: HybridEP/DeepEP %.4f, want 1", row.id, ratio)
		}
	}
}
