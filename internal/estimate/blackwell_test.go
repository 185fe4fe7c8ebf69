package estimate

import (
	"testing"

	"parc.dev/parc/internal/spec"
)

// The stdlib GPU presets against the published feeds and speeds the
// attention and power models rest on.
func TestBlackwellAttentionFeedsAndSpeeds(t *testing.T) {
	gpu := func(cluster string) gpuRates {
		s := loadSpecText(t, "model: models.llama3_8b\ncluster: clusters."+cluster+" & {nodes: 1}\n"+
			"parallel: {tp: 1, pp: 1, cp: 1}\ntrain: {seq_length: 8192, micro_batch: 1, global_batch: 8, precision: \"bf16\", iters: 10}\n")
		return newGPURates(s.Cluster.GPU)
	}
	// FlashAttention-4 (Zadouri et al., arXiv 2603.05451) §2: on B200 a
	// 128×128 tile with 128-wide heads takes 1,024 clocks of MMA and 1,024
	// clocks of exponentials; at the presets' datasheet figures the two
	// (512 FLOPs of the forward's products against one exponential per
	// score) must agree within the clock difference of the two figures.
	for _, c := range []string{"dgx_b200", "gb200_nvl72"} {
		r := gpu(c)
		mma, exp := 512/r.bf16, 1/r.exp
		if q := exp / mma; q < 0.8 || q > 1.2 {
			t.Errorf("%s: exponentials/MMA per score %.2f, FlashAttention-4 §2 has 1 on Blackwell", c, q)
		}
	}
	// Hopper: the same 16 exponentials per SM per clock against half the
	// MMA rate of Blackwell per clock: exponentials take half the MMA time.
	if r := gpu("dgx_h100"); r.exp <= 0 || (512/r.bf16)/(1/r.exp) < 1.8 || (512/r.bf16)/(1/r.exp) > 2.2 {
		t.Errorf("H100: MMA/exponentials per score %.2f, want about 2", (512/r.bf16)/(1/r.exp))
	}
	// NVIDIA's Blackwell Ultra blog: twice Blackwell's SFU throughput on the
	// same bf16 peak (GB200 and GB300 NVL72 datasheets: 2.5 PFLOP/s dense).
	b, u := gpu("gb200_nvl72"), gpu("gb300_nvl72")
	if b.bf16 != u.bf16 || u.exp/b.exp < 2 || u.exp/b.exp > 2.2 {
		t.Errorf("GB300 vs GB200: bf16 %.3g vs %.3g, exponentials %.3g vs %.3g", u.bf16, b.bf16, u.exp, b.exp)
	}
}

// The power cap: GB300 and GB200 have the same datasheet peaks, GB300 a
// higher power limit, so a fitted cap never makes GB300 slower than GB200,
// and a GPU without a power limit is not capped.
func TestTensorShareFollowsPowerLimit(t *testing.T) {
	for _, w := range []float64{0.3, 0.5, 0.535, 0.7} {
		b200 := tensorShare(specGPU(2250, 1000), w)
		gb200 := tensorShare(specGPU(2500, 1200), w)
		gb300 := tensorShare(specGPU(2500, 1400), w)
		if !(b200 <= gb200 && gb200 <= gb300 && gb300 <= 1) {
			t.Errorf("w %.3g: B200 %.3f, GB200 %.3f, GB300 %.3f: the share must follow watts per peak TFLOP/s", w, b200, gb200, gb300)
		}
	}
	if s := tensorShare(specGPU(2500, 0), 0.5); s != 1 {
		t.Errorf("no power limit: share %g, want 1", s)
	}
}

func specGPU(bf16, watts float64) spec.GPU {
	return spec.GPU{Name: "test", MemoryGiB: 80, BF16TFLOPs: bf16, TDPWatts: watts, ComputeCapability: 10}
}
