package estimate

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/spec"
)

// InFlight counts the first warm-up+1 forward passes of Megatron's schedule
// table without building it; it agrees with counting them in the table.
func TestInFlightMatchesTable(t *testing.T) {
	for p := 2; p <= 6; p++ {
		for v := 2; v <= 4; v++ {
			for g := p; g <= p+3; g++ {
				for m := g; m <= 3*g+p; m++ {
					if !interleavedMicrobatchesOK(p, g, m) {
						continue
					}
					table := interleavedTable(m, v, g)
					for r := range p {
						want := make([]int, v)
						slots := min((p-r-1)*2+(v-1)*g+1, m*v)
						for _, c := range table[:slots] {
							want[c]++
						}
						if got := InFlight(p, v, m, g, r); !slices.Equal(got, want) {
							t.Fatalf("p=%d v=%d m=%d g=%d r=%d: %v, table says %v", p, v, m, g, r, got, want)
						}
					}
				}
			}
		}
	}
}

// Full recomputation with Megatron's block method reruns the first
// recompute_layers layers of each model chunk and keeps the others'
// activations (megatron/core/recompute.py, checkpointed_forward at
// d98e8a64): with 4 layers per chunk, block k adds k/4 of what full
// recomputation of every layer (uniform) adds to the FLOPs, keeps the
// activations of 4−k layers per microbatch in flight, and block 4 is
// uniform 1 in FLOPs and memory.
func TestBlockRecomputeRerunsFirstLayers(t *testing.T) {
	at := func(mode, method string, k int) *Estimate {
		s := llama70B() // tp8 pp4 vpp5: 80 layers, 4 per chunk
		s.Train.Recompute, s.Train.RecomputeMethod = mode, method
		if mode == "full" {
			s.Train.RecomputeLayers = intp(k)
		}
		return run(t, s)
	}
	none, full := at("none", "uniform", 0), at("full", "uniform", 1)
	extra := full.Compute.FLOPsPerGPU - none.Compute.FLOPsPerGPU
	if extra <= 0 {
		t.Fatalf("full recompute adds no FLOPs (%g)", extra)
	}
	prevMem, prevStep := none.Memory.PerGPUPeakBytes, none.StepTimeS
	for k := 1; k <= 4; k++ {
		b := at("full", "block", k)
		near(t, "block FLOPs", b.Compute.FLOPsPerGPU-none.Compute.FLOPsPerGPU, extra*float64(k)/4, 1e-9)
		if b.Memory.PerGPUPeakBytes >= prevMem {
			t.Errorf("block %d: peak %d, not below %d", k, b.Memory.PerGPUPeakBytes, prevMem)
		}
		if b.StepTimeS <= prevStep {
			t.Errorf("block %d: step %.4g s, not above %.4g s", k, b.StepTimeS, prevStep)
		}
		prevMem, prevStep = b.Memory.PerGPUPeakBytes, b.StepTimeS
	}
	b4 := at("full", "block", 4)
	near(t, "block 4 step", b4.StepTimeS, full.StepTimeS, 1e-9)
	if b4.Memory.PerGPUPeakBytes != full.Memory.PerGPUPeakBytes {
		t.Errorf("block 4 peak %d, uniform 1 %d", b4.Memory.PerGPUPeakBytes, full.Memory.PerGPUPeakBytes)
	}
}

