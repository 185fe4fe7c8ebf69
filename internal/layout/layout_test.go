package layout

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"parc.dev/parc/internal/spec"
)

// referenceGroups is a direct transcription of the algorithm of
// generate_masked_orthogonal_rank_groups (Megatron-LM's
// megatron/core/parallel_state.py at d98e8a64: prefix products,
// masked/unmasked decomposition, outer loop over group index): an
// independent check on the closed form.
func referenceGroups(world int, sizes []int, mask []bool) [][]int {
	prefix := func(a []int) []int {
		r := []int{1}
		for _, v := range a {
			r = append(r, r[len(r)-1]*v)
		}
		return r
	}
	stride := prefix(sizes)
	var mShape, uShape, mStride, uStride []int
	for i, s := range sizes {
		if mask[i] {
			mShape, mStride = append(mShape, s), append(mStride, stride[i])
		} else {
			uShape, uStride = append(uShape, s), append(uStride, stride[i])
		}
	}
	decompose := func(index int, shape []int) []int {
		st := prefix(shape)
		out := make([]int, len(shape))
		for i := range shape {
			out[i] = index / st[i] % shape[i]
		}
		return out
	}
	dot := func(a, b []int) int {
		s := 0
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	size := prefix(mShape)[len(mShape)]
	var out [][]int
	for g := range world / size {
		gi := decompose(g, uShape)
		var ranks []int
		for r := range size {
			ranks = append(ranks, dot(decompose(r, mShape), mStride)+dot(gi, uStride))
		}
		out = append(out, ranks)
	}
	return out
}

func gridSizesMask(g Grid, token string) ([]int, []bool) {
	in := strings.Split(token, "-")
	var sizes []int
	var mask []bool
	for _, a := range g.Axes {
		sizes = append(sizes, a.Size)
		mask = append(mask, slices.Contains(in, a.Name))
	}
	return sizes, mask
}

// randomConfig draws degrees that tile a world of at most maxWorld GPUs.
func randomConfig(r *rand.Rand, maxWorld int) Config {
	pick := func() int { return []int{1, 1, 2, 2, 3, 4, 8}[r.IntN(7)] }
	for {
		c := Config{TP: pick(), PP: pick(), CP: pick(), EP: pick(), ETP: pick(),
			TieEmbeddings: r.IntN(2) == 0, MTPLayers: r.IntN(2)}
		dp := pick()
		world := c.TP * c.PP * c.CP * dp
		if world > maxWorld || world%(c.ETP*c.EP*c.PP) != 0 {
			continue
		}
		axes := slices.Clone(Axes)
		r.Shuffle(len(axes), func(i, j int) { axes[i], axes[j] = axes[j], axes[i] })
		c.Order = strings.Join(axes, "-")
		gpn := []int{1, 2, 4, 8}[r.IntN(4)]
		for world%gpn != 0 {
			gpn /= 2
		}
		c.GPUsPerNode, c.Nodes = gpn, world/gpn
		c.NVLinkDomain = gpn * []int{1, 1, 2, 3}[r.IntN(4)]
		return c
	}
}

// TestFamiliesProperties checks, on random configurations and orders, that
// every family (but embd and pos_embd) partitions the world into Count groups
// of Size ranks, ascending, sorted by first rank, equal to the reference
// algorithm, and consistent with Locate and the rank coordinates.
func TestFamiliesProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		c := randomConfig(r, 512)
		l, ds := New(c)
		if l == nil {
			t.Fatalf("%+v: %v", c, ds)
		}
		for _, f := range l.Families() {
			groups := f.Groups()
			if len(groups) != f.Count {
				t.Fatalf("%+v %s: %d groups, Count %d", c, f.Name, len(groups), f.Count)
			}
			seen := make([]bool, l.World)
			for gi, g := range groups {
				if len(g) != f.Size {
					t.Fatalf("%s group %d has %d ranks, Size %d", f.Name, gi, len(g), f.Size)
				}
				if !slices.IsSorted(g) || (gi > 0 && groups[gi-1][0] >= g[0]) {
					t.Fatalf("%s: groups not ascending: %v", f.Name, groups)
				}
				for i, rank := range g {
					if seen[rank] {
						t.Fatalf("%s: rank %d twice", f.Name, rank)
					}
					seen[rank] = true
					if gg, ii, ok := f.Locate(rank); !ok || gg != gi || ii != i {
						t.Fatalf("%s: Locate(%d) = %d,%d,%v want %d,%d", f.Name, rank, gg, ii, ok, gi, i)
					}
				}
			}
			if f.Token == "" {
				continue // embd / pos_embd cover some stages only
			}
			if slices.Contains(seen, false) {
				t.Fatalf("%s does not cover the world", f.Name)
			}
			g := l.Dense
			if f.Grid == "expert" {
				g = l.Expert
			}
			sizes, mask := gridSizesMask(g, f.Token)
			if want := referenceGroups(l.World, sizes, mask); !reflect.DeepEqual(groups, want) {
				t.Fatalf("%+v %s:\n got %v\nwant %v", c, f.Name, groups, want)
			}
			// Members of a group agree on every axis outside the token.
			for _, grp := range groups {
				for _, a := range g.Axes {
					if slices.Contains(strings.Split(f.Token, "-"), a.Name) {
						continue
					}
					for _, rank := range grp {
						if g.Coord(rank, a.Name) != g.Coord(grp[0], a.Name) {
							t.Fatalf("%s: ranks %d and %d differ on %s", f.Name, rank, grp[0], a.Name)
						}
					}
				}
			}
		}
		// embd / pos_embd pick stages of each pp group.
		pp := l.Family("pp").Groups()
		for i, g := range l.Family("embd").Groups() {
			want := []int{pp[i][0]}
			if c.PP > 1 && (c.TieEmbeddings || c.MTPLayers > 0) {
				want = append(want, pp[i][c.PP-1])
			}
			if !slices.Equal(g, want) {
				t.Fatalf("embd %d = %v want %v", i, g, want)
			}
		}
		for i, g := range l.Family("pos_embd").Groups() {
			if !slices.Equal(g, pp[i][:1]) {
				t.Fatalf("pos_embd %d = %v", i, g)
			}
		}
	}
}

