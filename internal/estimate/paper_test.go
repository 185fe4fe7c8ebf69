package estimate

import (
	"testing"

	"parc.dev/parc/internal/spec"
)

// The worked examples of reference/model-parallelism.md §9 and the papers'
// formulas.

// Practice problem 1: a 70B dense model, 2 + 2 + 12 bytes per parameter.
func TestWorkedExample70BState(t *testing.T) {
	lesson := BytesPerParam{Weights: 2, Gradients: 2, Optimizer: 12}
	full := StateBytes(70e9, lesson, ShardNone, 32)
	if full.Total() != 1120e9 {
		t.Errorf("state of a full replica = %g bytes, want 1120 GB", full.Total())
	}
	zero3 := StateBytes(70e9, lesson, ShardFull, 32)
	if zero3.Total() != 35e9 {
		t.Errorf("ZeRO-3 over 32 GPUs = %g bytes per GPU, want 35 GB", zero3.Total())
	}
	// ZeRO-1 (Megatron's distributed optimizer) shards only the 12 bytes.
	zero1 := StateBytes(70e9, lesson, ShardOptimizer, 32)
	if want := 70e9 * (2 + 2 + 12.0/32); zero1.Total() != want {
		t.Errorf("ZeRO-1 over 32 = %g, want %g", zero1.Total(), want)
	}
	// Megatron keeps fp32 main gradients: 18 bytes, its β without the
	// distributed optimizer, 6 + 12/D with it.
	if b := AdamBytes("bf16"); b.Total() != 18 {
		t.Errorf("Megatron bf16 Adam bytes = %g, want 18", b.Total())
	}
	st := StateBytes(1, AdamBytes("bf16"), ShardOptimizer, 8)
	if st.Total() != 6+12.0/8 {
		t.Errorf("distributed optimizer over 8: %g bytes/param, want 7.5", st.Total())
	}
}

// Practice problem 2 (a): TP=8, h = s = 8192, b = 1, bf16: 896 MB per layer per GPU.
func TestWorkedExampleTPBytes(t *testing.T) {
	const mib = 1 << 20
	if got := TPBytesPerLayer(8192, 1, 8192, 8, 2); got != 896*mib {
		t.Errorf("TP bytes per layer = %g, want 896 MiB = %d", got, 896*mib)
	}
	// One all-reduce of the 128 MiB tensor moves 2·7/8 of it: 224 MiB.
	if got := AllReduceBytes(128*mib, 8); got != 224*mib {
		t.Errorf("all-reduce bytes = %g, want 224 MiB", got)
	}
	// The same through the whole estimate: a plan with those shapes.
	s := baseSpec()
	s.Model.Layers, s.Model.Hidden, s.Model.Heads, s.Model.Vocab = 8, 8192, 64, 32000
	s.Model.PositionEmbedding = "rope"
	s.Parallel.TP = 8
	s.Parallel.SP = new(bool) // the lesson's all-reduces: no sequence parallelism
	s.Train.SeqLength, s.Train.MicroBatch, s.Train.GlobalBatch = 8192, 1, 4
	e := run(t, s)
	tp := e.Comms["tp"]
	if tp.BytesPerLayer != 896*mib {
		t.Errorf("comms.tp.bytes_per_layer = %d, want %d", tp.BytesPerLayer, 896*mib)
	}
	// Per step: 8 layers × 4 microbatches, plus the embedding's reduction
	// and the output layer's gather/scatter (half an all-reduce each).
	want := int64(8*4*896*mib + 4*224*mib)
	if tp.BytesPerStep != want {
		t.Errorf("comms.tp.bytes_per_step = %d, want %d", tp.BytesPerStep, want)
	}
	if tp.Link != LinkNVLink {
		t.Errorf("tp=8 on an 8-GPU node crosses %q, want nvlink", tp.Link)
	}
	// With sequence parallelism the same bytes move as all-gathers and
	// reduce-scatters, and each column-parallel layer (QKV, FC1) gathers its
	// input again in the backward for its weight gradient (Transformer
	// Engine's _Linear keeps only the local shard: backward_input_needs_gather
	// for parallel_mode "column" with sequence_parallel): half an all-reduce
	// more per block, 5/4 of the lesson's bytes.
	on := true
	s.Parallel.SP = &on
	if got := run(t, s).Comms["tp"].BytesPerLayer; got != 1120*mib {
		t.Errorf("with sp, comms.tp.bytes_per_layer = %d, want %d (5/4 of 896 MiB)", got, 1120*mib)
	}
	// ~1.0 ms per layer at 900 GB/s (the lesson's bidirectional figure);
	// ~18 ms per layer over 50 GB/s InfiniBand.
	if ms := float64(896*mib) / 900e9 * 1e3; ms < 1.0 || ms > 1.1 {
		t.Errorf("NVLink time per layer %.2f ms, want ~1.0", ms)
	}
	if ms := float64(896*mib) / 50e9 * 1e3; ms < 18 || ms > 19 {
		t.Errorf("IB time per layer %.2f ms, want ~18", ms)
	}
}