// peakInFlight replays Megatron's interleaved schedule (the table, the
// warm-up, forward then backward in each steady step, backward chunks in
// reverse) with the bytes of each chunk's microbatch: it agrees with a
// replay over the built table, equals InFlight with equal chunks, and on
// the last rank whose last chunk holds only the loss (account_for_loss) it
// finds a peak above InFlight's count — p=2, v=2, m=4: the backward of the
// loss-only chunk frees nothing while the next group's first chunk fills.
func TestPeakInFlightReplaysSchedule(t *testing.T) {
	replay := func(p, v, m, g, r int, w []float64) float64 {
		table := interleavedTable(m, v, g)
		W := min((p-r-1)*2+(v-1)*g, m*v)
		var alive, best float64
		for _, c := range table[:W] {
			alive += w[c]
		}
		best = alive
		if W == m*v {
			return best
		}
		for k := 0; W+k < m*v; k++ {
			alive += w[table[W+k]]
			best = max(best, alive)
			alive -= w[v-1-table[k]]
		}
		return best
	}
	weigh := func(n []int, w []float64) float64 {
		var x float64
		for c := range n {
			x += float64(n[c]) * w[c]
		}
		return x
	}
	for p := 2; p <= 5; p++ {
		for v := 2; v <= 4; v++ {
			for g := p; g <= p+2; g++ {
				for m := g; m <= 3*g+p; m++ {
					if !interleavedMicrobatchesOK(p, g, m) {
						continue
					}
					for r := range p {
						for _, w := range [][]float64{
							slices.Repeat([]float64{2}, v),
							append([]float64{1}, slices.Repeat([]float64{2}, v-1)...),
							append(slices.Repeat([]float64{2}, v-1), 0),
							append(slices.Repeat([]float64{3}, v-1), 5),
						} {
							got := weigh(peakInFlight(p, v, m, g, r, w), w)
							if want := replay(p, v, m, g, r, w); got != want {
								t.Fatalf("p=%d v=%d m=%d g=%d r=%d w=%v: peak %g, replay %g", p, v, m, g, r, w, got, want)
							}
						}
						if w := slices.Repeat([]float64{2}, v); !slices.Equal(peakInFlight(p, v, m, g, r, w), InFlight(p, v, m, g, r)) {
							t.Fatalf("p=%d v=%d m=%d g=%d r=%d: equal chunks differ from InFlight", p, v, m, g, r)
						}
					}
				}
			}
		}
	}
	w := []float64{1, 0}
	if got, count := weigh(peakInFlight(2, 2, 4, 2, 1, w), w), weigh(InFlight(2, 2, 4, 2, 1), w); got != 3 || count != 2 {
		t.Errorf("last rank, loss-only last chunk: peak %g layers (want 3), InFlight's count %g (want 2)", got, count)
	}
}

// TestInterleavedScheduleSimulated runs Megatron's interleaved schedule
// (schedules.py at d98e8a64: rank r warms up with 2(p−r−1) + (v−1)·g
// forwards in interleavedTable's order, then alternates a forward and a
// backward, then cools down; the k-th backward runs chunk v−1−table[k]) as
// a dependency simulation: a chunk's forward needs the previous chunk's
// forward (on the rank before, or from rank p−1 for the next chunk on rank
// 0), a backward the next chunk's backward, each after a transfer of hop,
// and its own forward. Without transfers the step takes the work plus
// BubbleFraction's bubble; with transfers no longer than a chunk's forward
// it takes interleavedFill more, whatever the number of microbatches.
func TestInterleavedScheduleSimulated(t *testing.T) {
	const fwd, bwd = 1.0, 2.0
	for _, tc := range []struct{ p, v, m, g int }{
		{2, 4, 16, 2}, {2, 8, 32, 2}, {2, 31, 16, 2}, {4, 4, 32, 4}, {4, 12, 16, 4},
		{8, 5, 64, 8}, {8, 2, 64, 8}, {4, 4, 32, 8}, {4, 4, 30, 5}, {4, 3, 24, 6}, {2, 8, 24, 3},
	} {
		work := float64(tc.m*tc.v) * (fwd + bwd)
		f := BubbleFraction(tc.p, tc.v, tc.m)
		base := simulateInterleaved(t, tc.p, tc.v, tc.m, tc.g, fwd, bwd, 0)
		assert.InDelta(t, work/(1-f), base, 1e-9, "bubble p=%d v=%d m=%d g=%d", tc.p, tc.v, tc.m, tc.g)
		for _, hop := range []float64{0.05, 0.2, 0.5, fwd} {
			got := simulateInterleaved(t, tc.p, tc.v, tc.m, tc.g, fwd, bwd, hop)
			want := interleavedFill(tc.p, tc.v, tc.g, hop, fwd)
			msg := fmt.Sprintf("p=%d v=%d m=%d g=%d hop=%g", tc.p, tc.v, tc.m, tc.g, hop)
			if tc.g == tc.p || float64(tc.p)*hop <= float64(tc.g-tc.p)*fwd {
				assert.InDelta(t, want, got-base, 1e-9, msg)
			} else {
				assert.LessOrEqual(t, got-base, want+1e-9, msg)
				assert.Greater(t, got-base, 2*float64(tc.p-1)*hop, msg)
			}
		}
		// A transfer longer than a chunk's forward holds the steady state.
		got := simulateInterleaved(t, tc.p, tc.v, tc.m, tc.g, fwd, bwd, 4*fwd)
		assert.Greater(t, got-base, interleavedFill(tc.p, tc.v, tc.g, 4*fwd, fwd), "p=%d v=%d m=%d g=%d", tc.p, tc.v, tc.m, tc.g)
	}
}