// TestCoordsOfficialOrders checks the rank → coordinate formulas of
// by RankGenerator for both official orders.
func TestCoordsOfficialOrders(t *testing.T) {
	tp, cp, pp, ep, etp := 2, 2, 3, 4, 1
	world := 48 // dp = 4, edp = 4
	dp, edp := world/(tp*cp*pp), world/(etp*ep*pp)
	for _, order := range []string{spec.OrderDefault, spec.OrderPPDP} {
		l, ds := New(Config{Nodes: 6, GPUsPerNode: 8, TP: tp, PP: pp, CP: cp, EP: ep, ETP: etp, Order: order})
		if l == nil {
			t.Fatal(ds)
		}
		for r := range world {
			want := Coords{TP: r % tp, CP: r / tp % cp, ETP: r % etp, EP: r / etp % ep}
			if order == spec.OrderDefault {
				want.DP = r / (tp * cp) % dp
				want.PP = r / (tp * cp * dp)
				want.EDP = r / (etp * ep) % edp
			} else {
				want.PP = r / (tp * cp) % pp
				want.DP = r / (tp * cp * pp)
				want.EDP = r / (etp * ep * pp)
			}
			if got := l.Coords(r); got != want {
				t.Fatalf("%s rank %d: %+v want %+v", order, r, got, want)
			}
		}
	}
}

