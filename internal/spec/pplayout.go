package spec

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// PipelineLayout is a parsed --pipeline-model-parallel-layout: the layers of
// every pipeline stage in model order (stage i = virtual stage i/pp of
// pipeline rank i%pp), as Megatron-Core's PipelineParallelLayerLayout
// (megatron/core/transformer/pipeline_parallel_layer_layout.py at d98e8a64)
// reads the string: "E" embedding, "L" loss, "t" a decoder (transformer)
// layer, "m" an MTP layer; "|" ends a stage; "x*n" repeats a character and
// "(...)*n" a group; commas are cosmetic.
type PipelineLayout struct {
	Stages []LayoutStage
}

// LayoutStage is the layers of one stage in order, one character each
// (E, t, m, L).
type LayoutStage struct {
	Layers string
}

// Count returns how many layers of type c ('E', 'L', 't', 'm') the stage has.
func (s LayoutStage) Count(c byte) int { return strings.Count(s.Layers, string(c)) }

// LayoutError is a layout string Megatron's parser rejects, with the
// 0-based byte offset of the problem in the string.
type LayoutError struct {
	Offset int
	Msg    string
}

func (e *LayoutError) Error() string { return fmt.Sprintf("at offset %d: %s", e.Offset, e.Msg) }

// maxLayoutLayers bounds the unrolled layout (hostile input: "(t*9999)*9999").
const maxLayoutLayers = 1 << 20

// ParsePipelineLayout parses a layout string as Megatron's parse_str_to_list
// does: commas removed, then "(group)*n" unrolled, then "x*n", then split at
// "|". It differs only in reporting positions and in refusing an unrolled
// layout of more than 2^20 layers.
//
// The result is shared between callers that parse the same string (the
// solver derives the stages of one layout for every candidate it weighs):
// it must not be modified.
func ParsePipelineLayout(s string) (*PipelineLayout, error) {
	if v, ok := parsedLayouts.Load(s); ok {
		r := v.(parsedLayout)
		return r.l, r.err
	}
	l, err := parsePipelineLayout(s)
	if len(s) <= maxMemoLayoutBytes && layoutMemoSize.Add(1) <= maxMemoLayouts {
		parsedLayouts.Store(s, parsedLayout{l, err})
	}
	return l, err
}

// The memo of ParsePipelineLayout: bounded in entries and in the length of
// the strings it keeps, so hostile input cannot grow it.
var (
	parsedLayouts  sync.Map // string -> parsedLayout
	layoutMemoSize atomic.Int64
)

const (
	maxMemoLayouts     = 4096
	maxMemoLayoutBytes = 1024
)

type parsedLayout struct {
	l   *PipelineLayout
	err error
}

func parsePipelineLayout(s string) (*PipelineLayout, error) {
	// Each element is a character of the string and its offset, so an
	// error after unrolling still points into the user's string.
	type char struct {
		c   byte
		off int
	}
	var in []char
	for i := 0; i < len(s); i++ {
		if s[i] != ',' {
			in = append(in, char{s[i], i})
		}
	}
	// Megatron: re.sub(r'\(([^)]+)\)\*(\d+)', ...) — a group without
	// parentheses inside, followed by *digits; non-overlapping, left to right.
	count := func(cs []char, i int) (n, end int, ok bool) {
		j := i
		for j < len(cs) && cs[j].c >= '0' && cs[j].c <= '9' {
			j++
		}
		if j == i {
			return 0, i, false
		}
		var digits strings.Builder
		for _, c := range cs[i:j] {
			digits.WriteByte(c.c)
		}
		v, err := strconv.Atoi(digits.String())
		if err != nil || v > maxLayoutLayers {
			return 0, i, false
		}
		return v, j, true
	}
	var groups []char
	for i := 0; i < len(in); {
		if in[i].c == '(' {
			j := i + 1
			for j < len(in) && in[j].c != ')' {
				j++
			}
			if j < len(in) && in[j].c == ')' && j > i+1 && j+1 < len(in) && in[j+1].c == '*' {
				if n, end, ok := count(in, j+2); ok {
					if (j-i-1)*n+len(groups) > maxLayoutLayers {
						return nil, &LayoutError{in[i].off, fmt.Sprintf("the layout unrolls to more than %d layers", maxLayoutLayers)}
					}
					for range n {
						groups = append(groups, in[i+1:j]...)
					}
					i = end
					continue
				}
			}
		}
		groups = append(groups, in[i])
		i++
	}
	// Megatron: re.sub(r'(.)\*(\d+)', ...).
	var flat []char
	for i := 0; i < len(groups); {
		if i+1 < len(groups) && groups[i+1].c == '*' {
			if n, end, ok := count(groups, i+2); ok {
				if n+len(flat) > maxLayoutLayers {
					return nil, &LayoutError{groups[i].off, fmt.Sprintf("the layout unrolls to more than %d layers", maxLayoutLayers)}
				}
				for range n {
					flat = append(flat, groups[i])
				}
				i = end
				continue
			}
		}
		flat = append(flat, groups[i])
		i++
	}
	l := &PipelineLayout{}
	var stage strings.Builder
	for _, c := range flat {
		switch c.c {
		case '|':
			l.Stages = append(l.Stages, LayoutStage{stage.String()})
			stage.Reset()
		case 'E', 'L', 't', 'm':
			stage.WriteByte(c.c)
		default:
			return nil, &LayoutError{c.off, fmt.Sprintf("invalid layer character %q (known: E embedding, L loss, t decoder layer, m MTP layer, | stage end, x*n and (…)*n repeats)", c.c)}
		}
	}
	l.Stages = append(l.Stages, LayoutStage{stage.String()})
	return l, nil
}

