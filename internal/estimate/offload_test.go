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
