package layout

import "strings"

// Grid is one of the two rank generators Megatron-Core builds: its axes in
// order, leftmost fastest (stride 1).
type Grid struct {
	// Name is "dense" (Megatron's decoder_rank_generator) or "expert"
	// (expert_decoder_rank_generator; its tp axis is expert tensor
	// parallelism and its dp axis expert data parallelism).
	Name  string `json:"name"`
	Axes  []Axis `json:"axes"`
	World int    `json:"world_size"`
}

// Axis is one axis of a grid: its size and its global stride, the product of
// the sizes of the axes left of it.
type Axis struct {
	Name   string `json:"name"`
	Size   int    `json:"size"`
	Stride int    `json:"stride"`
}

func newGrid(name string, order []string, sizes map[string]int) Grid {
	g := Grid{Name: name, Axes: make([]Axis, len(order))}
	stride := 1
	for i, a := range order {
		g.Axes[i] = Axis{Name: a, Size: sizes[a], Stride: stride}
		stride *= sizes[a]
	}
	g.World = stride
	return g
}

// Axis returns the named axis (size 1, stride World when absent).
func (g Grid) Axis(name string) Axis {
	for _, a := range g.Axes {
		if a.Name == name {
			return a
		}
	}
	return Axis{Name: name, Size: 1, Stride: g.World}
}

// Coord is rank's coordinate on the named axis: ⌊rank/stride⌋ mod size.
func (g Grid) Coord(rank int, name string) int {
	a := g.Axis(name)
	return rank / a.Stride % a.Size
}

// effective lists the axes larger than 1, in order: two grids with the same
// effective axes build the same groups.
func (g Grid) effective() string {
	var b strings.Builder
	for _, a := range g.Axes {
		if a.Size > 1 {
			b.WriteString(a.Name)
			b.WriteByte(':')
			b.WriteString(itoa(a.Size))
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// Family is one kind of process group (tp, dp-cp, embd, ...): Count groups of
// Size ranks each. Group g lists its ranks ascending, and groups are ordered
// by their first rank, as Megatron-Core creates them.
type Family struct {
	// Name is the launch.json key.
	Name string `json:"name"`
	// Grid is the generator the family comes from: "dense" or "expert".
	Grid string `json:"grid"`
	// Token is what Megatron passes to RankGenerator.get_ranks on that grid
	// (on the expert grid "tp" is expert tensor parallelism); empty for embd
	// and pos_embd, which are picked from the pp groups.
	Token string `json:"token,omitempty"`
	Size  int    `json:"size"`
	Count int    `json:"count"`

	masked, unmasked []Axis // axes larger than 1 inside / across groups
	// embd, pos_embd: the positions taken from each pp group, and the pp stride.
	stages  []int
	ppGroup *Family
}

func newFamily(name string, g Grid, token string) *Family {
	in := strings.Split(token, "-")
	f := &Family{Name: name, Grid: g.Name, Token: token, Size: 1}
	for _, a := range g.Axes {
		if a.Size == 1 {
			continue
		}
		if contains(in, a.Name) {
			f.masked = append(f.masked, a)
			f.Size *= a.Size
		} else {
			f.unmasked = append(f.unmasked, a)
		}
	}
	f.Count = g.World / f.Size
	return f
}

// newStageFamily picks the given positions (pipeline stages) of every pp group.
func newStageFamily(name string, pp *Family, stages []int) *Family {
	return &Family{Name: name, Grid: pp.Grid, Size: len(stages), Count: pp.Count, stages: stages, ppGroup: pp}
}

// First returns the smallest rank of group g.
func (f *Family) First(g int) int {
	if f.ppGroup != nil {
		return f.ppGroup.member(g, f.stages[0])
	}
	r := 0
	for _, a := range f.unmasked {
		r += g % a.Size * a.Stride
		g /= a.Size
	}
	return r
}

// member returns the i-th rank of group g of a plain family.
func (f *Family) member(g, i int) int {
	r := f.First(g)
	for _, a := range f.masked {
		r += i % a.Size * a.Stride
		i /= a.Size
	}
	return r
}

// AppendGroup appends the ranks of group g to dst, ascending.
func (f *Family) AppendGroup(dst []int, g int) []int {
	if f.ppGroup != nil {
		for _, s := range f.stages {
			dst = append(dst, f.ppGroup.member(g, s))
		}
		return dst
	}
	r := f.First(g)
	n := len(f.masked)
	var digit [8]int
	for range f.Size {
		dst = append(dst, r)
		// Advance the masked coordinates as a mixed-radix counter, first
		// axis fastest: ranks come out ascending because strides grow to the
		// right.
		for k := 0; k < n; k++ {
			a := &f.masked[k]
			digit[k]++
			r += a.Stride
			if digit[k] < a.Size {
				break
			}
			digit[k] = 0
			r -= a.Stride * a.Size
		}
	}
	return dst
}

// Groups returns every group, all backed by one array.
func (f *Family) Groups() [][]int {
	flat := make([]int, 0, f.Count*f.Size)
	out := make([][]int, f.Count)
	for g := range out {
		start := len(flat)
		flat = f.AppendGroup(flat, g)
		out[g] = flat[start:len(flat):len(flat)]
	}
	return out
}

// Locate returns the group holding rank and rank's index in it (its
// group-local rank). ok is false when rank is in no group of the family
// (embd and pos_embd cover only some pipeline stages) or out of range.
func (f *Family) Locate(rank int) (group, index int, ok bool) {
	if f.ppGroup != nil {
		g, stage, ok := f.ppGroup.Locate(rank)
		if !ok {
			return 0, 0, false
		}
		for i, s := range f.stages {
			if s == stage {
				return g, i, true
			}
		}
		return 0, 0, false
	}
	if rank < 0 || rank >= f.Count*f.Size {
		return 0, 0, false
	}
	mul := 1
	for _, a := range f.unmasked {
		group += rank / a.Stride % a.Size * mul
		mul *= a.Size
	}
	mul = 1
	for _, a := range f.masked {
		index += rank / a.Stride % a.Size * mul
		mul *= a.Size
	}
	return group, index, true
}

// SameGroups reports whether g and h build the same groups: the same axes
// larger than 1, in the same order and sizes.
func (g Grid) SameGroups(h Grid) bool { return g.effective() == h.effective() }

// AxisLabel names an axis of the named grid as the user knows it: on the
// expert grid tp is etp and dp is edp.
func AxisLabel(grid, axis string) string {
	if grid == "expert" {
		return expertLabel(axis)
	}
	return axis
}
