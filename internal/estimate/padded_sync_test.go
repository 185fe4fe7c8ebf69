package estimate

import (
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// TestPaddedExpertsNoHostSync: expert inputs padded to capacity
// (model.moe.pad_expert_input_to_capacity with a capacity_factor) give the
// alltoall and HybridEP dispatchers every size on the host, so the MoE
// layer's forward makes no device-to-host synchronisation (spec.MoE.StaticDispatch);
// dropless routing, a capacity factor alone, and the allgather dispatcher
// synchronise. The plan is Megatron-Bridge 25.09's DeepSeek-V3 on 256 B200
// (alltoall, capacity 1.0 padded, no CUDA graphs), as the measured writer
// loads it.
func TestPaddedExpertsNoHostSync(t *testing.T) {
	if testing.Short() {
		t.Skip("loads measured runs")
	}
	row := calRowsOf(t, "bridge-25.09-deepseek-v3-b200-fp8-cs-256")[0]
	moe := row.s.Model.MoE
	if !moe.PadExpertInputToCapacity || moe.CapacityFactor == nil || moe.Dispatcher != "alltoall" {
		t.Fatalf("the run's spec: pad %v, capacity %v, dispatcher %q; want padded alltoall",
			moe.PadExpertInputToCapacity, moe.CapacityFactor, moe.Dispatcher)
	}
	step := func(edit func(m *spec.MoE)) (float64, bool) {
		s := *row.s
		m := *s.Model.MoE
		edit(&m)
		s.Model.MoE = &m
		o := DefaultOptions()
		e, _ := RunWith(&s, row.d, row.links, diag.NoPos, o)
		return e.StepTimeS, newCostModel(&s, row.d, o).moeHostSync()
	}
	padded, sync := step(func(*spec.MoE) {})
	if sync {
		t.Errorf("padded alltoall: the model synchronises with the host")
	}
	for _, c := range []struct {
		what string
		edit func(m *spec.MoE)
		// slower: the same dispatcher, so the synchronisation alone
		// lengthens the step (the allgather dispatcher moves other bytes).
		slower bool
	}{
		{"dropless", func(m *spec.MoE) { m.CapacityFactor, m.PadExpertInputToCapacity = nil, false }, true},
		{"capacity factor without padding", func(m *spec.MoE) { m.PadExpertInputToCapacity = false }, true},
		{"allgather dispatcher", func(m *spec.MoE) { m.Dispatcher = "allgather" }, false},
	} {
		got, sync := step(c.edit)
		if !sync {
			t.Errorf("%s: no host synchronisation, want one per MoE layer forward", c.what)
		}
		if c.slower && got <= padded {
			t.Errorf("%s: step %.3f s, not longer than padded %.3f s", c.what, got, padded)
		}
	}
	hybrid, sync := step(func(m *spec.MoE) { m.Dispatcher, m.FlexDispatcherBackend = "flex", "hybridep" })
	if sync || hybrid <= 0 {
		t.Errorf("padded HybridEP: sync %v, step %.3f s; want no host synchronisation", sync, hybrid)
	}
}