// TestUnequalStagesSimulated checks the step time with unequal stages,
// m·max T + (Σ T − max T)/v, against Megatron's schedules simulated chunk by
// chunk with each chunk's own forward and backward times (schedules.py at
// d98e8a64: without interleaving rank r runs p−r−1 warmup forwards, with it
// the interleaved table; then one forward and one backward in turn, then the
// cooldown backwards):
//   - exact when the last stage (the loss) is the slower one, whether its
//     last chunk or all its chunks carry the extra work;
//   - without interleaving, never below the simulation (a slower middle or
//     first stage, or every stage its own times: then it overcharges);
//   - never above (m + (p−1)/v)·max T, the equal-stages formula.
//
// With virtual stages and a heavy first chunk as well as a heavy last one it
// can fall below the simulation (both fill the pipeline's edges); that case
// is not claimed.
func TestUnequalStagesSimulated(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for it := range 300 {
		p := []int{2, 3, 4, 8, 16}[it%5]
		v := []int{1, 1, 2, 3, 4}[rng.Intn(5)]
		m := max([]int{1, p - 1, p, p + 1, 2 * p, 5*p + 3}[rng.Intn(6)], 1)
		if v > 1 {
			m = p * (1 + rng.Intn(4))
		}
		fw, bw := make([][]float64, p), make([][]float64, p)
		// it%3: 0 the last stage slower (the loss), 1 one stage slower,
		// 2 every chunk its own times; 1 and 2 only without interleaving.
		mode := it % 3
		if v > 1 {
			mode = 0
		}
		for r := range p {
			fw[r], bw[r] = make([]float64, v), make([]float64, v)
			for c := range v {
				fw[r][c], bw[r][c] = 1/float64(v), 2/float64(v)
				if mode == 2 {
					fw[r][c] = (0.5 + rng.Float64()) / float64(v)
					bw[r][c] = fw[r][c] * (1.5 + rng.Float64())
				}
			}
		}
		if mode < 2 {
			r, k := p-1, 1+rng.Float64()
			if mode == 1 {
				r = rng.Intn(p)
			}
			chunks := []int{v - 1}
			if rng.Intn(2) == 0 || mode == 1 {
				chunks = nil
				for c := range v {
					chunks = append(chunks, c)
				}
			}
			for _, c := range chunks {
				fw[r][c] *= k
				bw[r][c] *= k
			}
		}
		T := make([]float64, p)
		sum := 0.0
		for r := range p {
			for c := range v {
				T[r] += fw[r][c] + bw[r][c]
			}
			sum += T[r]
		}
		slowest := slices.Max(T)
		formula := float64(m)*slowest + (sum-slowest)/float64(v)
		got := simulateSchedule(t, p, v, m, p, func(r, c int) float64 { return fw[r][c] }, func(r, c int) float64 { return bw[r][c] }, 0, false)
		msg := fmt.Sprintf("p=%d v=%d m=%d mode=%d fw=%.3v bw=%.3v", p, v, m, mode, fw, bw)
		if mode == 0 {
			assert.InDelta(t, got, formula, 1e-9, msg)
		}
		assert.GreaterOrEqual(t, formula, got-1e-9, msg)
		assert.LessOrEqual(t, formula, (float64(m)+float64(p-1)/float64(v))*slowest+1e-9, msg)
	}
}

