package estimate

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// peakInFlightSim is peakInFlight without skipping the periods that repeat:
// every step of rank r's schedule simulated (schedules.py at d98e8a64,
// forward_backward_pipelining_with_interleaving), the first strict peak of
// the bytes alive kept.
func peakInFlightSim(p, v, m, g, r int, weight []float64) []int {
	first := InFlight(p, v, m, g, r)
	if v < 2 || p < 2 || m < 1 {
		return first
	}
	if g < 1 {
		g = p
	}
	table := interleavedTable(m, v, g)
	total := m * v
	warmup := min((p-r-1)*2+(v-1)*g, total)
	if warmup >= total {
		return first
	}
	alive := make([]int, v)
	var bytes float64
	for k := range warmup {
		alive[table[k]]++
		bytes += weight[table[k]]
	}
	best, at := -1.0, slices.Clone(alive)
	for k := 0; warmup+k < total; k++ {
		c := table[warmup+k]
		alive[c]++
		bytes += weight[c]
		if bytes > best {
			best = bytes
			copy(at, alive)
		}
		b := v - 1 - table[k]
		alive[b]--
		bytes -= weight[b]
	}
	return at
}

// TestPeakInFlightSkipsRepeats: skipping the repeating periods of the
// steady state gives the simulation's microbatches alive, bit for bit, on
// weights whose sums round (fractions) and on equal middle chunks.
func TestPeakInFlightSkipsRepeats(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 0
	for _, p := range []int{2, 3, 4, 8, 16, 32} {
		for _, v := range []int{2, 3, 4, 8} {
			for _, m := range []int{1, 2, 5, 8, 16, 33, 64, 100, 512} {
				for _, g := range []int{0, p, p + 1, 2 * p, 3} {
					for r := range p {
						w := make([]float64, v)
						for c := range w {
							switch rng.IntN(3) {
							case 0:
								w[c] = 1e9 * (1 + rng.Float64())
							case 1:
								w[c] = float64(rng.IntN(5)) * 0.1
							default:
								w[c] = 3.3e8
							}
						}
						if g > 0 && (g > m || m%g != 0 && m%g < p) {
							continue // the interleaved schedule's rule
						}
						got, want := peakInFlight(p, v, m, g, r, w), peakInFlightSim(p, v, m, g, r, w)
						if !slices.Equal(got, want) {
							t.Fatalf("p=%d v=%d m=%d g=%d r=%d w=%v: %v, simulated %v", p, v, m, g, r, w, got, want)
						}
						n++
					}
				}
			}
		}
	}
	t.Logf("%d schedules", n)
}
