package report

// The rank layout as text, for parc explain (presentation lives on the
// report side; internal/layout only computes).

import (
	"fmt"
	"strconv"
	"strings"

	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/spec"
)

// LayoutSummary renders the layout for `parc explain`: the world and both grids,
// then one row per group family with its size, count, link and how many of
// its groups leave a node or an NVLink domain.
func LayoutSummary(l *layout.Layout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "world %d = %d nodes × %d GPUs, NVLink domain %d GPUs\n", l.World, l.Nodes, l.GPUsPerNode, l.NVLinkDomain)
	mapping := "not selectable in Megatron's scripts"
	switch l.MegatronOrder {
	case spec.OrderDefault:
		mapping = "Megatron default"
	case spec.OrderPPDP:
		mapping = "Megatron --use-tp-pp-dp-mapping"
	}
	fmt.Fprintf(&b, "order %s (%s)\n", l.Order, mapping)
	for _, g := range []layout.Grid{l.Dense, l.Expert} {
		fmt.Fprintf(&b, "%-6s grid:", g.Name)
		for _, a := range g.Axes {
			fmt.Fprintf(&b, " %s=%d", layout.AxisLabel(g.Name, a.Name), a.Size)
		}
		b.WriteString("  (strides")
		for _, a := range g.Axes {
			fmt.Fprintf(&b, " %d", a.Stride)
		}
		b.WriteString(")\n")
	}
	stages := make([]string, len(l.EmbeddingStages))
	for i, s := range l.EmbeddingStages {
		stages[i] = strconv.Itoa(s)
	}
	fmt.Fprintf(&b, "embd groups hold pipeline stage(s) %s of each pp group\n\n", strings.Join(stages, " and "))

	rows := [][]string{{"family", "grid", "size", "count", "link", "leave node", "leave domain", "nodes/group"}}
	for _, s := range l.Summaries {
		rows = append(rows, []string{s.Name, s.Grid, strconv.Itoa(s.Size), strconv.Itoa(s.Count), s.Link,
			strconv.Itoa(s.GroupsLeavingNode), strconv.Itoa(s.GroupsLeavingDomain), strconv.Itoa(s.MaxNodesPerGroup)})
	}
	writeTable(&b, rows, func(col int) bool { return col < 2 || col == 4 })
	return b.String()
}

// NodeMap renders the first nodes (at most maxNodes) as a node × GPU map: for
// every GPU its global rank and its coordinate on each axis larger than 1
// (expert axes too when the expert grid differs from the dense one).
func NodeMap(l *layout.Layout, maxNodes int) string {
	if maxNodes < 1 {
		maxNodes = 1
	}
	n := min(maxNodes, l.Nodes)
	type row struct {
		name string
		at   func(rank int) int
	}
	rows := []row{{"rank", func(r int) int { return r }}}
	for _, a := range l.Dense.Axes {
		if a.Size > 1 {
			g := l.Dense
			name := a.Name
			rows = append(rows, row{name, func(r int) int { return g.Coord(r, name) }})
		}
	}
	if !l.Expert.SameGroups(l.Dense) {
		for _, a := range l.Expert.Axes {
			if a.Size > 1 && a.Name != layout.AxisPP {
				g := l.Expert
				name := a.Name
				rows = append(rows, row{layout.AxisLabel("expert", name), func(r int) int { return g.Coord(r, name) }})
			}
		}
	}
	showDomain := l.NVLinkDomain != l.GPUsPerNode
	table := [][]string{append([]string{"", "gpu"}, seq(l.GPUsPerNode)...)}
	for node := range n {
		for i, rw := range rows {
			label := ""
			if i == 0 {
				label = "node " + strconv.Itoa(node)
				if showDomain {
					label += " (domain " + strconv.Itoa(node*l.GPUsPerNode/l.NVLinkDomain) + ")"
				}
			}
			line := []string{label, rw.name}
			for gpu := range l.GPUsPerNode {
				line = append(line, strconv.Itoa(rw.at(node*l.GPUsPerNode+gpu)))
			}
			table = append(table, line)
		}
	}
	var b strings.Builder
	writeTable(&b, table, func(col int) bool { return col < 1 })
	if l.Nodes > n {
		fmt.Fprintf(&b, "… %d more nodes\n", l.Nodes-n)
	}
	return b.String()
}

func seq(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// writeTable aligns columns: those left says are text to the left, the
// others (numbers) to the right.
func writeTable(b *strings.Builder, rows [][]string, left func(col int) bool) {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if left(i) {
				line.WriteString(c + pad)
			} else {
				line.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}
