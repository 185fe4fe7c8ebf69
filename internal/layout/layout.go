package layout

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// Link names, as in explain's JSON.
const (
	LinkNVLink  = "nvlink"
	LinkNetwork = "network"
)

// Config is what the layout depends on. Build fills it from a spec; tests and
// benchmarks may build one directly.
type Config struct {
	Nodes        int
	GPUsPerNode  int
	NVLinkDomain int // GPUs per NVLink domain; 0 means GPUsPerNode
	TP, PP, CP   int
	EP, ETP      int // ETP 0 means TP
	Order        string
	// TieEmbeddings and MTPLayers decide the embd groups (pretrain_gpt.py).
	TieEmbeddings bool
	MTPLayers     int
}

// Layout is the rank layout of a plan: where every rank runs and every process
// group Megatron-Core builds. It is immutable and safe for concurrent use.
type Layout struct {
	World        int `json:"world_size"`
	Nodes        int `json:"nodes"`
	GPUsPerNode  int `json:"gpus_per_node"`
	NVLinkDomain int `json:"nvlink_domain"`
	// Order is parallel.order completed as RankGenerator completes it (the
	// axes it leaves out, all of size 1, appended). Both grids use it.
	Order string `json:"order"`
	// MegatronOrder is the order Megatron's training scripts must be given to
	// build exactly these groups: DefaultOrder, or PPDPOrder (pass
	// --use-tp-pp-dp-mapping). It is the user's order when that is one of
	// the two, otherwise the one (default first) whose groups are the same.
	// Empty when neither is (a warning says so).
	MegatronOrder string `json:"megatron_order"`
	Dense         Grid   `json:"dense"`
	Expert        Grid   `json:"expert"`
	// EmbeddingStages are the pipeline stages in every embd group.
	EmbeddingStages []int `json:"embedding_stages"`
	// Summaries describe each family, in Families order.
	Summaries []FamilySummary `json:"families"`

	families []*Family
}

// FamilySummary is how one family of groups sits on the cluster.
type FamilySummary struct {
	Name  string `json:"name"`
	Grid  string `json:"grid"`
	Size  int    `json:"size"`
	Count int    `json:"count"`
	// Link is "nvlink" when every group lies inside one NVLink domain
	// (a group of one rank counts as inside), "network" otherwise.
	Link string `json:"link"`
	// GroupsLeavingNode and GroupsLeavingDomain count the groups whose ranks
	// are on more than one node, or in more than one NVLink domain.
	GroupsLeavingNode   int `json:"groups_leaving_node"`
	GroupsLeavingDomain int `json:"groups_leaving_domain"`
	// MaxNodesPerGroup is the largest number of nodes one group spans.
	MaxNodesPerGroup int `json:"max_nodes_per_group"`
}

// Placement is where a rank runs.
type Placement struct {
	Node      int `json:"node"`
	LocalRank int `json:"local_rank"`
	GPU       int `json:"gpu"`
	// Domain is the NVLink domain of the GPU.
	Domain int `json:"domain"`
}

// Coords are a rank's coordinates on both grids (PP is the same on both:
// Megatron asserts it).
type Coords struct {
	TP  int `json:"tp"`
	CP  int `json:"cp"`
	DP  int `json:"dp"`
	PP  int `json:"pp"`
	ETP int `json:"etp"`
	EP  int `json:"ep"`
	EDP int `json:"edp"`
}

// MaxWorld is the largest world New lays out (2^22 GPUs, 32 times the
// 131,072-GPU benchmark); beyond it launch.json alone would be gigabytes.
const MaxWorld = 1 << 22

// FamilyNames lists the families in the order Megatron-Core creates them
// (initialize_model_parallel).
var FamilyNames = []string{
	"dp-cp", "dp", "cp", "tp-pp", "tp", "pp", "embd", "pos_embd",
	"tp-dp-cp", "tp-dp", "tp-cp",
	"ep", "etp", "etp-ep", "etp-ep-pp", "edp",
}

// Build lays out the ranks of a spec. It reports what makes a layout
// impossible (bad order string, a grid that does not tile the world) and
// returns a nil Layout then; the divisibility rules themselves are also
// checked, with more context, by internal/check.
func Build(s *spec.Spec, d spec.Derived, at diag.Locator) (*Layout, diag.List) {
	etp := d.ETP
	if etp == 0 && s.Parallel.ETP != nil {
		etp = *s.Parallel.ETP
	}
	return New(Config{
		Nodes:         s.Cluster.Nodes,
		GPUsPerNode:   s.Cluster.GPUsPerNode,
		NVLinkDomain:  s.Cluster.NVLinkDomain,
		TP:            s.Parallel.TP,
		PP:            s.Parallel.PP,
		CP:            s.Parallel.CP,
		EP:            s.Parallel.EP,
		ETP:           etp,
		Order:         s.Parallel.Order,
		TieEmbeddings: s.Model.TieEmbeddings,
		MTPLayers:     s.Model.MTPLayers,
	}, at)
}

