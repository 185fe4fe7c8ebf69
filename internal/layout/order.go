package layout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"parc.dev/parc/internal/diag"
)

// The axis names of an order string.
const (
	AxisTP = "tp"
	AxisCP = "cp"
	AxisEP = "ep"
	AxisDP = "dp"
	AxisPP = "pp"
)

// The two orders Megatron's training scripts can select
// (megatron/training/initialize.py).
const (
	// DefaultOrder is Megatron's default: pp outermost.
	DefaultOrder = "tp-cp-ep-dp-pp"
	// PPDPOrder is what --use-tp-pp-dp-mapping selects: dp outermost.
	PPDPOrder = "tp-cp-ep-pp-dp"
)

// Axes lists the axis names an order string may use.
var Axes = []string{AxisTP, AxisCP, AxisEP, AxisDP, AxisPP}

// appendOrder is the order in which RankGenerator appends the axes an order
// string leaves out (its name_to_size dict: tp, pp, dp, ep, cp).
var appendOrder = []string{AxisTP, AxisPP, AxisDP, AxisEP, AxisCP}

const orderPath = "parallel.order"

const orderHint = `write the axes tp, cp, ep, dp, pp in lower case separated by "-", each at most once; ` +
	`Megatron's scripts use "` + DefaultOrder + `" (default) or "` + PPDPOrder + `" (--use-tp-pp-dp-mapping)`

// ParseOrder splits an order string into its axes. It reports unknown, empty
// and repeated axes (codes order-unknown-axis, order-repeated-axis) on
// parallel.order and then returns nil. Axes the string leaves out are not
// added here: that needs the degrees (see New).
func ParseOrder(order string, at diag.Locator) ([]string, diag.List) {
	var ds diag.List
	pos := at(orderPath)
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
	if len(unknown) > 0 {
		msg := fmt.Sprintf("parallel.order %q names unknown axes %s", order, strings.Join(unknown, ", "))
		if len(unknown) == 1 {
			msg = fmt.Sprintf("parallel.order %q names an unknown axis %s", order, unknown[0])
		}
		if lower := strings.ToLower(order); lower != order {
			if _, lds := ParseOrder(lower, diag.NoPos); len(lds) == 0 {
				msg += fmt.Sprintf(" (axis names are lower case: %q)", lower)
			}
		}
		ds.Errorf(pos, orderPath, "order-unknown-axis", orderHint, "%s", msg)
	}
	if len(repeated) > 0 {
		ds.Errorf(pos, orderPath, "order-repeated-axis", orderHint,
			"parallel.order %q names %s more than once", order, strings.Join(repeated, ", "))
	}
	if ds.HasErrors() {
		return nil, ds
	}
	return toks, nil
}

func isAxis(s string) bool { return slices.Contains(Axes, s) }

// completeOrder appends the axes the order leaves out, as RankGenerator does,
// and reports (order-missing-axis) every left-out axis whose size is not 1 on
// either grid. dense and expert map an axis name to its size on each grid.
func completeOrder(axes []string, order string, dense, expert map[string]int, pos diag.Pos, ds *diag.List) ([]string, bool) {
	out := append([]string(nil), axes...)
	ok := true
	for _, name := range appendOrder {
		if contains(axes, name) {
			continue
		}
		ds1, ds2 := dense[name], expert[name]
		if ds1 == 1 && ds2 == 1 {
			out = append(out, name)
			continue
		}
		ok = false
		var sizes []string
		if ds1 != 1 {
			sizes = append(sizes, fmt.Sprintf("%s = %d", denseLabel(name), ds1))
		}
		if ds2 != 1 {
			sizes = append(sizes, fmt.Sprintf("%s = %d", expertLabel(name), ds2))
		}
		ds.Errorf(pos, orderPath, "order-missing-axis",
			fmt.Sprintf("add %q to the order, e.g. %q", name, suggestOrder(axes, name)),
			"parallel.order %q leaves out the axis %s, but %s; Megatron raises "+
				"\"The size of (%s) is (%d), but you haven'tspecified the order\" for an axis larger than 1",
			order, name, strings.Join(sizes, " and "), name, max(ds1, ds2))
	}
	return out, ok
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

// suggestOrder proposes a complete order: the default order's position for
// the missing axis, keeping the user's axes.
func suggestOrder(axes []string, missing string) string {
	if len(axes) == 0 {
		return DefaultOrder
	}
	// Insert the missing axis where the default order has it relative to the
	// axes the user wrote.
	def := strings.Split(DefaultOrder, "-")
	rank := map[string]int{}
	for i, a := range def {
		rank[a] = i
	}
	out := make([]string, 0, len(axes)+1)
	placed := false
	for _, a := range axes {
		if !placed && rank[missing] < rank[a] {
			out = append(out, missing)
			placed = true
		}
		out = append(out, a)
	}
	if !placed {
		out = append(out, missing)
	}
	return strings.Join(out, "-")
}

func contains(xs []string, x string) bool { return slices.Contains(xs, x) }