// TestPlacementNVL72 lays 36 four-GPU nodes (two NVL72 domains) out with
// tp 4, pp 2: pipeline neighbours are 72 ranks apart, so every pp group
// crosses domains; a dp group (stride 4, 18 ranks) stays in its domain but
// spans 18 nodes.
func TestPlacementNVL72(t *testing.T) {
	l, ds := New(Config{Nodes: 36, GPUsPerNode: 4, NVLinkDomain: 72, TP: 4, PP: 2, CP: 1, EP: 1, Order: spec.OrderDefault})
	if l == nil || ds != nil {
		t.Fatal(ds)
	}
	if p := l.Placement(77); p != (Placement{Node: 19, LocalRank: 1, GPU: 1, Domain: 1}) {
		t.Fatalf("Placement(77) = %+v", p)
	}
	want := map[string]FamilySummary{
		"tp":       {Name: "tp", Grid: "dense", Size: 4, Count: 36, Link: LinkNVLink, MaxNodesPerGroup: 1},
		"pp":       {Name: "pp", Grid: "dense", Size: 2, Count: 72, Link: LinkNetwork, GroupsLeavingNode: 72, GroupsLeavingDomain: 72, MaxNodesPerGroup: 2},
		"dp":       {Name: "dp", Grid: "dense", Size: 18, Count: 8, Link: LinkNVLink, GroupsLeavingNode: 8, MaxNodesPerGroup: 18},
		"tp-dp":    {Name: "tp-dp", Grid: "dense", Size: 72, Count: 2, Link: LinkNVLink, GroupsLeavingNode: 2, MaxNodesPerGroup: 18},
		"tp-pp":    {Name: "tp-pp", Grid: "dense", Size: 8, Count: 18, Link: LinkNetwork, GroupsLeavingNode: 18, GroupsLeavingDomain: 18, MaxNodesPerGroup: 2},
		"pos_embd": {Name: "pos_embd", Grid: "dense", Size: 1, Count: 72, Link: LinkNVLink, MaxNodesPerGroup: 1},
	}
	for name, w := range want {
		if got := l.SummaryOf(name); got != w {
			t.Errorf("%s: %+v\nwant %+v", name, got, w)
		}
	}
}

// TestSummariesBruteForce recounts node/domain crossings with sets.
func TestSummariesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		c := randomConfig(r, 256)
		l, _ := New(c)
		for _, f := range l.Families() {
			s := l.SummaryOf(f.Name)
			leaveNode, leaveDom, maxNodes, uneven := 0, 0, 0, 0
			for _, g := range f.Groups() {
				nodes, doms := map[int]bool{}, map[int]int{}
				for _, rank := range g {
					p := l.Placement(rank)
					nodes[p.Node] = true
					doms[p.Domain]++
				}
				if len(nodes) > 1 {
					leaveNode++
				}
				if len(doms) > 1 {
					leaveDom++
					if n := slices.Collect(maps.Values(doms)); slices.Min(n) != slices.Max(n) {
						uneven++
					}
				}
				maxNodes = max(maxNodes, len(nodes))
			}
			link := LinkNVLink
			if leaveDom > 0 {
				link = LinkNetwork
			}
			if s.GroupsLeavingNode != leaveNode || s.GroupsLeavingDomain != leaveDom || s.MaxNodesPerGroup != maxNodes || s.Link != link || s.GroupsSplitUnevenly != uneven {
				t.Fatalf("%+v %s: %+v; brute force %d %d %d %s %d", c, f.Name, s, leaveNode, leaveDom, maxNodes, link, uneven)
			}
		}
	}
}

