package solve

import (
	"strings"

	"parc.dev/parc/internal/estimate"
)

// rankGrid is one of Megatron's rank grids: axes in the order of
// parallel.order, the leftmost with stride 1 (layout's and estimate's grids).
type rankGrid struct {
	names []string
	sizes []int
	world int
}

// axisNames are the grid axes; an order string that leaves one out gets it
// appended (they all have size 1 then, so where does not matter).
var axisNames = []string{"tp", "cp", "ep", "dp", "pp"}

func newRankGrid(order string, sizes map[string]int) rankGrid {
	var g rankGrid
	g.world = 1
	add := func(n string) {
		for _, have := range g.names {
			if have == n {
				return
			}
		}
		g.names = append(g.names, n)
		g.sizes = append(g.sizes, sizes[n])
		g.world *= sizes[n]
	}
	for _, n := range strings.Split(strings.ToLower(order), "-") {
		if _, ok := sizes[n]; ok {
			add(n)
		}
	}
	for _, n := range axisNames {
		add(n)
	}
	return g
}

// crosses reports whether some group of the family spanned by the axes in
// mask has ranks in two different blocks of `block` consecutive ranks (NVLink
// domains or nodes), without building the groups.
//
// A group is base + Σ_{i∈mask} k_i·stride_i, where base has zero digits on
// the masked axes. Its members are ascending from base to base + S, S =
// Σ_{i∈mask} (size_i − 1)·stride_i, so it stays in one block exactly when
// base mod block + S < block. The residues base mod block that occur are
// those reachable by adding k·stride_i mod block for each unmasked axis: a set
// of at most `block` values built axis by axis.
func (g rankGrid) crosses(mask []string, block int) bool {
	if block >= g.world {
		return false
	}
	masked := make([]bool, len(g.names))
	for i, n := range g.names {
		for _, m := range mask {
			if n == m {
				masked[i] = true
			}
		}
	}
	span, stride := 0, 1
	strides := make([]int, len(g.names))
	for i, n := range g.sizes {
		strides[i] = stride
		if masked[i] {
			span += (n - 1) * stride
		}
		stride *= n
	}
	if span == 0 {
		return false
	}
	if span >= block {
		return true
	}
	reach := make([]bool, block)
	reach[0] = true
	limit := block - span // a residue ≥ limit crosses
	next := make([]bool, block)
	for i, n := range g.sizes {
		if masked[i] || n <= 1 {
			continue
		}
		step := strides[i] % block
		if step == 0 {
			continue
		}
		period := block / gcd(step, block)
		clear(next)
		for r, ok := range reach {
			if !ok {
				continue
			}
			x := r
			for k := 0; k < min(n, period); k++ {
				if x >= limit {
					return true
				}
				next[x] = true
				x += step
				if x >= block {
					x -= block
				}
			}
		}
		reach, next = next, reach
	}
	return false
}

// gridLinks is, for one assignment of the degrees, which link every family
// the estimate asks about crosses, and whether the tensor-parallel families
// leave their NVLink domain (check.Run's errors, tensorParallelFitsDomain).
type gridLinks struct {
	links     map[string]string
	tpLeaves  bool   // a tp group spans two NVLink domains
	etpLeaves bool   // an etp group spans two NVLink domains
	key       string // the links of tp, cp, ep and etp, for the one-stage bound
}

// linksFor computes the links of every family for the degrees given, the
// way layout.Build places ranks: block placement, NVLink domains of
// nvlink_domain consecutive ranks.
func linksFor(order string, domain, tp, cp, pp, dp, ep, etp, edp int) gridLinks {
	return linksOf(denseCrossings(order, domain, tp, cp, pp, dp), expertCrossings(order, domain, etp, ep, pp, edp))
}

// denseCrossings reports which of the dense grid's families tp, cp, dp,
// dp-cp and pp leave their NVLink domain.
func denseCrossings(order string, domain, tp, cp, pp, dp int) [5]bool {
	g := newRankGrid(order, map[string]int{"tp": tp, "cp": cp, "ep": 1, "dp": dp, "pp": pp})
	domain = max(domain, 1)
	return [5]bool{g.crosses([]string{"tp"}, domain), g.crosses([]string{"cp"}, domain), g.crosses([]string{"dp"}, domain),
		g.crosses([]string{"dp", "cp"}, domain), g.crosses([]string{"pp"}, domain)}
}

// expertCrossings reports which of the expert grid's families ep, etp and
// edp leave their NVLink domain.
func expertCrossings(order string, domain, etp, ep, pp, edp int) [3]bool {
	g := newRankGrid(order, map[string]int{"tp": etp, "cp": 1, "ep": ep, "dp": edp, "pp": pp})
	domain = max(domain, 1)
	return [3]bool{g.crosses([]string{"ep"}, domain), g.crosses([]string{"tp"}, domain), g.crosses([]string{"dp"}, domain)}
}

// linksOf is the links of a grid whose families cross as given.
func linksOf(dense [5]bool, expert [3]bool) gridLinks {
	link := func(crosses bool) string {
		if crosses {
			return estimate.LinkNetwork
		}
		return estimate.LinkNVLink
	}
	var gl gridLinks
	gl.links = map[string]string{
		"tp":    link(dense[0]),
		"cp":    link(dense[1]),
		"dp":    link(dense[2]),
		"dp-cp": link(dense[3]),
		"pp":    link(dense[4]),
		"embd":  link(dense[4]), // the first and last rank of each pipeline group
		"ep":    link(expert[0]),
		"etp":   link(expert[1]),
		"edp":   link(expert[2]),
	}
	gl.tpLeaves = gl.links["tp"] == estimate.LinkNetwork
	gl.etpLeaves = gl.links["etp"] == estimate.LinkNetwork
	gl.key = gl.links["tp"] + gl.links["cp"] + gl.links["ep"] + gl.links["etp"]
	return gl
}

// linkCache keeps linksFor's parts: a dense grid's crossings are shared by
// every expert grid beside it, and grids that cross alike share one links
// map (the estimate only reads it).
type linkCache struct {
	dense  map[[4]int32][5]bool
	expert map[[4]int32][3]bool
	sets   map[[8]bool]gridLinks
}

// denseOf is denseCrossings, from the cache.
func (lc *linkCache) denseOf(order string, domain, tp, cp, pp, dp int) [5]bool {
	if lc.dense == nil {
		lc.dense, lc.expert, lc.sets = map[[4]int32][5]bool{}, map[[4]int32][3]bool{}, map[[8]bool]gridLinks{}
	}
	dk := [4]int32{int32(tp), int32(cp), int32(pp), int32(dp)}
	d, ok := lc.dense[dk]
	if !ok {
		d = denseCrossings(order, domain, tp, cp, pp, dp)
		lc.dense[dk] = d
	}
	return d
}

// linksFor is linksFor, from the cache.
func (lc *linkCache) linksFor(order string, domain, tp, cp, pp, dp, ep, etp, edp int) gridLinks {
	d := lc.denseOf(order, domain, tp, cp, pp, dp)
	ek := [4]int32{int32(etp), int32(ep), int32(pp), int32(edp)}
	e, ok := lc.expert[ek]
	if !ok {
		e = expertCrossings(order, domain, etp, ep, pp, edp)
		lc.expert[ek] = e
	}
	k := [8]bool{d[0], d[1], d[2], d[3], d[4], e[0], e[1], e[2]}
	gl, ok := lc.sets[k]
	if !ok {
		gl = linksOf(d, e)
		lc.sets[k] = gl
	}
	return gl
}
