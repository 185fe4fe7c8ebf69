package estimate

import (
	"testing"

	"parc.dev/parc/internal/spec"
)

// TestSOAPStep: SOAP's step on Llama 3 8B at tp 2 with the layer-wise
// distributed optimizer over dp 4 works on each weight's shard (SOAP is not
// tensor-parallel aware): the fused qkv 3072×4096, proj 4096×2048, fc1
// 14336×4096 and fc2 4096×7168 of each of 32 layers, a quarter of them per
// GPU, each at (32/3)(m³+n³) + 12mn(m+n) FLOPs (soap.go counts them from
// emerging_optimizers v0.3.0's soap.py), at the TF32 rate. adaptive_muon
// does Muon's Newton-Schulz work, and neither Adam nor Muon does SOAP's.
func TestSOAPStep(t *testing.T) {
	load := func(optimizer string) *costModel {
		s := loadSpecText(t, `
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 1}
parallel: {tp: 2, pp: 1, sp: true}
train: {seq_length: 8192, micro_batch: 1, global_batch: 128, iters: 10, distributed_optimizer: true, optimizer: "`+optimizer+`"}
`)
		return newCostModel(s, spec.Derive(s), DefaultOptions())
	}
	cube := func(m, n float64) float64 { return 32.0/3*(m*m*m+n*n*n) + 12*m*n*(m+n) }
	layer := cube(3072, 4096) + cube(4096, 2048) + cube(14336, 4096) + cube(4096, 7168)
	c := load("soap")
	want := 32 * layer / 4 / (c.cm.r.fp32 * c.cal.GEMMEff)
	if got := c.soapStepS(0); got/want-1 > 1e-9 || got/want-1 < -1e-9 {
		t.Errorf("soap step %g s, want %g s", got, want)
	}
	if c.cm.r.fp32*2 != c.cm.r.bf16 {
		t.Errorf("TF32 rate %g, want half of bf16's %g", c.cm.r.fp32, c.cm.r.bf16)
	}
	nvlink := func(string) string { return LinkNVLink }
	muonF, _ := load("muon").muonWork(0, nvlink)
	if f, _ := load("adaptive_muon").muonWork(0, nvlink); f != muonF || f == 0 {
		t.Errorf("adaptive_muon Newton-Schulz work %g, want Muon's %g", f, muonF)
	}
	for _, o := range []string{"adam", "muon", "adaptive_muon"} {
		if c := load(o); c.soapStepS(0) != 0 || c.soapStateBytes(0) != 0 {
			t.Errorf("%s: SOAP work or state", o)
		}
	}
}
