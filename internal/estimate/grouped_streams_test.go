package estimate

import "testing"

// TestGroupedGEMMTokensPerExpert: the same routed work split over more
// local experts (a smaller expert-parallel degree) gives each expert's
// GEMM fewer tokens. Transformer Engine runs the per-expert GEMMs four at a
// time (teGroupedGEMMStreams), so a GEMM of a few tile rows leaves SMs idle,
// and the weight gradient's read and write of the fp32 main gradient
// (wgradOut) is not hidden behind a short token reduction. Qwen3-30B-A3B's
// expert shape on B200: 32,768 routed tokens per GPU, at 16 local experts
// (EP 8) and at 128 (EP 1).
func TestGroupedGEMMTokensPerExpert(t *testing.T) {
	g := presetGPU(t, "dgx_b200")
	cm := computeModel{r: newGPURates(g), cal: DefaultCalibration(), ab: 2, mainGradAccum: 4}
	cm.r.tensor = tensorShare(g, cm.cal.TensorWPerTFLOP)
	const tokens, h, f = 32768, 2048, 1536
	time := func(c computeModel, experts float64) float64 {
		fwd, bwd := c.linear(experts, tokens/experts, h, f, true)
		return fwd.gemm + bwd.gemm
	}
	ep8, ep1 := time(cm, 16), time(cm, 128)
	if ep1 < 1.1*ep8 {
		t.Errorf("128 experts of 256 tokens: %.3g s, not 10%% slower than 16 of 2,048 (%.3g s)", ep1, ep8)
	}
	// One grouped kernel over all experts (Transformer Engine's fused
	// grouped MLP) has every expert's tiles in flight at once.
	fused := func(experts float64) float64 {
		fwd, bwd := cm.linearAs(experts, tokens/experts, h, f, true, true, true)
		return fwd.gemm + bwd.gemm
	}
	if f1 := fused(128); f1 >= ep1 {
		t.Errorf("fused grouped kernel of 128 experts %.3g s, not below the streams' %.3g s", f1, ep1)
	}
	t.Logf("16 experts %.3g s, 128 experts %.3g s (fused %.3g s)", ep8, ep1, fused(128))
	// Without gradient accumulation fusion the weight gradient is written
	// once in 16 bits: the main-gradient traffic goes.
	plain := cm
	plain.mainGradAccum = 0
	if p := time(plain, 128); p >= ep1 {
		t.Errorf("128 experts without main-gradient accumulation %.3g s, not below %.3g s", p, ep1)
	}
}
