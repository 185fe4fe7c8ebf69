package layout

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The axis names of an order string.
const (
	AxisTP = "tp"
	AxisCP = "cp"
	AxisEP = "ep"
	AxisDP = "dp"
	AxisPP = "pp"
)

// Axes lists the axis names an order string may use.
var Axes = []string{AxisTP, AxisCP, AxisEP, AxisDP, AxisPP}

// appendOrder is the order in which RankGenerator appends the axes an order
// string leaves out (its name_to_size dict: tp, pp, dp, ep, cp).
var appendOrder = []string{AxisTP, AxisPP, AxisDP, AxisEP, AxisCP}

// ParseOrder splits an order string into its axes. It refuses unknown,
// empty and repeated axes. Axes the string leaves out are not added here:
// that needs the degrees (see New).
func ParseOrder(order string) ([]string, error) {
	toks := strings.Split(order, "-")
	var unknown, repeated []string
	seen := map[string]bool{}
	for _, t := range toks {
		switch {
		case !isAxis(t):
			unknown = append(unknown, strconv.Quote(t))
		case seen[t] && !slices.Contains(repeated, strconv.Quote(t)):
			repeated = append(repeated, strconv.Quote(t))
		}
		seen[t] = true
	}
	var errs []error
	if len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("order %q names unknown axes %s (the axes are %s)", order, strings.Join(unknown, ", "), strings.Join(Axes, ", ")))
	}
	if len(repeated) > 0 {
		errs = append(errs, fmt.Errorf("order %q names %s more than once", order, strings.Join(repeated, ", ")))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return toks, nil
}

func isAxis(s string) bool { return slices.Contains(Axes, s) }

// completeOrder appends the axes the order leaves out, as RankGenerator
// does, and refuses a left-out axis whose size is not 1 on either grid (as
// RankGenerator raises). dense and expert map an axis name to its size on
// each grid.
func completeOrder(axes []string, order string, dense, expert map[string]int) ([]string, error) {
	out := append([]string(nil), axes...)
	var errs []error
	for _, name := range appendOrder {
		if contains(axes, name) {
			continue
		}
		ds1, ds2 := dense[name], expert[name]
		if ds1 == 1 && ds2 == 1 {
			out = append(out, name)
			continue
		}
		var sizes []string
		if ds1 != 1 {
			sizes = append(sizes, fmt.Sprintf("%s = %d", denseLabel(name), ds1))
		}
		if ds2 != 1 {
			sizes = append(sizes, fmt.Sprintf("%s = %d", expertLabel(name), ds2))
		}
		errs = append(errs, fmt.Errorf("order %q leaves out the axis %s, but %s; Megatron raises "+
			"\"The size of (%s) is (%d), but you haven'tspecified the order\" for an axis larger than 1",
			order, name, strings.Join(sizes, " and "), name, max(ds1, ds2)))
	}
	return out, errors.Join(errs...)
}

// denseLabel and expertLabel name an axis as the user knows it on each grid.
func denseLabel(axis string) string { return axis }

func expertLabel(axis string) string {
	switch axis {
	case AxisTP:
		return "etp"
	case AxisDP:
		return "edp"
	}
	return axis
}

func contains(xs []string, x string) bool { return slices.Contains(xs, x) }
