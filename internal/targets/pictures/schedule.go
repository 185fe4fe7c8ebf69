package pictures

import (
	"errors"
	"fmt"
	"strings"
)

// Pass is one forward or backward pass of one microbatch through one model
// chunk on one pipeline rank.
type Pass struct {
	Rank       int     `json:"rank"`
	Microbatch int     `json:"microbatch"`
	Chunk      int     `json:"chunk"` // virtual stage on this rank
	Backward   bool    `json:"backward"`
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
}

// Schedule is a simulated pipeline schedule.
type Schedule struct {
	Stages, Virtual, Microbatches, Group int
	Passes                               []Pass
	// Makespan is when the last pass ends; Busy is a rank's work (all ranks
	// do the same).
	Makespan, Busy float64
}

// Bubble is the idle fraction of the simulated step.
func (s Schedule) Bubble() float64 {
	if s.Makespan == 0 {
		return 0
	}
	return 1 - s.Busy/s.Makespan
}

// ErrDeadlock is returned when the pass order Megatron would use cannot run
// (a microbatch count the interleaved schedule rejects).
var ErrDeadlock = errors.New("the schedule deadlocks")

type passKey struct {
	rank, mb, chunk int
	backward        bool
}

// passOrder is the order in which rank r runs its passes, as
// megatron/core/pipeline_parallel/schedules.py orders them: warm-up forwards,
// then one forward and one backward in turn, then the remaining backwards.
// Forward k runs table[k]; backward k runs the same microbatch through the
// chunks in reverse.
func passOrder(p, v, m, g, r int) []passKey {
	type mc struct{ mb, chunk int }
	var table []mc
	var warmup int
	if v == 1 {
		for mb := range m {
			table = append(table, mc{mb, 0})
		}
		warmup = min(p-r-1, m)
	} else {
		for start := 0; start < m; start += g {
			end := min(start+g, m)
			for c := range v {
				for mb := start; mb < end; mb++ {
					table = append(table, mc{mb, c})
				}
			}
		}
		warmup = min((p-r-1)*2+(v-1)*g, m*v)
	}
	total := len(table)
	fwd := func(k int) passKey { return passKey{r, table[k].mb, table[k].chunk, false} }
	bwd := func(k int) passKey { return passKey{r, table[k].mb, v - 1 - table[k].chunk, true} }
	var out []passKey
	for k := range warmup {
		out = append(out, fwd(k))
	}
	for k := range total - warmup {
		out = append(out, fwd(warmup+k), bwd(k))
	}
	for k := total - warmup; k < total; k++ {
		out = append(out, bwd(k))
	}
	return out
}

// dependency is the pass whose result a pass needs.
func dependency(k passKey, p, v int) (passKey, bool) {
	if !k.backward {
		switch {
		case k.rank > 0:
			return passKey{k.rank - 1, k.mb, k.chunk, false}, true
		case k.chunk > 0:
			return passKey{p - 1, k.mb, k.chunk - 1, false}, true
		}
		return passKey{}, false
	}
	switch {
	case k.rank < p-1:
		return passKey{k.rank + 1, k.mb, k.chunk, true}, true
	case k.chunk < v-1:
		return passKey{0, k.mb, k.chunk + 1, true}, true
	}
	return passKey{k.rank, k.mb, k.chunk, false}, true
}

// Simulate runs the schedule of p ranks, v virtual stages, m microbatches in
// groups of g, a forward pass of the whole stage taking fwd and a backward
// pass bwd (each chunk 1/v of that), every rank running its passes in
// Megatron's order as soon as their inputs are there; communication is free.
func Simulate(p, v, m, g int, fwd, bwd float64) (Schedule, error) {
	p, v, m = max(p, 1), max(v, 1), max(m, 1)
	if p == 1 {
		v = 1
	}
	if g < 1 {
		g = p
	}
	s := Schedule{Stages: p, Virtual: v, Microbatches: m, Group: g}
	orders := make([][]passKey, p)
	for r := range p {
		orders[r] = passOrder(p, v, m, g, r)
	}
	done := map[passKey]float64{}
	next := make([]int, p)
	clock := make([]float64, p)
	df, db := fwd/float64(v), bwd/float64(v)
	for {
		progress, finished := false, true
		for r := range p {
			for next[r] < len(orders[r]) {
				k := orders[r][next[r]]
				start := clock[r]
				if dep, ok := dependency(k, p, v); ok {
					end, ok := done[dep]
					if !ok {
						break
					}
					start = max(start, end)
				}
				d := df
				if k.backward {
					d = db
				}
				done[k] = start + d
				clock[r] = start + d
				s.Passes = append(s.Passes, Pass{Rank: r, Microbatch: k.mb, Chunk: k.chunk, Backward: k.backward, Start: start, End: start + d})
				next[r]++
				progress = true
			}
			if next[r] < len(orders[r]) {
				finished = false
			}
		}
		if finished {
			break
		}
		if !progress {
			return s, fmt.Errorf("%w: p=%d v=%d m=%d g=%d", ErrDeadlock, p, v, m, g)
		}
	}
	for r := range p {
		s.Makespan = max(s.Makespan, clock[r])
	}
	s.Busy = float64(m) * (fwd + bwd)
	return s, nil
}

// MaxDrawnMicrobatches bounds the chart: a step with more microbatches is
// drawn with this many (rounded up to the interleaving group), the caption
// saying so; the bubble shown in the title is the whole step's.
const MaxDrawnMicrobatches = 48

// maxDrawnPasses bounds the forward boxes of a chart (as many backward).
const maxDrawnPasses = 8192

