package layout

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	// MTPStages are the pipeline ranks a pipeline layout places the MTP
	// layers on (Megatron's get_mtp_ranks); nil: the last rank, as
	// without a layout.
	MTPStages []int
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
	// build exactly these groups: spec.OrderDefault, or spec.OrderPPDP (pass
	// --use-tp-pp-dp-mapping). It is the order of the config when that is one
	// of the two, otherwise the one (default first) whose groups are the
	// same; empty when neither is.
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
	// GroupsSplitUnevenly counts the groups that leave their NVLink domain
	// with different numbers of members in the domains they touch (a
	// group of 64 consecutive ranks over domains of 72: 8 in one, 56 in
	// the next).
	GroupsSplitUnevenly int `json:"groups_split_unevenly"`
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

// MaxWorld is the largest world New lays out (spec.MaxWorld).
const MaxWorld = spec.MaxWorld

// FamilyNames lists the families in the order Megatron-Core creates them
// (initialize_model_parallel).
var FamilyNames = []string{
	"dp-cp", "dp", "cp", "tp-pp", "tp", "pp", "embd", "pos_embd",
	"tp-dp-cp", "tp-dp", "tp-cp",
	"ep", "etp", "etp-ep", "etp-ep-pp", "edp",
}

// ConfigOf is the layout configuration of a spec.
func ConfigOf(s *spec.Spec, d spec.Derived) Config {
	etp := d.ETP
	if etp == 0 && s.Parallel.ETP != nil {
		etp = *s.Parallel.ETP
	}
	return Config{
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
		MTPStages:     mtpStages(s),
	}
}

// mtpStages are the pipeline ranks whose stages in parallel.layout hold MTP
// layers (m), or nil without a layout or MTP.
func mtpStages(s *spec.Spec) []int {
	p := s.Parallel
	l, vpp, ok := p.LayoutStages()
	if s.Model.MTPLayers == 0 || !ok {
		return nil
	}
	var ranks []int
	for r := range p.PP {
		for v := range vpp {
			if l.Stage(p.PP, r, v).Count('m') > 0 {
				ranks = append(ranks, r)
				break
			}
		}
	}
	return ranks
}

// Build lays out the ranks of a spec (New on ConfigOf). The layout stage
// reports nothing itself: every spec that reaches it has passed
// internal/check, which reports at the user's fields each rule New refuses
// (the grids, the order, the world's size); an error here is a bug.
func Build(s *spec.Spec, d spec.Derived) (*Layout, error) {
	return New(ConfigOf(s, d))
}

// New lays out the ranks for c the way Megatron-Core's RankGenerator does,
// for any order string (with the axes it leaves out appended, as
// RankGenerator appends them). It returns an error, with Megatron's own
// message where Megatron raises, when c cannot be laid out: a degree below
// 1, an order that is not a list of distinct axes or leaves out an axis
// larger than 1, a grid that does not tile the world, one of
// initialize_model_parallel's consistency asserts (then the layout is
// returned too: RankGenerator builds its groups all the same), or more than
// MaxWorld GPUs.
func New(c Config) (*Layout, error) {
	c = c.withDefaults()
	axes, err := ParseOrder(c.Order)
	if err = errors.Join(c.validate(), err); err != nil {
		return nil, err
	}
	world, dp, edp, err := c.grids()
	if err != nil {
		return nil, err
	}
	denseSizes := map[string]int{AxisTP: c.TP, AxisCP: c.CP, AxisEP: 1, AxisDP: dp, AxisPP: c.PP}
	expertSizes := map[string]int{AxisTP: c.ETP, AxisCP: 1, AxisEP: c.EP, AxisDP: edp, AxisPP: c.PP}
	full, err := completeOrder(axes, c.Order, denseSizes, expertSizes)
	if err != nil {
		return nil, err
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
	l.MegatronOrder = l.megatronOrder(full, denseSizes, expertSizes)
	l.buildFamilies(c)
	// The groups are well defined even where initialize_model_parallel
	// asserts (RankGenerator builds them): return both.
	return l, l.megatronAsserts(c)
}

// withDefaults fills ETP (= TP) and the NVLink domain (= the node).
func (c Config) withDefaults() Config {
	if c.ETP == 0 {
		c.ETP = c.TP
	}
	if c.NVLinkDomain == 0 {
		c.NVLinkDomain = c.GPUsPerNode
	}
	return c
}

// validate reports degrees below 1.
func (c Config) validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		v    int
	}{
		{"nodes", c.Nodes}, {"gpus_per_node", c.GPUsPerNode}, {"nvlink_domain", c.NVLinkDomain},
		{"tp", c.TP}, {"pp", c.PP}, {"cp", c.CP}, {"ep", c.EP}, {"etp", c.ETP},
	} {
		if p.v < 1 {
			errs = append(errs, fmt.Errorf("%s is %d; the layout needs a whole number ≥ 1", p.name, p.v))
		}
	}
	return errors.Join(errs...)
}