// New lays out the ranks for c. See Build.
func New(c Config, at diag.Locator) (*Layout, diag.List) {
	var ds diag.List
	if c.ETP == 0 {
		c.ETP = c.TP
	}
	if c.NVLinkDomain == 0 {
		c.NVLinkDomain = c.GPUsPerNode
	}
	positive := []struct {
		path string
		v    int
	}{
		{"cluster.nodes", c.Nodes}, {"cluster.gpus_per_node", c.GPUsPerNode},
		{"cluster.nvlink_domain", c.NVLinkDomain},
		{"parallel.tp", c.TP}, {"parallel.pp", c.PP}, {"parallel.cp", c.CP},
		{"parallel.ep", c.EP}, {"parallel.etp", c.ETP},
	}
	for _, p := range positive {
		if p.v < 1 {
			ds.Errorf(at(p.path), p.path, "layout-invalid-degree", "use a whole number ≥ 1",
				"%s is %d; the layout needs a whole number ≥ 1", p.path, p.v)
		}
	}
	axes, ods := ParseOrder(c.Order, at)
	ds = append(ds, ods...)
	if ds.HasErrors() {
		return nil, ds
	}

	world, ok := mul(c.Nodes, c.GPUsPerNode)
	if !ok || world > MaxWorld {
		ds.Errorf(at("cluster.nodes"), "cluster.nodes", "layout-world-too-large",
			fmt.Sprintf("parc lays out at most %d GPUs", MaxWorld),
			"%d nodes × %d GPUs is more ranks than parc lays out", c.Nodes, c.GPUsPerNode)
		return nil, ds
	}
	dense, dok := mul(c.TP, c.PP, c.CP)
	expert, eok := mul(c.ETP, c.EP, c.PP)
	if !dok || world%dense != 0 {
		ds.Errorf(at("parallel.tp"), "parallel.tp", "layout-grid-does-not-tile",
			divisorHint("tp", world, c.PP*c.CP, "pp·cp", c.PP*c.CP),
			"the dense grid tp·pp·cp = %d·%d·%d = %d does not tile the world of %d GPUs (%d nodes × %d); Megatron raises \"world_size (%d) is not divisible by %d\"",
			c.TP, c.PP, c.CP, dense, world, c.Nodes, c.GPUsPerNode, world, dense)
	}
	if !eok || world%expert != 0 {
		path := "parallel.ep"
		if c.EP == 1 {
			path = "parallel.etp"
		}
		ds.Errorf(at(path), path, "layout-grid-does-not-tile",
			divisorHint("ep", world, c.ETP*c.PP, "etp·pp", c.ETP*c.PP),
			"the expert grid etp·ep·pp = %d·%d·%d = %d does not tile the world of %d GPUs (%d nodes × %d); Megatron raises \"world_size (%d) is not divisible by expert_tensor_model_pipeline_parallel size (%d)\"",
			c.ETP, c.EP, c.PP, expert, world, c.Nodes, c.GPUsPerNode, world, expert)
	}
	if ds.HasErrors() {
		return nil, ds
	}

	denseSizes := map[string]int{AxisTP: c.TP, AxisCP: c.CP, AxisEP: 1, AxisDP: world / dense, AxisPP: c.PP}
	expertSizes := map[string]int{AxisTP: c.ETP, AxisCP: 1, AxisEP: c.EP, AxisDP: world / expert, AxisPP: c.PP}
	full, ok := completeOrder(axes, c.Order, denseSizes, expertSizes, at(orderPath), &ds)
	if !ok {
		return nil, ds
	}

	l := &Layout{
		World:        world,
		Nodes:        c.Nodes,
		GPUsPerNode:  c.GPUsPerNode,
		NVLinkDomain: c.NVLinkDomain,
		Order:        strings.Join(full, "-"),
		Dense:        newGrid("dense", full, denseSizes),
		Expert:       newGrid("expert", full, expertSizes),
	}
	l.checkMegatronAsserts(c, at, &ds)
	l.MegatronOrder = l.megatronOrder(c, full, denseSizes, expertSizes)
	if l.MegatronOrder == "" {
		ds.Warnf(at(orderPath), orderPath, "order-not-megatron-mapping",
			"use \""+DefaultOrder+"\" or \""+PPDPOrder+"\"",
			"parallel.order %q gives groups that neither %q nor %q (--use-tp-pp-dp-mapping) gives, and Megatron's training scripts can only select those two; launch.json lists the groups of %q",
			c.Order, DefaultOrder, PPDPOrder, l.Order)
	}
	l.checkDomain(c, at, &ds)

	l.EmbeddingStages = []int{0}
	if c.PP > 1 && (c.TieEmbeddings || c.MTPLayers > 0) {
		l.EmbeddingStages = append(l.EmbeddingStages, c.PP-1)
	}
	fam := map[string]*Family{}
	for _, f := range []struct{ name, grid, token string }{
		{"dp-cp", "dense", "dp-cp"}, {"dp", "dense", "dp"}, {"cp", "dense", "cp"},
		{"tp-pp", "dense", "tp-pp"}, {"tp", "dense", "tp"}, {"pp", "dense", "pp"},
		{"tp-dp-cp", "dense", "tp-dp-cp"}, {"tp-dp", "dense", "tp-dp"}, {"tp-cp", "dense", "tp-cp"},
		{"ep", "expert", "ep"}, {"etp", "expert", "tp"}, {"etp-ep", "expert", "tp-ep"},
		{"etp-ep-pp", "expert", "tp-ep-pp"}, {"edp", "expert", "dp"},
	} {
		g := l.Dense
		if f.grid == "expert" {
			g = l.Expert
		}
		fam[f.name] = newFamily(f.name, g, f.token)
	}
	fam["embd"] = newStageFamily("embd", fam["pp"], l.EmbeddingStages)
	fam["pos_embd"] = newStageFamily("pos_embd", fam["pp"], []int{0})
	for _, name := range FamilyNames {
		l.families = append(l.families, fam[name])
		l.Summaries = append(l.Summaries, l.summarize(fam[name]))
	}
	return l, ds
}

