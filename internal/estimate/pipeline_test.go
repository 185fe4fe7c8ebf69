package estimate

import (
	"slices"
	"testing"
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