// Count returns how many layers of type c all stages have together.
func (l *PipelineLayout) Count(c byte) int {
	n := 0
	for _, s := range l.Stages {
		n += s.Count(c)
	}
	return n
}

// Flat is every layer in model order (the stages concatenated).
func (l *PipelineLayout) Flat() string {
	var b strings.Builder
	for _, s := range l.Stages {
		b.WriteString(s.Layers)
	}
	return b.String()
}

// Stage returns the stage of pipeline rank r in virtual stage v.
func (l *PipelineLayout) Stage(pp, r, v int) LayoutStage { return l.Stages[v*pp+r] }

// LayoutStages is parallel.layout parsed, with the virtual stages per
// pipeline rank it gives (validate_args: its stages over pp); ok is false
// without a layout, or when it does not parse or its stages are not a
// multiple of pp.
func (p Parallel) LayoutStages() (l *PipelineLayout, vpp int, ok bool) {
	if p.Layout == nil || p.PP < 1 {
		return nil, 0, false
	}
	l, err := ParsePipelineLayout(*p.Layout)
	if err != nil || len(l.Stages)%p.PP != 0 {
		return nil, 0, false
	}
	return l, len(l.Stages) / p.PP, true
}

// layoutStageLayers assigns the decoder layers from a layout: [r][v].
func layoutStageLayers(layers int, p Parallel) [][]LayerRange {
	l, vpp, ok := p.LayoutStages()
	if !ok || vpp != p.VPP || l.Count('t') != layers {
		return nil
	}
	out := make([][]LayerRange, p.PP)
	for r := range out {
		out[r] = make([]LayerRange, vpp)
	}
	next := 0
	for v := range vpp {
		for r := range p.PP {
			n := l.Stage(p.PP, r, v).Count('t')
			out[r][v] = LayerRange{First: next, Count: n}
			next += n
		}
	}
	return out
}

// CompactLayout writes stages in Megatron's layout syntax with its
// repetitions: "t*4" for a run of one layer kind, "(t*4|)*14" for equal
// consecutive stages.
func CompactLayout(stages []string) string {
	run := func(st string) string {
		var b strings.Builder
		for i := 0; i < len(st); {
			j := i
			for j < len(st) && st[j] == st[i] {
				j++
			}
			b.WriteByte(st[i])
			if j-i > 1 {
				fmt.Fprintf(&b, "*%d", j-i)
			}
			i = j
		}
		return b.String()
	}
	var b strings.Builder
	for i := 0; i < len(stages); {
		j := i
		for j < len(stages) && stages[j] == stages[i] {
			j++
		}
		last := j == len(stages)
		switch {
		case j-i > 1 && !last:
			fmt.Fprintf(&b, "(%s|)*%d", run(stages[i]), j-i)
		case j-i > 1:
			fmt.Fprintf(&b, "(%s|)*%d", run(stages[i]), j-i-1)
			b.WriteString(run(stages[i]))
		default:
			b.WriteString(run(stages[i]))
			if !last {
				b.WriteByte('|')
			}
		}
		i = j
	}
	return b.String()
}

// Plain is l with every stage spelled out layer by layer, no repetitions.
func (l *PipelineLayout) Plain() string {
	return strings.Join(l.stageLayers(), "|")
}

// Compact is l written with Megatron's repetitions (CompactLayout), or
// layer by layer when that is shorter: how a layout that spells out every
// layer is shown.
func (l *PipelineLayout) Compact() string {
	if c, plain := CompactLayout(l.stageLayers()), l.Plain(); len(c) < len(plain) {
		return c
	}
	return l.Plain()
}

// stageLayers are the layers of each stage, in order.
func (l *PipelineLayout) stageLayers() []string {
	st := make([]string, len(l.Stages))
	for i, x := range l.Stages {
		st[i] = x.Layers
	}
	return st
}

// ShowLayout is layout text as parc shows it: compacted (Compact) when it
// parses, else as written.
func ShowLayout(text string) string {
	if pl, err := ParsePipelineLayout(text); err == nil {
		return pl.Compact()
	}
	return text
}
