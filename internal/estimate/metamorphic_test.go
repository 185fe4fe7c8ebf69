package estimate_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/spec"
)

// TestMetamorphic: relations any sane step-time and memory model keeps,
// checked on random plans every check accepts (randomFormulaSpec: dense,
// MoE and MLA models, uneven stages, layouts, context and expert
// parallelism, the three recompute modes). No measurement is needed to know
// them, and each is a bug when it breaks:
//
//   - twice the global batch, the rest unchanged, never trains fewer tokens
//     per second: the extra microbatches amortise the pipeline's fill and
//     drain, the data-parallel reduction and the optimizer step;
//   - twice the nodes with twice the global batch (weak scaling) never
//     trains more tokens per second per GPU when every rank keeps the whole
//     optimizer state: each GPU does the same work and the data-parallel
//     groups only grow (a distributed optimizer's step shrinks with the
//     group, which may outweigh the larger reduction);
//   - twice the micro batch at the same global batch never lowers the peak
//     memory: each microbatch in flight holds twice the activations;
//   - full recomputation never shortens the step against none: it reruns
//     forward work and removes none;
//   - a faster GPU (twice the bf16 peak) or faster links (twice the NVLink
//     or the network bandwidth) never lengthen the step: before the
//     collectives could run in the GPU's idle time behind a host-bound
//     stretch, twice the peak lengthened it by up to 2.4% on 27 of these
//     150 plans (host-bound, where the shorter GEMMs hid less of the
//     collectives and nothing took up the longer idle time);
//   - selective recomputation against none, sequence parallelism against
//     none and the distributed optimizer against a replicated one never
//     raise the peak: each only drops or shards what a GPU keeps;
//   - MFU stays within the dense peak.
func TestMetamorphic(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 7))
	const want = 150
	n := 0
	var batch, weak, micro, full, faster, leaner int // relations checked
	for i := 0; n < want && i < 20000; i++ {
		text := randomFormulaSpec(r, i)
		s, d, ok := loadFormulaSpec(t, fmt.Sprintf("m%d", i), text)
		if !ok {
			continue
		}
		base, ok := run(s, d)
		if !ok {
			continue
		}
		n++
		if base.MFU > 1 {
			t.Errorf("%d: MFU %.3f above the dense peak\n%s", i, base.MFU, text)
		}

		// Twice the global batch.
		e, ok := variant(t, s, func(v *spec.Spec) { v.Train.GlobalBatch *= 2 })
		batch += boolInt(ok)
		if ok && e.TokensPerS < base.TokensPerS*(1-1e-3) {
			t.Errorf("%d: twice the global batch trains fewer tokens per second: %.0f, from %.0f\n%s", i, e.TokensPerS, base.TokensPerS, text)
		}

		// Twice the nodes and the global batch.
		if s.Train.DistributedOptimizer || s.Train.FSDP {
			// the optimizer step shrinks with the data-parallel group
		} else if e, ok := variant(t, s, func(v *spec.Spec) { v.Cluster.Nodes *= 2; v.Train.GlobalBatch *= 2 }); ok {
			weak++
			perGPU := func(e *estimate.Estimate, nodes int) float64 { return e.TokensPerS / float64(nodes) }
			if perGPU(e, 2*s.Cluster.Nodes) > perGPU(base, s.Cluster.Nodes)*(1+1e-3) {
				t.Errorf("%d: twice the GPUs at the same batch per GPU train more tokens per second per GPU: %.0f, from %.0f\n%s",
					i, perGPU(e, 2*s.Cluster.Nodes), perGPU(base, s.Cluster.Nodes), text)
			}
		}

		// Twice the micro batch at the same global batch.
		e, ok = variant(t, s, func(v *spec.Spec) { v.Train.MicroBatch *= 2 })
		micro += boolInt(ok)
		if ok && e.Memory.PerGPUPeakBytes < int64(float64(base.Memory.PerGPUPeakBytes)*(1-1e-3)) {
			t.Errorf("%d: twice the micro batch lowers the peak: %d bytes, from %d\n%s", i, e.Memory.PerGPUPeakBytes, base.Memory.PerGPUPeakBytes, text)
		}

		// Full recomputation against none.
		if s.Train.Recompute == "none" {
			toFull := func(v *spec.Spec) {
				one := 1
				v.Train.Recompute, v.Train.RecomputeMethod, v.Train.RecomputeLayers = "full", "uniform", &one
			}
			e, ok := variant(t, s, toFull)
			full += boolInt(ok)
			if ok && e.StepTimeS < base.StepTimeS*(1-1e-6) {
				t.Errorf("%d: full recomputation shortens the step: %.4g s, from %.4g s\n%s", i, e.StepTimeS, base.StepTimeS, text)
			}
		}

		// Settings that only drop or shard what a GPU keeps.
		yes := true
		var lean []func(*spec.Spec)
		if s.Train.Recompute == "none" {
			lean = append(lean, func(v *spec.Spec) { v.Train.Recompute = "selective" })
		}
		if s.Parallel.TP > 1 && s.Parallel.SP != nil && !*s.Parallel.SP {
			lean = append(lean, func(v *spec.Spec) { v.Parallel.SP = &yes })
		}
		if !s.Train.DistributedOptimizer {
			lean = append(lean, func(v *spec.Spec) { v.Train.DistributedOptimizer = true })
		}
		for _, f := range lean {
			e, ok := variant(t, s, f)
			leaner += boolInt(ok)
			if ok && e.Memory.PerGPUPeakBytes > base.Memory.PerGPUPeakBytes {
				t.Errorf("%d: a setting that drops or shards state raises the peak: %d bytes, from %d\n%s", i, e.Memory.PerGPUPeakBytes, base.Memory.PerGPUPeakBytes, text)
			}
		}

		// A faster GPU and faster links.
		for what, f := range map[string]func(*spec.Spec){
			"twice the bf16 peak":         func(v *spec.Spec) { v.Cluster.GPU.BF16TFLOPs *= 2 },
			"twice the NVLink bandwidth":  func(v *spec.Spec) { v.Cluster.NVLinkGBps *= 2 },
			"twice the network bandwidth": func(v *spec.Spec) { v.Cluster.NetworkGBps *= 2 },
		} {
			e, ok := variant(t, s, f)
			faster += boolInt(ok)
			if ok && e.StepTimeS > base.StepTimeS*(1+1e-6) {
				t.Errorf("%d: %s lengthens the step: %.5g s, from %.5g s\n%s", i, what, e.StepTimeS, base.StepTimeS, text)
			}
		}
	}
	if n < want {
		t.Fatalf("only %d random plans pass every check and fit", n)
	}
	t.Logf("%d plans; relations checked: global batch %d, weak scaling %d, micro batch %d, full recomputation %d, faster GPU or links %d, leaner state %d",
		n, batch, weak, micro, full, faster, leaner)
	if min(batch, weak, micro, full, faster, leaner) < 10 {
		t.Errorf("a relation was checked on fewer than 10 plans")
	}
}

// run estimates an accepted plan; ok is false when it does not fit its GPU
// (the estimate's own memory check).
func run(s *spec.Spec, d spec.Derived) (*estimate.Estimate, bool) {
	e, ds := estimate.Run(s, d, estimate.DefaultLinks(s, d), diag.NoPos)
	return e, e != nil && !ds.HasErrors()
}

// variant estimates a copy of s changed by f, when every check accepts it.
func variant(t *testing.T, s *spec.Spec, f func(*spec.Spec)) (*estimate.Estimate, bool) {
	t.Helper()
	v := *s
	f(&v)
	d := spec.Derive(&v)
	if check.Run(&v, d, diag.NoPos).HasErrors() {
		return nil, false
	}
	return run(&v, d)
}
