package estimate

import (
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// NVFP4 (precision "fp4") keeps Transformer Engine's widths: the bf16
// weight with its cached NVFP4 copies (rowwise and the transposed one the
// TN-only NVFP4 GEMM reads: 2 × (½ + 1/16) bytes per linear parameter), and
// with fp4_param_gather the NVFP4 weight and its transposed copy.
func TestNVFP4Widths(t *testing.T) {
	s := llama70B()
	s.Cluster.GPU.ComputeCapability = 10
	s.Train.Precision = "fp4"
	st := run(t, s).Memory.Stages[1] // a middle stage: no embedding
	n := float64(st.Params)
	near(t, "bf16 weights and their two NVFP4 copies", float64(st.Weights), (2+2*nvfp4Bytes)*n, 1e-9)
	s.Train.FP4ParamGather = true
	near(t, "NVFP4 weights and their transposed copy", float64(run(t, s).Memory.Stages[1].Weights), 2*nvfp4Bytes*n, 1e-9)
}

// NVFP4 GEMMs run at the fp4 peak and FP4GEMMEff, the rest as in bf16:
// with the fp4 peak twice the fp8 one and the two efficiencies equal, the
// GEMM time is about half the fp8 plan's; a calibration without an NVFP4
// efficiency times them at the fp8 one.
func TestNVFP4GEMMs(t *testing.T) {
	s := llama70B()
	s.Cluster.GPU.ComputeCapability = 10
	s.Cluster.GPU.FP8TFLOPs, s.Cluster.GPU.FP4TFLOPs = 2*s.Cluster.GPU.BF16TFLOPs, 4*s.Cluster.GPU.BF16TFLOPs
	o := DefaultOptions()
	o.Calibration.FP4GEMMEff = 0
	est := func() *Estimate {
		d := spec.Derive(s)
		e, _ := RunWith(s, d, DefaultLinks(s, d), diag.NoPos, o)
		return e
	}
	s.Train.Precision, s.Train.FP8Recipe = "fp8", "tensorwise"
	fp8 := est()
	s.Train.Precision = "fp4"
	fp4 := est()
	r := fp4.Compute.GEMMS / fp8.Compute.GEMMS
	if r < 0.45 || r > 0.6 {
		t.Errorf("NVFP4 GEMMs take %.3f of the fp8 ones at twice the peak and the same efficiency, want about 0.5", r)
	}
	if fp4.Compute.AttentionS != fp8.Compute.AttentionS {
		t.Errorf("attention %g s under NVFP4, %g under fp8: both run it in bf16", fp4.Compute.AttentionS, fp8.Compute.AttentionS)
	}
	if got, want := fp4.MFU*s.Cluster.GPU.FP4TFLOPs, fp8.MFU*s.Cluster.GPU.FP8TFLOPs*fp8.StepTimeS/fp4.StepTimeS; relErr(got, want) > 1e-9 {
		t.Errorf("MFU against the fp4 peak: %g, want %g", got, want)
	}
}

// Megatron leaves NVFP4 out of the MTP layers (multi_token_prediction.py at
// d98e8a64): under precision fp4 they are timed as the bf16 plan's layers.
func TestNVFP4MTPInBF16(t *testing.T) {
	s := llama70B()
	s.Cluster.GPU.ComputeCapability = 10
	s.Model.MTPLayers = 1
	s.Train.Precision = "bf16"
	bf := newCostModel(s, spec.Derive(s), resolveOptions(s, DefaultOptions()))
	bfDense, _ := bf.layerTimes()
	s.Train.Precision = "fp4"
	c := newCostModel(s, spec.Derive(s), resolveOptions(s, DefaultOptions()))
	dense, _ := c.layerTimes()
	if c.mtpDense.fwd.total() != bfDense.fwd.total() || c.mtpDense.bwd.total() != bfDense.bwd.total() {
		t.Errorf("MTP layer under NVFP4: %g + %g s, the bf16 layer %g + %g s", c.mtpDense.fwd.total(), c.mtpDense.bwd.total(), bfDense.fwd.total(), bfDense.bwd.total())
	}
	if dense.fwd.total() >= bfDense.fwd.total() {
		t.Errorf("NVFP4 decoder layer %g s is not faster than bf16's %g s", dense.fwd.total(), bfDense.fwd.total())
	}
}
