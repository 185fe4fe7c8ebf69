package report

import (
	"fmt"
	"math"

	"parc.dev/parc/internal/diag"
)

// Units: memory and bytes moved in binary units (GiB, MiB), counts in
// decimal (B = 10⁹), FLOPs in decimal (PFLOP = 10¹⁵).

// Bytes formats a byte count in binary units.
func Bytes(b int64) string {
	x := float64(b)
	switch {
	case math.Abs(x) >= 1<<40:
		return fmt.Sprintf("%.2f TiB", x/(1<<40))
	case math.Abs(x) >= 1<<30:
		return fmt.Sprintf("%.2f GiB", x/(1<<30))
	case math.Abs(x) >= 1<<20:
		return fmt.Sprintf("%.1f MiB", x/(1<<20))
	case math.Abs(x) >= 1<<10:
		return fmt.Sprintf("%.1f KiB", x/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// Count formats a large count: 70.57 B, 340.2 M, 12,345.
func Count(n int64) string {
	x := float64(n)
	switch {
	case math.Abs(x) >= 1e12:
		return fmt.Sprintf("%.2f T", x/1e12)
	case math.Abs(x) >= 1e9:
		return fmt.Sprintf("%.2f B", x/1e9)
	case math.Abs(x) >= 1e6:
		return fmt.Sprintf("%.1f M", x/1e6)
	}
	return Thousands(n)
}

// Thousands writes n with thousands separators (diag.Thousands).
func Thousands(n int64) string { return diag.Thousands(n) }

// FLOPs formats a FLOP count.
func FLOPs(f float64) string {
	switch {
	case f >= 1e18:
		return fmt.Sprintf("%.2f EFLOP", f/1e18)
	case f >= 1e15:
		return fmt.Sprintf("%.1f PFLOP", f/1e15)
	case f >= 1e12:
		return fmt.Sprintf("%.1f TFLOP", f/1e12)
	case f >= 1e9:
		return fmt.Sprintf("%.1f GFLOP", f/1e9)
	}
	return fmt.Sprintf("%.0f FLOP", f)
}

// Seconds formats a duration in seconds (diag.Seconds).
func Seconds(s float64) string { return diag.Seconds(s) }

// Duration formats a long time in its largest unit (diag.Duration).
func Duration(s float64) string { return diag.Duration(s) }

// Percent formats a fraction as a percentage.
func Percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// SignedPercent formats a signed fraction as a percentage with its sign.
func SignedPercent(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) }

// Rate formats tokens per second.
func Rate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2f M", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1f k", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// bubbleShare is the modelled pipeline idle time as a fraction of the step
// (0 when there is no step time to compare with).
func bubbleShare(bubbleS, stepS float64) float64 {
	if stepS <= 0 {
		return 0
	}
	return bubbleS / stepS
}
