package diag

import (
	"fmt"
	"strconv"
	"strings"
)

// Thousands writes n with thousands separators (1,234,567): how messages,
// reports and views print counts.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Seconds formats a duration in seconds, milliseconds or microseconds: how
// reports and messages print a step or a collective.
func Seconds(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s >= 1:
		return fmt.Sprintf("%.2f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.1f ms", s*1e3)
	}
	return fmt.Sprintf("%.0f µs", s*1e6)
}

// Duration formats a long time in the largest unit that keeps it above 1:
// seconds, minutes, hours or days (a training run, a Slurm job).
func Duration(s float64) string {
	switch {
	case s >= 2*86400:
		return fmt.Sprintf("%.1f days", s/86400)
	case s >= 2*3600:
		return fmt.Sprintf("%.1f h", s/3600)
	case s >= 120:
		return fmt.Sprintf("%.1f min", s/60)
	}
	return Seconds(s)
}