// grids checks that both grids tile the world (spec.Replicas) and returns
// the world size and the two data-parallel sizes.
func (c Config) grids() (world, dp, edp int, err error) {
	if c.Nodes > MaxWorld/c.GPUsPerNode {
		return 0, 0, 0, fmt.Errorf("%d nodes × %d GPUs is more ranks than parc lays out (%d)", c.Nodes, c.GPUsPerNode, MaxWorld)
	}
	world = c.Nodes * c.GPUsPerNode
	var errs []error
	dp, ok := spec.Replicas(world, c.TP, c.PP, c.CP)
	if !ok {
		errs = append(errs, fmt.Errorf("the dense grid tp·pp·cp = %d·%d·%d does not tile the world of %d GPUs; Megatron raises \"world_size (%d) is not divisible by %d\"",
			c.TP, c.PP, c.CP, world, world, c.TP*c.PP*c.CP))
	}
	edp, ok = spec.Replicas(world, c.ETP, c.EP, c.PP)
	if !ok {
		errs = append(errs, fmt.Errorf("the expert grid etp·ep·pp = %d·%d·%d does not tile the world of %d GPUs; Megatron raises \"world_size (%d) is not divisible by expert_tensor_model_pipeline_parallel size (%d)\"",
			c.ETP, c.EP, c.PP, world, world, c.ETP*c.EP*c.PP))
	}
	return world, dp, edp, errors.Join(errs...)
}

// megatronAsserts are the two consistency asserts of
// initialize_model_parallel (megatron/core/parallel_state.py).
func (l *Layout) megatronAsserts(c Config) error {
	dp, edp := l.Dense.Axis(AxisDP).Size, l.Expert.Axis(AxisDP).Size
	if !strings.HasSuffix(c.Order, AxisPP) && c.PP > 1 && edp != dp {
		return fmt.Errorf("order %q does not end in pp and pp = %d, so the expert data-parallel size (%d) must equal the data-parallel size (%d): Megatron asserts \"When not using pp-last rank ordering, the data parallel size of the attention and moe layers must be the same\"",
			c.Order, c.PP, edp, dp)
	}
	if c.PP > 1 && l.Dense.Axis(AxisPP).Stride != l.Expert.Axis(AxisPP).Stride {
		return fmt.Errorf("with order %q the pipeline groups of the dense grid (stride %d) and of the expert grid (stride %d) differ; Megatron asserts \"Pipeline parallel groups are expected to be the same for Non-Expert and Expert part\"",
			c.Order, l.Dense.Axis(AxisPP).Stride, l.Expert.Axis(AxisPP).Stride)
	}
	return nil
}

// megatronOrder is the one of Megatron's two orders (default first) that
// builds the same groups, or "".
func (l *Layout) megatronOrder(full []string, dense, expert map[string]int) string {
	joined := strings.Join(full, "-")
	if joined == spec.OrderDefault || joined == spec.OrderPPDP {
		return joined
	}
	for _, o := range []string{spec.OrderDefault, spec.OrderPPDP} {
		axes := strings.Split(o, "-")
		if newGrid("dense", axes, dense).effective() == l.Dense.effective() &&
			newGrid("expert", axes, expert).effective() == l.Expert.effective() {
			return o
		}
	}
	return ""
}

// buildFamilies creates the 16 group families and their summaries.
func (l *Layout) buildFamilies(c Config) {
	// pretrain_gpt.py get_embedding_ranks: the first stage; with more than
	// one, the last when the output layer shares the embedding, and the
	// stages that build MTP layers (get_mtp_ranks: the last, or where the
	// pipeline layout puts them), which use the embedding too.
	embd := []int{0}
	if c.PP > 1 {
		if c.TieEmbeddings {
			embd = append(embd, c.PP-1)
		}
		switch {
		case c.MTPLayers == 0:
		case c.MTPStages == nil:
			embd = append(embd, c.PP-1)
		default:
			embd = append(embd, c.MTPStages...)
		}
	}
	slices.Sort(embd)
	l.EmbeddingStages = slices.Compact(embd)
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
			if !evenOverDomains(buf, l.NVLinkDomain) {
				s.GroupsSplitUnevenly++
			}
		}
	}
	if s.GroupsLeavingDomain > 0 {
		s.Link = LinkNetwork
	}
	return s
}

// evenOverDomains: the ranks of group (ascending) fall in equal numbers in
// every NVLink domain (blocks of domain consecutive ranks) they touch.
func evenOverDomains(group []int, domain int) bool {
	first, run := -1, 0
	for i, r := range group {
		if i > 0 && r/domain != group[i-1]/domain {
			if first < 0 {
				first = run
			} else if run != first {
				return false
			}
			run = 0
		}
		run++
	}
	return first < 0 || run == first
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

func itoa(i int) string { return strconv.Itoa(i) }
