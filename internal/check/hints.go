package check

import (
	"fmt"
	"strconv"
	"strings"
)

// divisors returns the positive divisors of n in ascending order.
func divisors(n int) []int {
	var out []int
	for d := 1; d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

// maxScanned bounds the candidates a hint looks at (cheap tests, before
// verification): 2^20.
const maxScanned = 1 << 20

// valuesIn returns the values v in [lo, hi] for which ok(v) holds.
//
// It looks at no more than maxScanned values from lo: a range that comes
// from the spec (the world size, a microbatch count up to 2^30) must not
// make a hint cost gigabytes.
func valuesIn(lo, hi int, ok func(int) bool) []int {
	var out []int
	hi = min(hi, lo+maxScanned-1)
	for v := lo; v <= hi; v++ {
		if ok(v) {
			out = append(out, v)
		}
	}
	return out
}

// IntList renders a list of integers as "1, 2, 4", long lists elided in the
// middle, as the checks' own hints write them.
func IntList(v []int) string { return ints(v) }

// ints renders a list of integers as "1, 2, 4"; long lists are elided in the
// middle so a hint stays on one line.
func ints(v []int) string {
	if len(v) == 0 {
		return "none"
	}
	const max = 12
	s := make([]string, 0, len(v))
	for i, x := range v {
		if len(v) > max && i == max-2 {
			s = append(s, "…")
		}
		if len(v) > max && i >= max-2 && i < len(v)-1 {
			continue
		}
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ", ")
}

// nearestMultiples returns the largest positive multiple of m below x (0 if
// none) and the smallest multiple of m above x.
func nearestMultiples(x, m int) (below, above int) {
	if m <= 0 {
		return 0, 0
	}
	below = x / m * m
	if below == x {
		below -= m
	}
	above = (x/m + 1) * m
	return below, above
}

// nearestText renders "96 or 112" (or just "112" when nothing valid is below).
func nearestText(below, above int) string {
	switch {
	case below > 0 && above > 0:
		return fmt.Sprintf("%d or %d", below, above)
	case above > 0:
		return strconv.Itoa(above)
	case below > 0:
		return strconv.Itoa(below)
	}
	return "none"
}

// nearestSatisfying searches outwards from x for the closest values below and
// above x (in steps of step) that satisfy ok; 0 means none within range.
func nearestSatisfying(x, step, limit int, ok func(int) bool) (below, above int) {
	if step <= 0 {
		return 0, 0
	}
	limit = min(limit, maxScanned) // limit comes from the spec (a microbatch group of 3·10^9)
	start := x / step * step
	for v := start; v > 0 && v >= x-limit*step; v -= step {
		if v != x && v < x && ok(v) {
			below = v
			break
		}
	}
	for v := start + step; v <= x+limit*step; v += step {
		if v > x && ok(v) {
			above = v
			break
		}
	}
	return below, above
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// listHint renders "lead: 1, 2, 4" for verified values, or none (what to do
// instead) when no value passes every check: a hint never offers a value
// that fails one.
func listHint(lead string, vs []int, none string) string {
	if len(vs) == 0 {
		return none
	}
	return lead + ": " + ints(vs)
}

// noValue is the text of a hint with no valid value for field.
func noValue(field string) string {
	return "no value of " + field + " passes every check with the rest of the plan as it is"
}
