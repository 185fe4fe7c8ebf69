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

// TestRankBudget: a rank budget (model.moe.expert_rank_capacity_factor with
// the flex dispatcher's hybridep or ncclep backend) gives the dispatch static
// shapes, so the MoE layer's forward makes no host synchronisation; with the
// deepep backend Megatron rejects the factor, and without one HybridEP sizes
// its buffers on the host (_HybridEPManager.setup_metadata at d98e8a64). The
// experts keep their activations at the budget, factor × the balanced share
// (HybridEP's num_permuted_tokens), or with the paged stash at the average
// times its buffer factor (the run's 1.2): the routed part of the
// activations grows by 0.5 of itself at a budget of 1.5 and by 0.2 with the
// stash. The plan is Megatron-Bridge 26.06's DeepSeek-V3 on 256 GB300 with
// its recorded settings, the budget and the full-iteration graph taken off.
func TestRankBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("loads measured runs")
	}
	row := calRowsOf(t, "bridge-26.06-deepseek-v3-gb300-mxfp8-256")[0]
	if !row.s.Model.MoE.RankBudget() || !row.s.Model.MoE.PagedStash {
		t.Fatalf("the run's spec has no rank budget with the paged stash: %+v", *row.s.Model.MoE)
	}
	run := func(edit func(m *spec.MoE)) (step, act float64, sync bool) {
		s := *row.s
		s.Kernels.CUDAGraphImpl = "none"
		m := *s.Model.MoE
		edit(&m)
		s.Model.MoE = &m
		o := DefaultOptions()
		e, _ := RunWith(&s, row.d, row.links, diag.NoPos, o)
		return e.StepTimeS, float64(e.Memory.Stages[e.Memory.PeakStage].ActivationsLayers), newCostModel(&s, row.d, o).moeHostSync()
	}
	cf := 1.5
	none, actNone, syncNone := run(func(m *spec.MoE) { m.ExpertRankCapacityFactor, m.PagedStash = nil, false })
	budget, actBudget, syncBudget := run(func(m *spec.MoE) { m.ExpertRankCapacityFactor, m.PagedStash = &cf, false })
	stash, actStash, syncStash := run(func(m *spec.MoE) { m.ExpertRankCapacityFactor, m.PagedStash = &cf, true })
	_, _, syncNCCL := run(func(m *spec.MoE) { m.FlexDispatcherBackend, m.ExpertRankCapacityFactor = "ncclep", &cf })
	_, _, syncDeepEP := run(func(m *spec.MoE) { m.FlexDispatcherBackend, m.ExpertRankCapacityFactor = "deepep", &cf })
	if !syncNone || syncBudget || syncStash || syncNCCL || !syncDeepEP {
		t.Errorf("host synchronisation: without a budget %v, hybridep budget %v, with the stash %v, ncclep budget %v, deepep %v; want true, false, false, false, true",
			syncNone, syncBudget, syncStash, syncNCCL, syncDeepEP)
	}
	if budget >= none || stash >= none {
		t.Errorf("step: %.3f s without a budget, %.3f s with it, %.3f s with the stash; want the budget faster (no synchronisation)", none, budget, stash)
	}
	grow, growStash := actBudget-actNone, actStash-actNone
	if grow <= 0 || growStash <= 0 {
		t.Fatalf("activations: %.4g without a budget, %.4g with it, %.4g with the stash; want both larger", actNone, actBudget, actStash)
	}
	f := row.s.Model.MoE.PagedStashBufferSizeFactorCUDA // the run's 1.2
	if want := (cf - 1) / (f - 1); grow/growStash < 0.98*want || grow/growStash > 1.02*want {
		t.Errorf("the budget's extra activations are %.3g times the stash's, want (%g-1)/(%g-1) = %.3g", grow/growStash, cf, f, want)
	}
}
