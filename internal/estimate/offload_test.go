package estimate

import (
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// TestOffloadResidentIsTEsBound: with alike layers of T bytes, Transformer
// Engine's default offload schedule (cpu_offload.py, OffloadSynchronizer.
// _default_offload_sync_init) holds (num_layers − num_offloaded_layers)·T of
// saved activations at its peak, as its docstring states; offloading nothing
// holds all layers.
func TestOffloadResidentIsTEsBound(t *testing.T) {
	const T = 3.0
	for _, L := range []int{2, 8, 61, 80, 126} {
		act := make([]float64, L)
		for l := range act {
			act[l] = T
		}
		for n := 0; n < L; n++ {
			if got, want := offloadResident(act, n), float64(L-n)*T; got != want {
				t.Errorf("L=%d n=%d: resident %g, TE's bound (L-n)·T = %g", L, n, got, want)
			}
		}
	}
	// Unlike layers (dense first, MoE after): the peak is never below the
	// layers that are not offloaded, nor above all of them.
	act := []float64{1, 1, 1, 5, 5, 5, 5, 5}
	for n := range len(act) {
		var kept, all float64
		for l, a := range act {
			all += a
			if l >= n {
				kept += a
			}
		}
		if got := offloadResident(act, n); got < kept || got > all {
			t.Errorf("n=%d: resident %g outside [%g, %g]", n, got, kept, all)
		}
	}
}

// offloadRun is the measured corpus's Megatron-Bridge Llama 3 70B GB200 run
// that offloads the activations of 40 of its 80 layers (runs.jsonl cites
// the r0.3.0 workload config).
func offloadRun(t *testing.T) (*spec.Spec, spec.Derived) {
	t.Helper()
	for _, r := range readMeasuredRuns(t) {
		if r.ID != "bridge-26.02-llama3-70b-gb200-fp8-64" {
			continue
		}
		_, s, skip := loadRunSpec(&r)
		if skip != "" {
			t.Fatal(skip)
		}
		if s.Train.CPUOffloadingNumLayers != 40 {
			t.Fatalf("cpu_offloading_num_layers = %d, the recipe's is 40", s.Train.CPUOffloadingNumLayers)
		}
		return s, spec.Derive(s)
	}
	t.Fatal("run not in the corpus")
	return nil, spec.Derived{}
}

// TestOffloadOnRun: offloading moves the first layers' activations to the
// host (the GPU keeps the rest), and the copies over NVLink-C2C hide under
// the layers' compute; over a link a hundred times slower they cannot, and
// the wait is bounded by the copies' own time.
func TestOffloadOnRun(t *testing.T) {
	s, d := offloadRun(t)
	on, _ := Run(s, d, DefaultLinks(s, d), diag.NoPos)
	s2 := *s
	s2.Train.CPUOffloadingNumLayers = 0
	off, _ := Run(&s2, d, DefaultLinks(&s2, d), diag.NoPos)
	st := on.Memory.Stages[0]
	saved := off.Memory.Stages[0].Activations - st.Activations
	if st.ActivationsOffloaded <= 0 || saved != st.ActivationsOffloaded {
		t.Errorf("offloaded %d bytes, the GPU's activations fell by %d", st.ActivationsOffloaded, saved)
	}
	if off.Memory.FractionOfGPU <= 1 || on.Memory.FractionOfGPU > 1 {
		t.Errorf("the run ran with 40 layers offloaded: %.1f%% of the GPU with them, %.1f%% without", 100*on.Memory.FractionOfGPU, 100*off.Memory.FractionOfGPU)
	}
	if on.Compute.OffloadExposedS != 0 {
		t.Errorf("copies over NVLink-C2C (%g GB/s) exposed %g s per step", *s.Cluster.HostLinkGBps, on.Compute.OffloadExposedS)
	}

	slow := *s
	gbps := *s.Cluster.HostLinkGBps / 100
	slow.Cluster.HostLinkGBps = &gbps
	e, _ := Run(&slow, d, DefaultLinks(&slow, d), diag.NoPos)
	copies := 2 * float64(st.ActivationsOffloaded) / (gbps * 1e9) * float64(d.Microbatches)
	if e.Compute.OffloadExposedS <= 0 || e.Compute.OffloadExposedS > copies {
		t.Errorf("at %g GB/s: exposed %g s per step, the copies take %g s", gbps, e.Compute.OffloadExposedS, copies)
	}
	if e.StepTimeS-on.StepTimeS < 0.99*e.Compute.OffloadExposedS {
		t.Errorf("the exposed copies (%g s) do not lengthen the step (%g → %g s)", e.Compute.OffloadExposedS, on.StepTimeS, e.StepTimeS)
	}
	t.Logf("GB200 Llama 3 70B, 40 of 80 layers offloaded: %s on the GPU (%.1f%%), %s per microbatch on the host; without: %s (%.1f%%); exposed copies %g s per step over C2C, %g s at %g GB/s",
		GiB(on.Memory.PerGPUPeakBytes), 100*on.Memory.FractionOfGPU, GiB(st.ActivationsOffloaded),
		GiB(off.Memory.PerGPUPeakBytes), 100*off.Memory.FractionOfGPU, on.Compute.OffloadExposedS, e.Compute.OffloadExposedS, gbps)
}

// fineSpec is a small MoE plan on one DGX H100 (tp 2 with sequence
// parallelism, pp 2, ep 2, fused attention) for the fine-grained offloading
// and deferred-wgrad tests; extra is CUE added to it.
func fineSpec(t *testing.T, extra string) (*spec.Spec, spec.Derived) {
	t.Helper()
	text := "package plan\n" + `
model: {name: "moe", layers: 8, hidden: 1024, heads: 16, vocab: 32000, bias: false, moe: {experts: 8, topk: 2, ffn_hidden: 1024}}
cluster: {nodes: 1, gpus_per_node: 8, gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}, nvlink_gbps: 450, network_gbps: 50}
parallel: {tp: 2, pp: 2, ep: 2}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64, iters: 10}
kernels: attention_backend: "flash"
` + extra
	s := loadPlanText(t, text)
	return s, spec.Derive(s)
}

// TestFineGrainedOffloadMemory: offloading core_attn with fused attention
// moves query, key and value (T·h/t elements each, above Megatron's default
// 1 Mi-element threshold) of every layer and in-flight microbatch but one
// layer's (the offload margin), and leaves the softmax statistics (T·a/t
// elements, below it) on the GPU; what leaves the GPU is what the host
// holds; a threshold above every tensor or a fraction of 0 offloads
// nothing.
func TestFineGrainedOffloadMemory(t *testing.T) {
	est := func(extra string) *Estimate {
		s, d := fineSpec(t, extra)
		e, ds := Run(s, d, DefaultLinks(s, d), diag.NoPos)
		if ds.HasErrors() {
			t.Fatalf("%s: %v", extra, ds)
		}
		return e
	}
	off := est("")
	on := est(`train: {fine_grained_activation_offloading: true, offload_modules: ["core_attn"]}`)
	const T, h, tp = 4096.0, 1024.0, 2.0
	qkvLayer := 3 * T * h / tp * 2 // bytes of Q, K, V per layer and microbatch
	for r, st := range on.Memory.Stages {
		base := off.Memory.Stages[r]
		if st.Activations+st.ActivationsOffloaded != base.Activations {
			t.Errorf("stage %d: %d on the GPU + %d on the host != %d without offloading", r, st.Activations, st.ActivationsOffloaded, base.Activations)
		}
		n := 0
		for _, f := range st.InFlight {
			n += f
		}
		want := float64(n*st.Layers)*qkvLayer - qkvLayer
		if got := float64(st.ActivationsOffloaded); got < want-1 || got > want+1 {
			t.Errorf("stage %d: %d microbatches × %d layers: host holds %.0f bytes, Q/K/V less one layer's margin is %.0f", r, n, st.Layers, got, want)
		}
	}
	for _, extra := range []string{
		`train: {fine_grained_activation_offloading: true, offload_modules: ["core_attn"], min_offloaded_tensor_size: 1073741824}`,
		`train: {fine_grained_activation_offloading: true, offload_modules: ["core_attn"], activation_offload_fraction: 0}`,
	} {
		e := est(extra)
		for r, st := range e.Memory.Stages {
			if st.Activations != off.Memory.Stages[r].Activations || st.ActivationsOffloaded != 0 {
				t.Errorf("%s: stage %d activations %d (host %d), without offloading %d", extra, r, st.Activations, st.ActivationsOffloaded, off.Memory.Stages[r].Activations)
			}
		}
	}
	// pipeline rank 1 keeps delta bytes of each chunk and microbatch more.
	delta := est(`train: {fine_grained_activation_offloading: true, offload_modules: ["core_attn"], delta_offload_bytes_across_pp_ranks: 1048576}`)
	if d0, d1 := delta.Memory.Stages[0].Activations-on.Memory.Stages[0].Activations, delta.Memory.Stages[1].Activations-on.Memory.Stages[1].Activations; d0 != 0 || d1 != 1048576 {
		t.Errorf("delta 1 MiB: stage 0 keeps %d bytes more, stage 1 %d (want 0 and 1 MiB)", d0, d1)
	}
}

// TestFineGrainedOffloadReloads: the reloads over a PCIe-class link hide
// under the backward; over a link a thousand times slower they do not, and
// the wait is at most the copies' own time.
func TestFineGrainedOffloadReloads(t *testing.T) {
	const mods = `train: {fine_grained_activation_offloading: true, offload_modules: ["core_attn", "attn_proj", "expert_fc1", "moe_act"]}`
	s, d := fineSpec(t, mods)
	e, _ := Run(s, d, DefaultLinks(s, d), diag.NoPos)
	if e.Compute.OffloadExposedS != 0 {
		t.Errorf("reloads over %d GB/s exposed %g s per step", defaultHostLinkGBps, e.Compute.OffloadExposedS)
	}
	s, d = fineSpec(t, mods+"\ncluster: host_link_gbps: 0.064")
	slow, _ := Run(s, d, DefaultLinks(s, d), diag.NoPos)
	var moved float64
	for _, st := range slow.Memory.Stages {
		moved = max(moved, float64(st.ActivationsOffloaded+st.ActivationsLayers)) // more than one microbatch's offloaded bytes
	}
	copies := moved / 0.064e9 * float64(d.Microbatches)
	if slow.Compute.OffloadExposedS <= 0 || slow.Compute.OffloadExposedS > copies {
		t.Errorf("at 0.064 GB/s: exposed %g s per step, the copies take at most %g s", slow.Compute.OffloadExposedS, copies)
	}
	if slow.StepTimeS <= e.StepTimeS {
		t.Errorf("slow reloads do not lengthen the step (%g → %g s)", e.StepTimeS, slow.StepTimeS)
	}
}

// TestDeferredWgradMemory: --defer-embedding-wgrad-compute keeps, on the
// last stage, each deferred microbatch's output-layer input (T·h/t with
// sequence parallelism) and 16-bit logits gradient (T·v/t, v padded to
// Megatron's multiple of 128·t) until the flush: the first
// wgrad_deferral_limit microbatches, or all but the one at its loss peak.
// The first stage is unchanged; the deferred GEMMs leave the last stage's
// microbatches, so the step is not longer than without beyond what the
// cooldown does not hide.
func TestDeferredWgradMemory(t *testing.T) {
	off, _ := fineSpec(t, "")
	dOff := spec.Derive(off)
	base, _ := Run(off, dOff, DefaultLinks(off, dOff), diag.NoPos)
	const T, h, tp = 4096.0, 1024.0, 2.0
	v := float64(dOff.PaddedVocab)
	perMB := 2*T*h/tp + 2*T*v/tp
	m := dOff.Microbatches
	for _, c := range []struct {
		extra string
		held  int
	}{
		{"parallel: {defer_embedding_wgrad_compute: true, wgrad_deferral_limit: 4}", 4},
		{"parallel: defer_embedding_wgrad_compute: true", m - 1},
	} {
		s, d := fineSpec(t, c.extra)
		e, _ := Run(s, d, DefaultLinks(s, d), diag.NoPos)
		last, b := e.Memory.Stages[1], base.Memory.Stages[1]
		want := float64(c.held) * perMB
		if got := float64(last.ActivationsDeferredWgrad); got < want-1 || got > want+1 || last.Total-b.Total != last.ActivationsDeferredWgrad {
			t.Errorf("%s: deferred buffers %d bytes (total +%d), want %d × %.0f", c.extra, last.ActivationsDeferredWgrad, last.Total-b.Total, c.held, perMB)
		}
		if e.Memory.Stages[0].Total != base.Memory.Stages[0].Total {
			t.Errorf("%s: the first stage changed", c.extra)
		}
		if e.Compute.DeferredWgradS <= 0 || e.StepTimeS > base.StepTimeS+e.Compute.DeferredWgradExposedS+1e-12 {
			t.Errorf("%s: deferred %g s (%g exposed); step %g s, without %g s", c.extra, e.Compute.DeferredWgradS, e.Compute.DeferredWgradExposedS, e.StepTimeS, base.StepTimeS)
		}
	}
}
