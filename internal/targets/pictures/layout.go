package pictures

import (
	"fmt"

	"parc.dev/parc/internal/layout"
)

// groupFill colours groups; group i gets groupFill[i mod 12] (neighbouring
// groups always differ).
var groupFill = []string{
	"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d4a6c8",
}

// darkInk says whether text on groupFill[i] should be white.
var darkInk = []bool{true, false, true, true, false, false, true, false, true, false, false, false}

// MaxDrawnNodes bounds each panel of the rank map.
const MaxDrawnNodes = 16

// RankLayoutFamilies are the families RankLayout draws, in order, when their
// groups have more than one rank.
var RankLayoutFamilies = []string{"tp", "cp", "dp", "pp", "ep", "etp", "edp"}

// RankLayout draws the layout as one panel per parallel axis larger than
// one: the first MaxDrawnNodes nodes as rows, their GPUs as columns, each GPU
// coloured by its group on that axis and labelled with its global rank and
// its group number; the panel title says how many groups of what size and
// which link they cross.
func RankLayout(l *layout.Layout) []byte {
	var fams []*layout.Family
	for _, name := range RankLayoutFamilies {
		if f := l.Family(name); f != nil && f.Size > 1 {
			fams = append(fams, f)
		}
	}
	if len(fams) == 0 {
		if f := l.Family("tp"); f != nil {
			fams = append(fams, f) // a single GPU, or plain replicas: still draw the map
		}
	}
	nodes := min(l.Nodes, MaxDrawnNodes)
	gpn := max(l.GPUsPerNode, 1)
	cell := 44.0
	if gpn > 16 {
		cell = 30
	}
	const left, panelTop, titleH, gapH = 80.0, 56.0, 34.0, 26.0
	panelW := left + float64(gpn)*cell
	cols := max(1, min(len(fams), int(980/panelW)))
	panelH := titleH + float64(nodes)*cell + gapH
	if l.Nodes > nodes {
		panelH += 16
	}
	rows := (len(fams) + cols - 1) / cols
	c := &canvas{w: max(float64(cols)*panelW+40, 760), h: panelTop + float64(rows)*panelH + 10}
	title := fmt.Sprintf("rank layout: %d GPUs = %d nodes × %d, order %s", l.World, l.Nodes, l.GPUsPerNode, l.Order)
	c.text(16, 24, 14, "start", "#14213d", title, ` font-weight="bold"`)
	c.text(16, 42, 11, "start", "#444444",
		"one panel per parallel axis: each GPU (global rank on top) is coloured by its group on that axis, group number below", "")
	for i, f := range fams {
		ox := 16 + float64(i%cols)*panelW
		oy := panelTop + float64(i/cols)*panelH
		s := l.SummaryOf(f.Name)
		link := s.Link
		if link == "" {
			link = "?"
		}
		c.text(ox, oy+18, 12, "start", "#14213d",
			fmt.Sprintf("%s: %d groups of %d, %s", f.Name, f.Count, f.Size, link), ` font-weight="bold"`)
		gy := oy + titleH
		for n := range nodes {
			y := gy + float64(n)*cell
			c.text(ox+left-10, y+cell/2+4, 11, "end", "#14213d", fmt.Sprintf("node %d", n), "")
			for g := range gpn {
				rank := n*gpn + g
				if rank >= l.World {
					continue
				}
				x := ox + left + float64(g)*cell
				group, _, ok := f.Locate(rank)
				fill, ink := "#eeeeee", "#14213d"
				if ok {
					fill = groupFill[group%len(groupFill)]
					if darkInk[group%len(groupFill)] {
						ink = "#ffffff"
					}
				}
				c.rect(x+1, y+1, cell-2, cell-2, fill, ` rx="4" stroke="#ffffff" stroke-width="1"`)
				c.text(x+cell/2, y+cell/2-2, 11, "middle", ink, fmt.Sprint(rank), ` font-weight="bold"`)
				if ok {
					c.text(x+cell/2, y+cell/2+11, 9, "middle", ink, fmt.Sprintf("g%d", group), "")
				}
			}
			// NVLink domain boundaries inside a node
			if l.NVLinkDomain > 0 && l.NVLinkDomain < gpn {
				for g := l.NVLinkDomain; g < gpn; g += l.NVLinkDomain {
					x := ox + left + float64(g)*cell
					c.line(x, y, x, y+cell, "#14213d", 2, "")
				}
			}
		}
		if l.Nodes > nodes {
			c.text(ox+left, gy+float64(nodes)*cell+14, 11, "start", "#444444",
				fmt.Sprintf("… %d more nodes", l.Nodes-nodes), "")
		}
	}
	return c.document(title, "")
}