// TestErrors: New refuses what Megatron's RankGenerator and
// initialize_model_parallel refuse, with their messages. (Through parc vet a
// user never reaches these: internal/check reports each rule at the user's
// field first.)
func TestErrors(t *testing.T) {
	base := Config{Nodes: 2, GPUsPerNode: 8, TP: 2, PP: 2, CP: 1, EP: 1, Order: spec.OrderDefault}
	cases := []struct {
		name string
		mod  func(*Config)
		want []string // substrings of the error; none: a layout
		// layout: the groups come with the error (Megatron's asserts only)
		layout bool
	}{
		{"ok", func(c *Config) {}, nil, false},
		{"unknown", func(c *Config) { c.Order = "tp-xp-dp-pp" }, []string{`unknown axes "xp"`}, false},
		{"upper case", func(c *Config) { c.Order = "TP-CP-EP-DP-PP" }, []string{`unknown axes "TP"`}, false},
		{"empty", func(c *Config) { c.Order = "" }, []string{`unknown axes ""`}, false},
		{"empty axis", func(c *Config) { c.Order = "tp--dp-pp" }, []string{`unknown axes ""`}, false},
		{"repeated", func(c *Config) { c.Order = "tp-dp-pp-tp" }, []string{`names "tp" more than once`}, false},
		{"unknown and repeated", func(c *Config) { c.Order = "tp-tp-gtp" }, []string{`"gtp"`, `"tp" more than once`}, false},
		{"missing pp", func(c *Config) { c.Order = "tp-cp-ep-dp" }, []string{"leaves out the axis pp", "haven'tspecified the order"}, false},
		{"missing cp and ep", func(c *Config) { c.CP, c.EP, c.ETP, c.Order = 2, 2, 1, "tp-dp-pp" }, []string{"the axis ep", "the axis cp"}, false},
		{"missing axes of size 1", func(c *Config) { c.Order = "tp-dp-pp" }, nil, false},
		{"missing tp of size 1", func(c *Config) { c.TP, c.Order = 1, "dp-pp" }, nil, false},
		{"missing etp", func(c *Config) { c.TP, c.ETP, c.EP, c.Order = 1, 2, 2, "ep-dp-pp" }, []string{"etp = 2"}, false},
		{"dense does not tile", func(c *Config) { c.TP, c.ETP = 3, 1 }, []string{"world_size (16) is not divisible by 6"}, false},
		{"both do not tile", func(c *Config) { c.TP = 3 }, []string{"dense grid", "expert grid"}, false},
		{"expert does not tile", func(c *Config) { c.EP, c.ETP = 3, 1 }, []string{"expert_tensor_model_pipeline_parallel size (6)"}, false},
		{"zero degree", func(c *Config) { c.PP = 0 }, []string{"pp is 0"}, false},
		{"zero nodes and bad order", func(c *Config) { c.Nodes, c.Order = 0, "x" }, []string{"nodes is 0", `"x"`}, false},
		{"huge world", func(c *Config) { c.Nodes, c.GPUsPerNode = 1<<40, 1<<30 }, []string{"more ranks than parc lays out"}, false},
		{"pp-dp with edp != dp", func(c *Config) { c.EP, c.Order = 2, spec.OrderPPDP }, []string{"When not using pp-last rank ordering"}, true},
		{"pp groups differ", func(c *Config) { c.TP, c.EP, c.ETP, c.Order = 2, 2, 4, "tp-pp-cp-ep-dp" }, []string{"When not using pp-last rank ordering"}, true},
		{"pp groups differ (edp == dp)", func(c *Config) { c.EP, c.ETP, c.Order = 2, 1, "tp-pp-cp-ep-dp" }, []string{"Pipeline parallel groups are expected to be the same"}, true},
		{"non-Megatron order", func(c *Config) { c.Order = "dp-tp-cp-ep-pp" }, nil, false},
		{"misaligned domain", func(c *Config) { c.NVLinkDomain = 12 }, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mod(&c)
			l, err := New(c)
			if len(tc.want) == 0 {
				if l == nil || err != nil {
					t.Fatalf("no layout: %v", err)
				}
				return
			}
			if (l != nil) != tc.layout || err == nil {
				t.Fatalf("layout %v, error %v", l != nil, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestMegatronOrder(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{TP: 2, PP: 2, Order: spec.OrderDefault}, spec.OrderDefault},
		{Config{TP: 2, PP: 2, Order: spec.OrderPPDP}, spec.OrderPPDP},
		{Config{TP: 2, PP: 2, Order: "tp-dp-pp"}, spec.OrderDefault},       // cp, ep of size 1 appended
		{Config{TP: 2, PP: 2, Order: "tp-pp-dp"}, spec.OrderPPDP},          // the same for pp-dp
		{Config{TP: 2, PP: 1, Order: "tp-cp-ep-pp-dp"}, spec.OrderPPDP},    // written as such
		{Config{TP: 2, PP: 1, Order: "pp-tp-cp-ep-dp"}, spec.OrderDefault}, // pp = 1: same groups as the default
		{Config{TP: 2, PP: 2, Order: "pp-tp-cp-ep-dp"}, ""},                // pp innermost
		{Config{TP: 2, PP: 2, CP: 2, Order: "tp-dp-cp-ep-pp"}, ""},         // cp outside dp
		{Config{TP: 1, PP: 2, CP: 2, Order: "cp-ep-tp-dp-pp"}, spec.OrderDefault},
	} {
		c := tc.c
		c.Nodes, c.GPUsPerNode = 2, 8
		if c.CP == 0 {
			c.CP = 1
		}
		c.EP = 1
		l, err := New(c)
		if l == nil {
			t.Fatal(err)
		}
		if l.MegatronOrder != tc.want {
			t.Errorf("%+v: MegatronOrder %q want %q", c, l.MegatronOrder, tc.want)
		}
	}
}

func TestOrderCompleted(t *testing.T) {
	l, _ := New(Config{Nodes: 1, GPUsPerNode: 8, TP: 1, PP: 2, CP: 1, EP: 1, Order: "dp-pp"})
	// Megatron appends left-out axes in its name_to_size order: tp, pp, dp, ep, cp.
	if l.Order != "dp-pp-tp-ep-cp" {
		t.Fatalf("Order %q", l.Order)
	}
}

func TestBuildFromSpec(t *testing.T) {
	etp := 1
	s := &spec.Spec{
		Model:    spec.Model{TieEmbeddings: false, MTPLayers: 1, Layers: 4, Hidden: 64, Heads: 4, Vocab: 1000, MakeVocabDivisibleBy: 128},
		Train:    spec.Train{MicroBatch: 1, GlobalBatch: 8},
		Cluster:  spec.Cluster{Nodes: 2, GPUsPerNode: 8, NVLinkDomain: 8},
		Parallel: spec.Parallel{TP: 2, PP: 2, CP: 2, EP: 4, ETP: &etp, Order: spec.OrderDefault},
	}
	l, err := Build(s, spec.Derive(s))
	if l == nil || err != nil {
		t.Fatal(err)
	}
	// World 16, tp 2, cp 2, pp 2, ep 4, etp 1; MTP puts the last stage in embd.
	if got := l.Family("etp-ep-pp").Groups(); !reflect.DeepEqual(got, [][]int{{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}}) {
		t.Fatalf("etp-ep-pp %v", got)
	}
	if got := l.Family("embd").Groups()[0]; !slices.Equal(got, []int{0, 8}) {
		t.Fatalf("embd %v", got)
	}
	s.Parallel.Order = "tp-xx"
	if _, err = Build(s, spec.Derive(s)); err == nil {
		t.Fatal("a bad order laid out")
	}
}

// A pipeline layout may put the MTP layer on a rank before the last (in the
// last virtual stage of a rank that is not the first): pretrain_gpt.py's
// get_embedding_ranks then takes that rank (get_mtp_ranks reads the layout),
// and the last rank only when the output layer shares the embedding. Run on
// Megatron-LM d98e8a64 with the arguments parc's target renders for the first
// case (16 GPUs, tp 2, pp 4, untied, layout Et*4|t*4|t*4m|L), it gives
// [0, 8] for the pipeline group [0, 4, 8, 12] and [1, 9] for [1, 5, 9, 13].
func TestEmbeddingGroupsFollowTheMTPLayer(t *testing.T) {
	layout := "Et*4|t*4|t*4m|L"
	for _, tc := range []struct {
		tied bool
		want [][]int
	}{
		{false, [][]int{{0, 8}, {1, 9}}},
		{true, [][]int{{0, 8, 12}, {1, 9, 13}}},
	} {
		s := &spec.Spec{
			Model:    spec.Model{TieEmbeddings: tc.tied, MTPLayers: 1, Layers: 12, Hidden: 64, Heads: 4, Vocab: 1000, MakeVocabDivisibleBy: 128},
			Train:    spec.Train{MicroBatch: 1, GlobalBatch: 8},
			Cluster:  spec.Cluster{Nodes: 2, GPUsPerNode: 8, NVLinkDomain: 8},
			Parallel: spec.Parallel{TP: 2, PP: 4, VPP: 1, CP: 1, EP: 1, Order: spec.OrderDefault, Layout: &layout},
		}
		l, err := Build(s, spec.Derive(s))
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Family("embd").Groups()[:2]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("tied %v: embd %v, want %v (Megatron's get_embedding_ranks)", tc.tied, got, tc.want)
		}
	}
}