// checkMegatronAsserts reports the two consistency asserts of
// initialize_model_parallel (rules W4 and W5 of notes/megatron-rules.md). The
// groups are well defined either way, so the layout is still returned.
func (l *Layout) checkMegatronAsserts(c Config, at diag.Locator, ds *diag.List) {
	dp, edp := l.Dense.Axis(AxisDP).Size, l.Expert.Axis(AxisDP).Size
	if !strings.HasSuffix(c.Order, AxisPP) && c.PP > 1 && edp != dp {
		ds.Errorf(at(orderPath), orderPath, "order-expert-dp-mismatch",
			fmt.Sprintf("with pp last (%q) any edp works; otherwise make etp·ep = tp·cp (now %d·%d = %d, %d·%d = %d)",
				DefaultOrder, c.ETP, c.EP, c.ETP*c.EP, c.TP, c.CP, c.TP*c.CP),
			"parallel.order %q does not end in pp and pp = %d, so Megatron needs the expert data-parallel size (%d) to equal the data-parallel size (%d): \"When not using pp-last rank ordering, the data parallel size of the attention and moe layers must be the same\"",
			c.Order, c.PP, edp, dp)
		return
	}
	if c.PP > 1 && l.Dense.Axis(AxisPP).Stride != l.Expert.Axis(AxisPP).Stride {
		ds.Errorf(at(orderPath), orderPath, "order-pp-groups-differ",
			fmt.Sprintf("put pp last (%q), or make the axes left of pp as large on both grids", DefaultOrder),
			"with parallel.order %q the pipeline groups of the dense grid (stride %d) and of the expert grid (stride %d) differ; Megatron asserts \"Pipeline parallel groups are expected to be the same for Non-Expert and Expert part\"",
			c.Order, l.Dense.Axis(AxisPP).Stride, l.Expert.Axis(AxisPP).Stride)
	}
}

func (l *Layout) megatronOrder(c Config, full []string, dense, expert map[string]int) string {
	joined := strings.Join(full, "-")
	if joined == DefaultOrder || joined == PPDPOrder {
		return joined
	}
	for _, o := range []string{DefaultOrder, PPDPOrder} {
		axes := strings.Split(o, "-")
		if newGrid("dense", axes, dense).effective() == l.Dense.effective() &&
			newGrid("expert", axes, expert).effective() == l.Expert.effective() {
			return o
		}
	}
	return ""
}

