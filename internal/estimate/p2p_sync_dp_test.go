package estimate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// TestP2PSyncBoundsDataParallelOverlap: without overlap_p2p_comm every
// batched point-to-point transfer of the pipeline ends in
// torch.cuda.synchronize() (Megatron-LM d98e8a64 p2p_communication.py,
// batch_p2p_comm and batch_p2p_sync), which waits for the data-parallel
// collectives too, so the interleaved cool-down cannot hide a chunk's
// reduction beyond one pass of that chunk. DGX Cloud 24.11's Nemotron-4
// 340B plan (tp 8, pp 8, vpp 12, 16 microbatches per step) on 256 DGX H100
// (dp 32) ran so; its traffic is timed exposed but for what one
// microbatch's forward and backward cover, where with the overlap it hides
// under the cool-down and only the residual share stays.
func TestP2PSyncBoundsDataParallelOverlap(t *testing.T) {
	s := loadSpecText(t, `model: models.nemotron4_340b
cluster: clusters.dgx_h100 & {nodes: 256}
parallel: {tp: 8, pp: 8, vpp: 12, sp: true}
train: {seq_length: 4096, micro_batch: 1, global_batch: 512, precision: "bf16", recompute: "selective",
	distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true, iters: 10}
`)
	run := func(overlap bool) *Estimate {
		c := *s
		c.Parallel.OverlapP2P = overlap
		e, _ := Run(&c, spec.Derive(&c), nil, nil)
		require.NotNil(t, e)
		return e
	}
	on, off := run(true), run(false)
	dpOn, dpOff := on.Comms["dp"], off.Comms["dp"]
	require.Equal(t, 32, dpOff.Size)
	assert.InDelta(t, dpOn.TimeS, dpOff.TimeS, 1e-9, "the same traffic either way")
	assert.InDelta(t, OverlapResidual*dpOn.TimeS, dpOn.ExposedS, 1e-9,
		"with overlapped transfers the cool-down hides all but the residual share")
	// One microbatch's forward and backward on the stage (its exposed
	// per-microbatch comms included) is the most the synchronised
	// schedule can hide the gather and the reduction under.
	mb := off.Compute.MicrobatchTimeS
	assert.GreaterOrEqual(t, dpOff.ExposedS, dpOff.TimeS-mb-1e-9,
		"with synchronised transfers the traffic beyond one pass per chunk waits")
	assert.Greater(t, dpOff.ExposedS, 2*dpOn.ExposedS)
	assert.Greater(t, off.StepTimeS, on.StepTimeS)

	// explain suggests turning the overlap back on, at the step the
	// estimate gives it.
	c := *s
	c.Parallel.OverlapP2P = false
	found, _ := suggested(&c, nil, "parallel.overlap_p2p")
	if assert.NotNil(t, found, "parallel.overlap_p2p: true is not suggested") {
		assert.InDelta(t, on.StepTimeS, found.StepTimeS, 1e-9)
	}
}

// TestP2PSyncMatchesMeasuredScaling checks the rule against measurements:
// DGX Cloud 24.11 ran Nemotron-4 340B (tp 8, pp 8, vpp 12, 16 microbatches
// per step) with overlap_p2p_comm off on 128 and on 2,048 H100, the same
// work per GPU at dp 2 and dp 32, and measured the step growing with the
// data-parallel group (dgxc-benchmarking nemotron/README_340b.md @
// 143b90dd, the corpus rows). The estimate of those rows, as they ran,
// grows by the measured amount within 35%; with the transfers overlapped
// the data-parallel traffic would hide and the step would barely grow.
func TestP2PSyncMatchesMeasuredScaling(t *testing.T) {
	if testing.Short() {
		t.Skip("loads measured runs")
	}
	cal := DefaultCalibration()
	step := func(r *calRow, tokensPerGPU float64) float64 {
		return float64(r.s.Train.GlobalBatch*r.s.Train.SeqLength) / (tokensPerGPU * float64(r.d.World))
	}
	overlapped := func(r *calRow) *calRow {
		on, s := *r, *r.s
		s.Parallel.OverlapP2P = true
		on.s = &s
		return &on
	}
	for _, prec := range []string{"bf16", "fp8"} {
		rows := calRowsOf(t, "dgxc-24.11-nemotron4-340b-h100-"+prec+"-128", "dgxc-24.11-nemotron4-340b-h100-"+prec+"-2048")
		small, large := rows[0], rows[1]
		if small.d.World > large.d.World {
			small, large = large, small
		}
		require.False(t, small.s.Parallel.OverlapsP2P(), "%s: the run recorded overlap_p2p_comm off", small.id)
		measured := step(large, large.measured) - step(small, small.measured)
		est := step(large, large.estimated(cal)) - step(small, small.estimated(cal))
		on, onL := overlapped(small), overlapped(large)
		estOn := step(onL, onL.estimated(cal)) - step(on, on.estimated(cal))
		t.Logf("%s: dp 2 -> 32 the step grows %.3f s measured, %.3f s estimated, %.3f s estimated with the transfers overlapped", prec, measured, est, estOn)
		assert.InDelta(t, measured, est, 0.35*measured, "%s: estimated growth against the measured", prec)
		assert.Less(t, estOn, 0.25*measured, "%s: with overlapped transfers the traffic hides", prec)
	}
}

