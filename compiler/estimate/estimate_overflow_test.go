package estimate

import (
	"math"
	"testing"
)

// An absurdly large plan must come out as too large, never wrap to negative.
func TestRoundSaturates(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want int64
	}{
		{1e30, math.MaxInt64}, {math.Inf(1), math.MaxInt64}, {-1e30, math.MinInt64}, {math.NaN(), 0}, {2.5, 3}, {1 << 40, 1 << 40},
	} {
		if got := round(c.in); got != c.want {
			t.Errorf("round(%g) = %d, want %d", c.in, got, c.want)
		}
	}
}
