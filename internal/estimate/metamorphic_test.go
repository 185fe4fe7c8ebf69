package estimate_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

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
	checked := map[string]int{}
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
		for _, rel := range relations {
			if rel.applies != nil && !rel.applies(s) {
				continue
			}
			v := *s
			rel.change(&v)
			dv, ok := accepted(&v)
			if !ok {
				continue
			}
			e, ok := run(&v, dv)
			if !ok {
				continue
			}
			checked[rel.name]++
			was, got := rel.quantity(base, s), rel.quantity(e, &v)
			if rel.mustNotRise && got > was*(1+rel.tol) || !rel.mustNotRise && got < was*(1-rel.tol) {
				t.Errorf("%d: %s: %.6g, from %.6g\n%s", i, rel.name, got, was, text)
			}
		}
	}
	if n < want {
		t.Fatalf("only %d random plans pass every check and fit", n)
	}
	t.Logf("%d plans; plans each relation was checked on, by what it rules out: %v", n, checked)
	for _, rel := range relations {
		if checked[rel.name] < 10 {
			t.Errorf("%s: checked on %d plans, fewer than 10", rel.name, checked[rel.name])
		}
	}
}

// relation is one of TestMetamorphic's: a change to an accepted plan that
// must not lower (or, mustNotRise, raise) a quantity of its estimate beyond
// a relative tolerance.
type relation struct {
	name        string
	applies     func(*spec.Spec) bool // nil: every plan
	change      func(*spec.Spec)
	quantity    func(*estimate.Estimate, *spec.Spec) float64
	mustNotRise bool
	tol         float64
}

var (
	tokensPerS       = func(e *estimate.Estimate, _ *spec.Spec) float64 { return e.TokensPerS }
	tokensPerSPerGPU = func(e *estimate.Estimate, s *spec.Spec) float64 {
		return e.TokensPerS / float64(s.Cluster.Nodes*s.Cluster.GPUsPerNode)
	}
	peakBytes   = func(e *estimate.Estimate, _ *spec.Spec) float64 { return float64(e.Memory.PerGPUPeakBytes) }
	stepTime    = func(e *estimate.Estimate, _ *spec.Spec) float64 { return e.StepTimeS }
	noRecompute = func(s *spec.Spec) bool { return s.Train.Recompute == "none" }
)

var relations = []relation{
	{name: "twice the global batch trains fewer tokens/s", change: func(v *spec.Spec) { v.Train.GlobalBatch *= 2 },
		quantity: tokensPerS, tol: 1e-3},
	{name: "twice the GPUs at the same batch per GPU train more tokens/s per GPU",
		applies:  func(s *spec.Spec) bool { return !s.Train.DistributedOptimizer && !s.Train.FSDP }, // the optimizer step shrinks with the data-parallel group
		change:   func(v *spec.Spec) { v.Cluster.Nodes *= 2; v.Train.GlobalBatch *= 2 },
		quantity: tokensPerSPerGPU, mustNotRise: true, tol: 1e-3},
	{name: "twice the micro batch lowers the peak", change: func(v *spec.Spec) { v.Train.MicroBatch *= 2 },
		quantity: peakBytes, tol: 1e-3},
	{name: "full recomputation shortens the step", applies: noRecompute,
		change: func(v *spec.Spec) {
			one := 1
			v.Train.Recompute, v.Train.RecomputeMethod, v.Train.RecomputeLayers = "full", "uniform", &one
		},
		quantity: stepTime, tol: 1e-6},
	{name: "selective recomputation raises the peak", applies: noRecompute,
		change: func(v *spec.Spec) { v.Train.Recompute = "selective" }, quantity: peakBytes, mustNotRise: true},
	{name: "sequence parallelism raises the peak",
		applies: func(s *spec.Spec) bool { return s.Parallel.TP > 1 && s.Parallel.SP != nil && !*s.Parallel.SP },
		change:  func(v *spec.Spec) { yes := true; v.Parallel.SP = &yes }, quantity: peakBytes, mustNotRise: true},
	{name: "the distributed optimizer raises the peak", applies: func(s *spec.Spec) bool { return !s.Train.DistributedOptimizer },
		change: func(v *spec.Spec) { v.Train.DistributedOptimizer = true }, quantity: peakBytes, mustNotRise: true},
	{name: "twice the bf16 peak lengthens the step", change: func(v *spec.Spec) { v.Cluster.GPU.BF16TFLOPs *= 2 },
		quantity: stepTime, mustNotRise: true, tol: 1e-6},
	{name: "twice the NVLink bandwidth lengthens the step", change: func(v *spec.Spec) { v.Cluster.NVLinkGBps *= 2 },
		quantity: stepTime, mustNotRise: true, tol: 1e-6},
	{name: "twice the network bandwidth lengthens the step", change: func(v *spec.Spec) { v.Cluster.NetworkGBps *= 2 },
		quantity: stepTime, mustNotRise: true, tol: 1e-6},
}

// run estimates an accepted plan; ok is false when it does not fit its GPU
// (the estimate's own memory check).
func run(s *spec.Spec, d spec.Derived) (*estimate.Estimate, bool) {
	e, ds := estimate.Run(s, d, estimate.DefaultLinks(s, d), diag.NoPos)
	return e, e != nil && !ds.HasErrors()
}
