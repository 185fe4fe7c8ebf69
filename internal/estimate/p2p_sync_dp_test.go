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
	assert.InDelta(t, tpOverlapResidual*dpOn.TimeS, dpOn.ExposedS, 1e-9,
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
	d := spec.Derive(&c)
	o := DefaultOptions()
	links := DefaultLinks(&c, d)
	base, _ := RunWith(&c, d, links, diag.NoPos, o)
	var found *FasterSetting
	for _, f := range FasterSettings(&c, d, links, o, base, 1) {
		if f.Field == "parallel.overlap_p2p" {
			found = &f
		}
	}
	if assert.NotNil(t, found, "parallel.overlap_p2p: true is not suggested") {
		assert.InDelta(t, on.StepTimeS, found.StepTimeS, 1e-9)
	}
}