// TestCombinedScheduleSimulated runs the schedule
// parallel.overlap_moe_expert_parallel_comm selects (simulateSchedule,
// combined): Megatron's interleaved schedule with one more warm-up forward
// and each steady-state forward run together with the backward beside it
// (combined_1f1b.py, combined_1f1b_schedule_for_interleaved_pipelining;
// without pipelining combined_1f1b_schedule_for_no_pipelining, the first
// forward and the last backward alone). The simulation fails if a combined
// step would need its own forward ("This is needed to ensure the forward
// and backward computations are independent in all 1f1b steps",
// get_pp_rank_microbatches). Without transfers the step time is the one
// time() charges every plan, the overlap's included: m·max T + (ΣT − max T)/v
// (equal stages: the work plus BubbleFraction's bubble), as the schedule
// without the overlap takes.
func TestCombinedScheduleSimulated(t *testing.T) {
	for _, tc := range []struct{ p, v, m, g int }{
		{1, 1, 8, 1}, {2, 12, 128, 2}, {2, 8, 16, 2}, {4, 4, 32, 4}, {4, 12, 16, 4},
		{8, 4, 64, 8}, {8, 3, 16, 8}, {8, 2, 64, 8}, {4, 6, 24, 4}, {2, 24, 32, 2}, {4, 4, 32, 8},
	} {
		for _, heavyLast := range []float64{1, 1.5} {
			fwd := func(r, c int) float64 {
				if r == tc.p-1 {
					return heavyLast / float64(tc.v)
				}
				return 1 / float64(tc.v)
			}
			bwd := func(r, c int) float64 { return 2 * fwd(r, c) }
			T := make([]float64, tc.p)
			var sum float64
			for r := range tc.p {
				T[r] = 3 * fwd(r, 0) * float64(tc.v)
				sum += T[r]
			}
			slowest := slices.Max(T)
			formula := float64(tc.m)*slowest + (sum-slowest)/float64(tc.v)
			msg := fmt.Sprintf("p=%d v=%d m=%d g=%d last stage x%g", tc.p, tc.v, tc.m, tc.g, heavyLast)
			got := simulateSchedule(t, tc.p, tc.v, tc.m, tc.g, fwd, bwd, 0, true)
			assert.InDelta(t, formula, got, 1e-9, msg)
			assert.InDelta(t, simulateSchedule(t, tc.p, tc.v, tc.m, tc.g, fwd, bwd, 0, false), got, 1e-9, msg)
			if heavyLast == 1 {
				work := float64(tc.m) * slowest
				assert.InDelta(t, work/(1-BubbleFraction(tc.p, tc.v, tc.m)), got, 1e-9, msg)
			}
		}
	}
}

// simulateInterleaved is the step time of the interleaved schedule whose
// passes take fwd and bwd and whose transfers take hop.
func simulateInterleaved(t *testing.T, p, v, m, g int, fwd, bwd, hop float64) float64 {
	return simulateSchedule(t, p, v, m, g, func(int, int) float64 { return fwd }, func(int, int) float64 { return bwd }, hop, false)
}