var (
	forwardFill  = []string{"#2f6fad", "#5b8fc7", "#86aedb", "#b0cdec"}
	backwardFill = []string{"#d9711c", "#e8914a", "#f0b07d", "#f6ceab"}
	inkOn        = []string{"#ffffff", "#ffffff", "#14213d", "#14213d"}
)

// PipelineSchedule draws the schedule of p pipeline ranks with v virtual
// stages each and m microbatches (interleaving group g; 0 = p) as an SVG
// space-time chart, a backward pass taking twice a forward one. bubble is the
// fraction the title states (the estimate's, for the whole step).
func PipelineSchedule(p, v, m, g int, bubble float64) []byte {
	p, v, m = max(p, 1), max(v, 1), max(m, 1)
	if p == 1 {
		v = 1
	}
	if g < 1 {
		g = p
	}
	drawn := m
	// At most MaxDrawnMicrobatches, and at most maxDrawnPasses boxes per
	// direction, but never fewer than one interleaving group.
	limit := max(min(MaxDrawnMicrobatches, maxDrawnPasses/(p*v)), 1)
	if m > limit {
		drawn = limit
		if v > 1 {
			drawn = (drawn + g - 1) / g * g
		}
	}
	sched, err := Simulate(p, v, drawn, g, 1, 2)

	name := "1F1B"
	formula := fmt.Sprintf("(p-1)/(m+p-1) = %d/%d", p-1, m+p-1)
	switch {
	case p == 1:
		name, formula = "no pipeline", "no bubble with one stage"
	case v > 1:
		name = "interleaved 1F1B"
		formula = fmt.Sprintf("(p-1)/(v·m+p-1) = %d/%d", p-1, v*m+p-1)
	}
	shape := fmt.Sprintf("%d stages", p)
	if v > 1 {
		shape += fmt.Sprintf(" × %d virtual stages", v)
	}
	title := fmt.Sprintf("%s schedule: %s, %d microbatches; bubble %s = %.1f%%",
		name, shape, m, formula, 100*bubble)
	if p == 1 {
		title = fmt.Sprintf("%s: %d microbatches run back to back", name, m)
	}

	const left, top, rowH, gap, chartW = 96.0, 64.0, 30.0, 6.0, 1040.0
	c := &canvas{w: left + chartW + 24, h: top + float64(p)*(rowH+gap) + 56}
	c.text(left, 24, 14, "start", "#14213d", title, ` font-weight="bold"`)
	sub := "rows are pipeline ranks, time runs right; boxes are forward and backward passes (a backward takes twice a forward), numbered by microbatch"
	if drawn < m {
		sub = fmt.Sprintf("first %d of %d microbatches drawn (the steady state repeats); ", drawn, m) +
			"boxes are forward and backward passes numbered by microbatch"
	}
	c.text(left, 44, 11, "start", "#444444", sub, "")
	if err != nil {
		c.text(left, top+20, 13, "start", "#b00020", "cannot draw: "+err.Error(), "")
		return c.document(title, "")
	}
	scale := chartW / sched.Makespan
	for r := range p {
		y := top + float64(r)*(rowH+gap)
		c.text(left-10, y+rowH/2+4, 12, "end", "#14213d", fmt.Sprintf("stage %d", r), "")
		c.rect(left, y, sched.Makespan*scale, rowH, "url(#bubble)", ` stroke="#d8a0a0" stroke-width="0.5"`)
	}
	for _, ps := range sched.Passes {
		y := top + float64(ps.Rank)*(rowH+gap)
		x, w := left+ps.Start*scale, (ps.End-ps.Start)*scale
		shade := ps.Chunk % len(forwardFill)
		fill := forwardFill[shade]
		if ps.Backward {
			fill = backwardFill[shade]
		}
		c.rect(x, y, w, rowH, fill, ` stroke="#ffffff" stroke-width="0.6"`)
		label := fmt.Sprint(ps.Microbatch + 1)
		if w >= 7*float64(len(label))+4 {
			c.text(x+w/2, y+rowH/2+4, 10, "middle", inkOn[shade], label, "")
		}
	}
	// time axis
	axisY := top + float64(p)*(rowH+gap) + 4
	c.line(left, axisY, left+chartW, axisY, "#14213d", 1, "")
	c.text(left+chartW, axisY+14, 10, "end", "#444444", "time →", "")
	c.text(left, axisY+14, 10, "start", "#444444", "0", "")
	// legend
	ly := axisY + 34
	lx := left
	items := []struct{ fill, label string }{{forwardFill[0], "forward"}, {backwardFill[0], "backward"}}
	if v > 1 {
		items = append(items,
			struct{ fill, label string }{forwardFill[1], "forward, next virtual stage"},
			struct{ fill, label string }{backwardFill[1], "backward, next virtual stage"})
	}
	items = append(items, struct{ fill, label string }{"url(#bubble)", "idle (bubble)"})
	for _, it := range items {
		c.rect(lx, ly-11, 14, 14, it.fill, ` stroke="#888888" stroke-width="0.5"`)
		c.text(lx+20, ly, 11, "start", "#14213d", it.label, "")
		lx += 34 + 6.2*float64(len(it.label))
	}
	defs := `<pattern id="bubble" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` + "\n" +
		`<rect x="0" y="0" width="8" height="8" fill="#fbeaea"/>` + "\n" +
		`<line x1="0" y1="0" x2="0" y2="8" stroke="#d04a4a" stroke-width="2"/>` + "\n" +
		"</pattern>\n"
	return c.document(strings.TrimSpace(title), defs)
}
