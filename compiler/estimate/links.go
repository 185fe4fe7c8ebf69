package estimate

import (
	"strings"

	"parc.dev/parc/compiler/spec"
)

// Links a process-group family can cross.
const (
	LinkNVLink  = "nvlink"
	LinkNetwork = "network"
)

// DefaultOrder is Megatron-Core's default rank order.
const DefaultOrder = "tp-cp-ep-dp-pp"

// DefaultGroups builds the process groups Megatron-Core creates for the
// families the estimate needs ("tp", "cp", "dp", "dp-cp", "pp", "ep", "etp",
// "edp", "embd"), from the degrees and parallel.order, with the closed form
// of notes/megatron-rankgen.md: a group of a family is the set of ranks that
// agree on every axis outside it, listed ascending, groups ordered by their
// first rank. It is the estimate's stand-in for the layout stage; the lead may
// pass the layout's groups instead.
func DefaultGroups(s *spec.Spec, d spec.Derived) map[string][][]int {
	p := s.Parallel
	world := max(d.World, 1)
	order := p.Order
	if order == "" {
		order = DefaultOrder
	}
	dense := map[string]int{"tp": max(p.TP, 1), "cp": max(p.CP, 1), "ep": 1, "dp": max(d.DP, 1), "pp": max(p.PP, 1)}
	expert := map[string]int{"tp": max(d.ETP, 1), "cp": 1, "ep": max(p.EP, 1), "dp": max(d.EDP, 1), "pp": max(p.PP, 1)}
	out := map[string][][]int{}
	dg := newRankGrid(order, dense, world)
	for fam, mask := range map[string][]string{
		"tp": {"tp"}, "cp": {"cp"}, "dp": {"dp"}, "dp-cp": {"dp", "cp"}, "pp": {"pp"},
	} {
		out[fam] = dg.groups(mask)
	}
	eg := newRankGrid(order, expert, world)
	for fam, mask := range map[string][]string{"ep": {"ep"}, "etp": {"tp"}, "edp": {"dp"}} {
		out[fam] = eg.groups(mask)
	}
	var embd [][]int
	for _, g := range out["pp"] {
		if len(g) == 1 {
			embd = append(embd, []int{g[0]})
		} else {
			embd = append(embd, []int{g[0], g[len(g)-1]})
		}
	}
	out["embd"] = embd
	return out
}

// DefaultLinks says, for every family of DefaultGroups, whether all its groups
// stay inside one NVLink domain (ranks are placed node by node, nvlink_domain
// consecutive ranks per domain) or some group crosses the network.
func DefaultLinks(s *spec.Spec, d spec.Derived) map[string]string {
	return LinksOf(DefaultGroups(s, d), s.Cluster.NVLinkDomain)
}

// LinksOf classifies each family of groups by the NVLink domain size.
func LinksOf(groups map[string][][]int, nvlinkDomain int) map[string]string {
	dom := max(nvlinkDomain, 1)
	out := make(map[string]string, len(groups))
	for fam, gs := range groups {
		link := LinkNVLink
	family:
		for _, g := range gs {
			for _, r := range g {
				if r/dom != g[0]/dom {
					link = LinkNetwork
					break family
				}
			}
		}
		out[fam] = link
	}
	return out
}

// rankGrid is one of Megatron's RankGenerators: axes in order, leftmost
// fastest.
type rankGrid struct {
	names   []string
	sizes   []int
	strides []int
	world   int
}

func newRankGrid(order string, sizes map[string]int, world int) rankGrid {
	var g rankGrid
	seen := map[string]bool{}
	for _, name := range strings.Split(strings.ToLower(order), "-") {
		if _, ok := sizes[name]; ok && !seen[name] {
			g.names = append(g.names, name)
			seen[name] = true
		}
	}
	for _, name := range []string{"tp", "cp", "ep", "dp", "pp"} {
		if !seen[name] {
			g.names = append(g.names, name)
		}
	}
	stride := 1
	for _, name := range g.names {
		g.sizes = append(g.sizes, sizes[name])
		g.strides = append(g.strides, stride)
		stride *= sizes[name]
	}
	g.world = world
	return g
}

// groups lists the groups of the axes in mask.
func (g rankGrid) groups(mask []string) [][]int {
	in := make([]bool, len(g.names))
	for i, n := range g.names {
		for _, m := range mask {
			if n == m {
				in[i] = true
			}
		}
	}
	index := map[int]int{}
	var out [][]int
	for r := range g.world {
		base := r
		for i := range g.names {
			if in[i] {
				base -= (r / g.strides[i] % g.sizes[i]) * g.strides[i]
			}
		}
		k, ok := index[base]
		if !ok {
			k = len(out)
			index[base] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], r)
	}
	return out
}