// checkDomain warns when NVLink domains and nodes do not nest.
func (l *Layout) checkDomain(c Config, at diag.Locator, ds *diag.List) {
	d, g := c.NVLinkDomain, c.GPUsPerNode
	if d%g != 0 && g%d != 0 {
		ds.Warnf(at("cluster.nvlink_domain"), "cluster.nvlink_domain", "layout-nvlink-domain-misaligned",
			fmt.Sprintf("use a multiple or a divisor of gpus_per_node (%d)", g),
			"cluster.nvlink_domain = %d is neither a multiple nor a divisor of gpus_per_node = %d, so some node straddles two NVLink domains; parc takes domains as consecutive blocks of %d ranks",
			d, g, d)
	}
}

func (l *Layout) summarize(f *Family) FamilySummary {
	s := FamilySummary{Name: f.Name, Grid: f.Grid, Size: f.Size, Count: f.Count, Link: LinkNVLink, MaxNodesPerGroup: 1}
	buf := make([]int, 0, f.Size)
	for g := range f.Count {
		buf = f.AppendGroup(buf[:0], g)
		nodes, prev := 1, buf[0]/l.GPUsPerNode
		for _, r := range buf[1:] {
			if n := r / l.GPUsPerNode; n != prev {
				nodes++
				prev = n
			}
		}
		if nodes > 1 {
			s.GroupsLeavingNode++
		}
		s.MaxNodesPerGroup = max(s.MaxNodesPerGroup, nodes)
		if buf[0]/l.NVLinkDomain != buf[len(buf)-1]/l.NVLinkDomain {
			s.GroupsLeavingDomain++
		}
	}
	if s.GroupsLeavingDomain > 0 {
		s.Link = LinkNetwork
	}
	return s
}

// Families returns the families in FamilyNames order.
func (l *Layout) Families() []*Family { return l.families }

// Family returns the named family, or nil.
func (l *Layout) Family(name string) *Family {
	for _, f := range l.families {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// SummaryOf returns the summary of the named family (zero value if unknown).
func (l *Layout) SummaryOf(name string) FamilySummary {
	for _, s := range l.Summaries {
		if s.Name == name {
			return s
		}
	}
	return FamilySummary{}
}

// Groups materialises every family: name → groups. At 131,072 ranks this is
// about 2M ints; targets that can stream should use Families instead.
func (l *Layout) Groups() map[string][][]int {
	out := make(map[string][][]int, len(l.families))
	for _, f := range l.families {
		out[f.Name] = f.Groups()
	}
	return out
}

// Placement returns where rank runs (block distribution).
func (l *Layout) Placement(rank int) Placement {
	local := rank % l.GPUsPerNode
	return Placement{Node: rank / l.GPUsPerNode, LocalRank: local, GPU: local, Domain: rank / l.NVLinkDomain}
}

// Coords returns rank's coordinates on both grids.
func (l *Layout) Coords(rank int) Coords {
	return Coords{
		TP:  l.Dense.Coord(rank, AxisTP),
		CP:  l.Dense.Coord(rank, AxisCP),
		DP:  l.Dense.Coord(rank, AxisDP),
		PP:  l.Dense.Coord(rank, AxisPP),
		ETP: l.Expert.Coord(rank, AxisTP),
		EP:  l.Expert.Coord(rank, AxisEP),
		EDP: l.Expert.Coord(rank, AxisDP),
	}
}

// mul multiplies positive ints, reporting overflow.
func mul(xs ...int) (int, bool) {
	p := 1
	for _, x := range xs {
		if x < 1 || p > math.MaxInt/x {
			return 0, false
		}
		p *= x
	}
	return p, true
}

// divisorHint lists the values of axis that tile a world of w GPUs when the
// other factors multiply to rest.
func divisorHint(axis string, w, rest int, restName string, restVal int) string {
	if rest < 1 || w%rest != 0 {
		return fmt.Sprintf("the world of %d GPUs must be a multiple of %s (%d): change the degrees or the number of nodes", w, restName, restVal)
	}
	var vals []string
	q := w / rest
	for v := 1; v <= q && len(vals) < 12; v++ {
		if q%v == 0 {
			vals = append(vals, strconv.Itoa(v))
		}
	}
	return fmt.Sprintf("with %s = %d, %s must divide %d: one of %s", restName, restVal, axis, q, strings.Join(vals, ", "))
}

func itoa(i int) string { return strconv.Itoa(i) }