// TestNemotron340BFitsAsRun: DGX Cloud 24.11's Nemotron-4 340B ran on 128
// H100 of 80 GB (dgxc-benchmarking nemotron/README_340b.md at 143b90dd) with
// its output layer's weight gradients deferred for up to 22 microbatches and
// its optimizer state in bf16 (nemotron4-340b-synth.yaml lines 186, 214-215),
// and NeMo's selective recomputation of core attention alone: parc's memory
// model, given those settings, must fit it without recomputing more. With
// the state in fp32, as the row was written before session 47, the deferred
// logits gradients did not fit and the row had to recompute the MLP too.
func TestNemotron340BFitsAsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("loads measured runs")
	}
	r := calRowsOf(t, "dgxc-24.11-nemotron4-340b-h100-bf16-128")[0]
	require.True(t, r.s.Parallel.DeferEmbeddingWgradCompute)
	require.Equal(t, "bf16", r.s.Train.ExpAvgDtype)
	assert.Equal(t, []string{"core_attn"}, r.s.Train.RecomputeModuleList(), "the run recomputed core attention only")
	e, _ := RunWith(r.s, r.d, r.links, diag.NoPos, DefaultOptions())
	t.Logf("peak %.2f GiB of %g", float64(e.Memory.PerGPUPeakBytes)/(1<<30), r.s.Cluster.GPU.MemoryGiB)
	assert.LessOrEqual(t, e.Memory.FractionOfGPU, 1.0, "the run fit its 80 GB")
	fp32 := *r.s
	fp32.Train.PrecisionAwareOptim, fp32.Train.ExpAvgDtype, fp32.Train.ExpAvgSqDtype = false, "fp32", "fp32"
	e32, _ := RunWith(&fp32, r.d, r.links, diag.NoPos, DefaultOptions())
	t.Logf("with fp32 state: peak %.2f GiB", float64(e32.Memory.PerGPUPeakBytes)/(1<<30))
	assert.Greater(t, e32.Memory.FractionOfGPU, 1.0, "fp32 state with the deferral does not fit (why the row records bf16)")
}

// TestDeferralSuggested: explain offers the deferred output-layer weight
// gradients (parallel.defer_embedding_wgrad_compute with Megatron-Bridge's
// limit of 22) on a pipelined plan that runs without them, at the step the
// estimate gives the plan with them, and the gain is at most the output
// layer's weight-gradient GEMMs it takes off the last stage. This checks the
// suggestion's wiring against the model, not the model against a
// measurement: no published A/B run of the deferral was found. The plan is
// DGX Cloud 24.11's Nemotron-4 340B on 256 H100, which ran with them
// (wgrad_deferral_limit 22, nemotron4-340b-synth.yaml at 143b90dd), written
// without.
func TestDeferralSuggested(t *testing.T) {
	if testing.Short() {
		t.Skip("loads measured runs")
	}
	r := calRowsOf(t, "dgxc-24.11-nemotron4-340b-h100-bf16-256")[0]
	require.True(t, r.s.Parallel.DeferEmbeddingWgradCompute, "the run deferred")
	require.Equal(t, 22, r.s.Parallel.WgradDeferralLimit)
	const field = "parallel.defer_embedding_wgrad_compute"
	on, _ := RunWith(r.s, r.d, r.links, diag.NoPos, DefaultOptions())
	c := *r.s
	c.Parallel.DeferEmbeddingWgradCompute, c.Parallel.WgradDeferralLimit = false, 0
	found, base := suggested(&c, r.links, field)
	if assert.NotNil(t, found, "parallel.defer_embedding_wgrad_compute is not suggested") {
		assert.InDelta(t, on.StepTimeS, found.StepTimeS, 1e-9)
		assert.Less(t, found.StepTimeS, base.StepTimeS)
		assert.LessOrEqual(t, base.StepTimeS-found.StepTimeS, on.Compute.DeferredWgradS+1e-9,
			"the gain is at most the deferred GEMMs")
	}
	// Not on a plan without a pipeline, where Megatron refuses it (the
	// defer-embedding-wgrad check).
	c.Parallel.PP, c.Parallel.VPP = 1, 1
	found, _ = suggested(&c, r.links, field)
	assert.Nil(t, found, "suggested without a pipeline")
}

// suggested is explain's faster setting of field for s (FasterSettings over
// s's own estimate, with links, or the default links when nil), and that
// estimate; nil when it is not suggested.
func suggested(s *spec.Spec, links map[string]string, field string) (*FasterSetting, *Estimate) {
	d := spec.Derive(s)
	if links == nil {
		links = DefaultLinks(s, d)
	}
	o := DefaultOptions()
	base, _ := RunWith(s, d, links, diag.NoPos, o)
	for _, f := range FasterSettings(s, d, links, o, base, 1) {
		if f.Field == field {
			return &f, base
		}
	}
	return nil, base
}