// Practice problem 2 (b) and the §5 quiz.
func TestWorkedExampleBubble(t *testing.T) {
	if got := BubbleFraction(4, 1, 8); got != 3.0/11 {
		t.Errorf("p=4, m=8: bubble %g, want 3/11", got)
	}
	if got := BubbleFraction(4, 2, 8); got != 3.0/19 {
		t.Errorf("p=4, m=8, v=2: bubble %g, want 3/19", got)
	}
	// p=8 needs m ≥ 40 for a bubble of at most 15%.
	if got := MicrobatchesForBubble(8, 1, 8, 0.15); got != 40 {
		t.Errorf("p=8 at 15%%: m = %d, want 40", got)
	}
	if BubbleFraction(8, 1, 40) > 0.15 || BubbleFraction(8, 1, 39) <= 0.15 {
		t.Error("m = 40 is not the smallest microbatch count under 15%")
	}
	// Interleaved with v = 2: m ≥ 24 (a multiple of p = 8 above 19.8).
	if got := MicrobatchesForBubble(8, 2, 8, 0.15); got != 24 {
		t.Errorf("p=8, v=2 at 15%%: m = %d, want 24", got)
	}
	// The ratio, not the size, matters: p=8, m=16 and p=16, m=32 are both ~30%.
	if a, b := BubbleFraction(8, 1, 16), BubbleFraction(16, 1, 32); a != 7.0/23 || b != 15.0/47 {
		t.Errorf("bubbles %g %g, want 7/23 and 15/47", a, b)
	}
}

// Korthikanti et al. 2022, Table 2: activation bytes per layer with
// t-way tensor parallelism, without attention fused (5as²b kept).
func TestKorthikantiTable2(t *testing.T) {
	const s, b, h, a, L = 2048, 1, 4096, 32, 8
	for _, c := range []struct {
		name      string
		tp        int
		sp        bool
		recompute string
		perLayer  float64 // in units of s·b·h bytes
	}{
		{"no parallelism", 1, false, "none", 34 + 5.0*a*s/h},
		{"tensor parallel", 4, false, "none", 10 + 24.0/4 + 5.0*a*s/(h*4)},
		{"tensor + sequence parallel", 4, true, "none", 34.0/4 + 5.0*a*s/(h*4)},
		{"tensor parallel + selective", 4, false, "selective", 10 + 24.0/4},
		{"tensor + sequence parallel + selective", 4, true, "selective", 34.0 / 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := baseSpec()
			sp.Model.Layers, sp.Model.Hidden, sp.Model.Heads, sp.Model.Vocab = L, h, a, 32000
			sp.Parallel.TP, sp.Parallel.SP = c.tp, &c.sp
			sp.Train.SeqLength, sp.Train.MicroBatch, sp.Train.GlobalBatch, sp.Train.Recompute = s, b, 2, c.recompute
			o := DefaultOptions()
			o.FusedAttention = false
			e, _ := RunWith(sp, spec.Derive(sp), nil, nil, o)
			got := float64(e.Memory.Stages[0].ActivationsLayers) / L / (s * b * h)
			near(t, "activations per layer / sbh", got, c.perLayer, 1e-9)
		})
	}
}

// Full recompute keeps only each layer's input, 2sbh (2sbh/t with SP), and
// rematerialises one layer at a time.
func TestFullRecomputeKeepsInputs(t *testing.T) {
	const s, b, h, L = 2048, 2, 4096, 16
	sp := baseSpec()
	sp.Model.Layers, sp.Model.Hidden, sp.Model.Heads, sp.Model.Vocab = L, h, 32, 32000
	sp.Parallel.TP = 4
	sp.Train.SeqLength, sp.Train.MicroBatch, sp.Train.GlobalBatch, sp.Train.Recompute = s, b, 4, "full"
	e := run(t, sp)
	st := e.Memory.Stages[0]
	if want := int64(L * 2 * s * b * h / 4); st.ActivationsLayers != want {
		t.Errorf("checkpointed inputs = %d, want L·2sbh/t = %d", st.ActivationsLayers, want)
	}
	// one layer rematerialised: 34sbh/t plus the fused-attention statistics
	// 4·s·b·a/t.
	want := float64(34*s*b*h)/4 + float64(4*s*b*32)/4
	near(t, "recomputed layer", float64(st.ActivationsRecompute), want, 1e-12)

	// Block method with 4 layers: 4 checkpoints, 12 full layers.
	sp.Train.RecomputeMethod, sp.Train.RecomputeLayers = "block", intp(4)
	e = run(t, sp)
	st = e.Memory.Stages[0]
	near(t, "block method", float64(st.ActivationsLayers), 4*float64(2*s*b*h)/4+12*want, 1e-12)
}

// 1F1B keeps up to p microbatches in flight on the first stage; the
// interleaved schedule (p + (p−1)/v)/p times as many layers' worth
// (Megatron's 1 + (p−1)/(p·v), Narayanan et al. 2021).
func TestInFlight(t *testing.T) {
	for r, want := range []int{4, 3, 2, 1} {
		if got := InFlight(4, 1, 8, 4, r); got[0] != want {
			t.Errorf("1F1B rank %d: %v in flight, want %d", r, got, want)
		}
	}
	if got := InFlight(4, 1, 2, 4, 0); got[0] != 2 {
		t.Errorf("fewer microbatches than stages: %v, want 2", got)
	}
	for _, c := range []struct{ p, v, m int }{{4, 2, 16}, {8, 3, 32}, {4, 5, 32}, {2, 4, 8}} {
		chunks := InFlight(c.p, c.v, c.m, c.p, 0)
		total := 0
		for _, n := range chunks {
			total += n
		}
		// total chunk-microbatches × (L/(p·v)) layers = L·(1 + (p−1)/(p·v))
		// ⇔ total = p·v + p − 1.
		if total != c.p*c.v+c.p-1 {
			t.Errorf("p=%d v=%d: %d chunk forwards in flight on rank 0, want p·v+p−1 = %d", c.p, c.v, total, c.p*c.v+c.p-1)
		}
	}
}