// simulateSchedule is the step time of Megatron's pipeline schedule (the
// interleaved one for v > 1) whose passes of chunk c on rank r take
// fwd(r, c) and bwd(r, c) and whose transfers take hop. combined runs the
// schedule overlap_moe_expert_parallel_comm selects (schedules.py at
// d98e8a64, forward_backward_helper_wrapper and get_pp_rank_microbatches;
// combined_1f1b.py): one more warm-up forward, and each steady-state step
// one pass that runs the forward and the backward together
// (combined_forward_backward_step), both results ready when it ends; the
// schedule fails the test if such a step's backward needs its own forward.
func simulateSchedule(t *testing.T, p, v, m, g int, fwd, bwd func(r, c int) float64, hop float64, combined bool) float64 {
	table := interleavedTable(m, v, g)
	n := len(table)
	type pass struct {
		back bool
		c, i int
	}
	// The k-th forward of chunk c is its next microbatch, and so for the
	// backwards (chunk v−1−table[k]).
	fw, bw := make([]pass, n), make([]pass, n)
	nf, nb := make([]int, v), make([]int, v)
	for k, c := range table {
		fw[k] = pass{false, c, nf[c]}
		nf[c]++
		b := v - 1 - c
		bw[k] = pass{true, b, nb[b]}
		nb[b]++
	}
	// Each rank's steps in order; a step is one pass, or a combined pair.
	seqs := make([][][]pass, p)
	for r := range p {
		w := 2*(p-r-1) + (v-1)*g
		if v == 1 {
			w = p - r - 1
		}
		if combined {
			w++
		}
		w = min(w, n)
		var seq [][]pass
		for _, x := range fw[:w] {
			seq = append(seq, []pass{x})
		}
		for k := w; k < n; k++ {
			if combined {
				seq = append(seq, []pass{fw[k], bw[k-w]})
			} else {
				seq = append(seq, []pass{fw[k]}, []pass{bw[k-w]})
			}
		}
		for _, x := range bw[n-w:] {
			seq = append(seq, []pass{x})
		}
		seqs[r] = seq
	}
	type key struct {
		r int
		pass
	}
	done := map[key]float64{}
	clock := make([]float64, p)
	next := make([]int, p)
	for left := 2 * n * p; left > 0; {
		moved := false
		for r := range p {
		steps:
			for next[r] < len(seqs[r]) {
				step := seqs[r][next[r]]
				ready, took := 0.0, 0.0
				for _, x := range step {
					var deps []key
					switch {
					case !x.back && r > 0:
						deps = []key{{r - 1, x}}
					case !x.back && x.c > 0:
						deps = []key{{p - 1, pass{false, x.c - 1, x.i}}}
					case x.back && r < p-1:
						deps = []key{{r, pass{false, x.c, x.i}}, {r + 1, x}}
					case x.back && x.c < v-1:
						deps = []key{{r, pass{false, x.c, x.i}}, {0, pass{true, x.c + 1, x.i}}}
					case x.back:
						deps = []key{{r, pass{false, x.c, x.i}}}
					}
					for _, d := range deps {
						if d.r == r && slices.Contains(step, d.pass) {
							t.Fatalf("rank %d: a combined step's %+v needs its own %+v", r, x, d.pass)
						}
						end, found := done[d]
						if !found {
							break steps
						}
						if d.r != r {
							end += hop
						}
						ready = math.Max(ready, end)
					}
					if x.back {
						took += bwd(r, x.c)
					} else {
						took += fwd(r, x.c)
					}
				}
				clock[r] = math.Max(clock[r], ready) + took
				for _, x := range step {
					done[key{r, x}] = clock[r]
					left--
				}
				next[r]++
				moved = true
			}
		}
		require.True(t, moved, "the schedule deadlocks")
	}
	return slices.Max(clock)
}

// TestLossCheckSyncsFollowTheField: the two host synchronisations of the
// loss NaN/Inf check are made only when check_for_nan_in_loss_and_grad is
// on (Megatron-LM d98e8a64, loss_func's rerun_state_machine.validate_result
// runs under args.check_for_nan_in_loss_and_grad): turning the check off
// saves time, and at most 2·m·HostOpS (the last stage's m microbatches).
func TestLossCheckSyncsFollowTheField(t *testing.T) {
	s := gpt175B()
	s.Train.CheckForNaNInLossAndGrad = true
	on, _ := Run(s, spec.Derive(s), nil, nil)
	s.Train.CheckForNaNInLossAndGrad = false
	off, _ := Run(s, spec.Derive(s), nil, nil)
	saved := on.StepTimeS - off.StepTimeS
	assert.Greater(t, saved, 0.0)
	assert.LessOrEqual(t, saved, 2*float64(on.Pipeline.Microbatches)*fittedCalibration.HostOpS*(1+1e-9))
}
