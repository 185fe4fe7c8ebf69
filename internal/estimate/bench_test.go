package estimate

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"parc.dev/parc/internal/spec"
)

// BenchmarkRun estimates Llama-3-70B on 128 GPUs with the links given (as
// the compiler passes the layout's) and without (DefaultLinks builds the
// groups).
func BenchmarkRun(b *testing.B) {
	s := llama70B()
	d := spec.Derive(s)
	links := DefaultLinks(s, d)
	b.Run("links-given", func(b *testing.B) {
		for b.Loop() {
			Run(s, d, links, nil)
		}
	})
	b.Run("default-links", func(b *testing.B) {
		for b.Loop() {
			Run(s, d, nil, nil)
		}
	})
}

// BenchmarkRun405B16k estimates Llama-3-405B on 16,384 GPUs (tp 8, pp 16,
// vpp 8 with embedding and loss accounted for, dp 128, 16 microbatches),
// links given as a solver passes them: the cost of one solver candidate at
// the largest scale the solver must handle.
func BenchmarkRun405B16k(b *testing.B) {
	s := llama70B()
	m := &s.Model
	m.Layers, m.Hidden, m.Heads, m.FFNHidden = 126, 16384, 128, intp(53248)
	s.Cluster.Nodes = 2048
	s.Parallel.TP, s.Parallel.PP, s.Parallel.VPP = 8, 16, 8
	s.Parallel.AccountForEmbedding, s.Parallel.AccountForLoss = true, true
	s.Train.GlobalBatch = 2048
	d := spec.Derive(s)
	links := DefaultLinks(s, d)
	for b.Loop() {
		Run(s, d, links, nil)
	}
}

// FuzzRun: whatever degrees and shapes (each at least 1, as the schema
// guarantees), the estimate neither panics nor produces non-finite numbers,
// its peak is the largest stage, and its MFU stays within the dense peak of
// the precision (above it, some work was timed faster than the GPU can run).
func FuzzRun(f *testing.F) {
	f.Add(uint8(8), uint8(4), uint8(5), uint8(1), uint8(1), uint16(80), uint16(64), uint8(1), uint16(128), uint8(0), uint8(1))
	f.Add(uint8(2), uint8(4), uint8(1), uint8(2), uint8(4), uint16(32), uint16(32), uint8(2), uint16(256), uint8(2), uint8(0))
	f.Add(uint8(1), uint8(1), uint8(1), uint8(1), uint8(1), uint16(1), uint16(1), uint8(1), uint16(1), uint8(1), uint8(3))
	f.Fuzz(func(t *testing.T, tp, pp, vpp, cp, ep uint8, layers, heads uint16, mb uint8, gbs uint16, recompute, variant uint8) {
		s := mixtral()
		if variant%2 == 0 {
			s = llama70B()
		}
		s.Parallel.TP, s.Parallel.PP, s.Parallel.VPP = int(tp%16)+1, int(pp%16)+1, int(vpp%6)+1
		s.Parallel.CP, s.Parallel.EP = int(cp%8)+1, int(ep%8)+1
		s.Parallel.ETP = nil
		s.Model.Layers, s.Model.Heads = int(layers%200)+1, int(heads%128)+1
		s.Train.MicroBatch, s.Train.GlobalBatch = int(mb%8)+1, int(gbs)+1
		s.Train.Recompute = []string{"none", "selective", "full"}[recompute%3]
		s.Train.Precision = []string{"bf16", "fp8", "fp32", "fp16"}[variant%4]
		d := spec.Derive(s)
		e, _ := Run(s, d, nil, nil)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "NaN") || strings.Contains(string(b), "Inf") || math.IsNaN(e.StepTimeS) {
			t.Fatalf("non-finite: %s", b)
		}
		// MFU divides by every GPU of the cluster: it bounds the estimate
		// where the degrees tile the cluster and the batch (the checks
		// reject the rest before an estimate is shown).
		p := s.Parallel
		tiles := d.World == p.TP*p.PP*p.CP*d.DP && d.World == d.ETP*p.EP*p.PP*d.EDP &&
			s.Train.GlobalBatch == s.Train.MicroBatch*d.DP*d.Microbatches
		if tiles && e.MFU > 1 {
			t.Fatalf("MFU %.3f above the dense peak: %s", e.MFU, b)
		}
		for _, st := range e.Memory.Stages {
			if st.Total > e.Memory.PerGPUPeakBytes {
				t.Fatalf("stage %d above the peak", st.Stage)
			}
		}
	})
}
