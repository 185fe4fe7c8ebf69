package solve_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/solve"
	"parc.dev/parc/internal/spec"
)

// tiny is a small dense model on a cluster of 8 GPUs (2 nodes of 4), so a
// brute force over every value of every open field stays fast.
const tiny = `
model: {layers: 8, hidden: 256, heads: 8, query_groups: 4, vocab: 1000, activation: "swiglu"}
cluster: {
	nodes: 2
	gpus_per_node: 4
	gpu: {name: "G", memory_gib: %s, bf16_tflops: 100}
	nvlink_gbps: 100
	network_gbps: 10
}
parallel: {%s}
train: {seq_length: 512, micro_batch: %s, global_batch: 16, recompute: %s, iters: 10, distributed_optimizer: true}
`

const tinyMoE = `
model: {
	layers: 8, hidden: 256, heads: 8, vocab: 1000, activation: "swiglu", bias: false
	moe: {experts: 8, topk: 2, ffn_hidden: 128, shared_ffn_hidden: 64}
}
cluster: {
	nodes: 2
	gpus_per_node: 4
	gpu: {name: "G", memory_gib: 80, bf16_tflops: 100}
	nvlink_gbps: 100
	network_gbps: 10
}
parallel: {%s}
train: {seq_length: 512, micro_batch: %s, global_batch: 16, recompute: "none", iters: 10}
`

func loadText(t testing.TB, name, text string) *load.Result {
	t.Helper()
	res, ds := load.Load(load.Source{Path: filepath.Join(t.TempDir(), name), Data: []byte(text)})
	require.NotNil(t, res, "%v", ds)
	require.False(t, ds.HasErrors(), "%v", ds)
	return res
}

// plan is one brute-force result.
type plan struct {
	label string
	step  float64
	model int
	peak  int64
	shape [7]int // tp, cp, pp, ep, etp, vpp, split kind
	split string
	rc    int
	mb    int
	inner int // optimizer sharding: 0 replicated, 1 distributed, 2 fsdp
}

var modes = []string{"none", "selective", "full"}

// recomputeRank orders recomputation choices as parc documents it: none,
// selective with each list of modules (Megatron's default first), full.
func recomputeRank(t spec.Train, lists [][]string) int {
	switch t.Recompute {
	case "none":
		return 0
	case "selective":
		for i, l := range lists {
			if slices.Equal(l, t.RecomputeModules) && (l == nil) == (t.RecomputeModules == nil) {
				return 1 + i
			}
		}
		return 1
	}
	return 1 + max(len(lists), 1)
}

// bruteForce tries every value in values[path] for each open path (a
// degree's values are 1..n, including the ones the rules reject), runs the
// whole compiler on each, and ranks the plans without errors the way parc
// solve documents (a parallel shape's virtual-stage counts and splits then
// folded under the first of them): the plans of one shape and pipeline
// split (tp, cp, pp, ep, etp, vpp, split) by step time (12 significant
// digits), peak memory,
// less recompute, the simpler optimizer sharding, the smaller micro batch,
// the first representing the shape; the shapes within the noise band of
// the fastest first, simplest first (tp·cp·pp, pp, cp, vpp, split kind,
// ep, tp, etp), then the others by step time.
func bruteForce(t *testing.T, res *load.Result, values map[string][]any) []plan {
	t.Helper()
	return foldSplits(rankShapes(bruteForceAll(t, res, values), solve.DefaultNoiseBand))
}

// foldSplits keeps, of the ranked shapes that differ only in their virtual
// stages or pipeline split, the first: parc solve lists distinct parallel
// shapes (tp, cp, pp, ep, etp) and folds a shape's other vpp and splits
// under it as variants.
func foldSplits(ranked []plan) []plan {
	seen := map[[5]int]bool{}
	var out []plan
	for _, p := range ranked {
		k := [5]int(p.shape[:5])
		if !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// bruteForceAll is every plan without errors within the memory headroom,
// unranked.
func bruteForceAll(t *testing.T, res *load.Result, values map[string][]any) []plan {
	t.Helper()
	open := res.Open()
	// Decode once with the first values; vary the Go struct after.
	v := res.Plan
	for _, p := range open {
		v = v.FillPath(cue.ParsePath(p), values[p][0])
	}
	base, ds := res.DecodeValue(v)
	require.NotNil(t, base, "%v", ds)
	var all []plan
	var rec func(i int, s spec.Spec)
	// The pipeline split, when parc chooses it (pp open and no split
	// written): every account_for combination and every first/last stage
	// size, kept when the documented rule allows it.
	implied := slices.Contains(open, "parallel.pp")
	for _, f := range []string{"account_for_embedding", "account_for_loss", "first_stage_layers", "last_stage_layers"} {
		if res.User.LookupPath(cue.ParsePath("parallel." + f)).Exists() {
			implied = false
		}
	}
	L := base.Model.Layers
	type splitKey struct {
		shape  [9]int
		counts string
	}
	kept := map[splitKey]int{} // index into all of the simplest split with these counts
	var leaf func(s spec.Spec)
	// train.recompute_modules, when parc chooses them with an open
	// recompute: every list given, with selective recomputation.
	var lists [][]string
	for _, x := range values["train.recompute_modules"] {
		l, _ := x.([]string)
		lists = append(lists, l)
	}
	withModules := func(s spec.Spec, f func(spec.Spec)) {
		if len(lists) == 0 || s.Train.Recompute != "selective" {
			f(s)
			return
		}
		for _, l := range lists {
			c := s
			c.Train.RecomputeModules = l
			f(c)
		}
	}
	rec = func(i int, s spec.Spec) {
		if i == len(open) {
			if !implied {
				withModules(s, leaf)
				return
			}
			for _, emb := range []bool{false, true} {
				for _, loss := range []bool{false, true} {
					for f := 0; f <= L; f++ {
						for l := 0; l <= L; l++ {
							if !documentedSplit(L, s.Parallel.PP, emb, loss, f, l) {
								continue
							}
							c := s
							c.Parallel.AccountForEmbedding, c.Parallel.AccountForLoss = emb, loss
							c.Parallel.FirstStageLayers, c.Parallel.LastStageLayers = nil, nil
							if f > 0 {
								c.Parallel.FirstStageLayers = &f
							}
							if l > 0 {
								c.Parallel.LastStageLayers = &l
							}
							withModules(c, leaf)
						}
					}
				}
			}
			return
		}
		for _, x := range values[open[i]] {
			c := s
			setField(t, &c, open[i], x)
			rec(i+1, c)
		}
	}
	// parallel.microbatch_group_size, which parc chooses for an
	// interleaved plan when the spec does not write it: every group
	// Megatron accepts (pp ≤ N ≤ M, M mod N 0 or ≥ pp), the smallest of
	// the least step time among those that fit (the default pp written as
	// none).
	groupWritten := res.User.LookupPath(cue.ParsePath("parallel.microbatch_group_size")).Exists()
	// The leaves are collected first, resolved concurrently (resolve is the
	// cost), then recorded in the enumeration's order.
	var leaves []spec.Spec
	leaf = func(s spec.Spec) { leaves = append(leaves, s) }
	// resolved is what the ranking needs of a leaf's plan (not the plan:
	// thousands of layouts held at once cost more in collection than in
	// resolving).
	type resolved struct {
		s       spec.Spec
		ok      bool // no errors, within the memory headroom
		step    float64
		peak    int64
		etp, dp int
	}
	resolveOne := func(s spec.Spec) resolved {
		// The rules' verdict first: the same errors parc vet reports,
		// without the hints it verifies for them (check.Verdict), which
		// most assignments here would pay for nothing.
		if check.Verdict(&s, spec.Derive(&s), diag.NoPos).HasErrors() {
			return resolved{s: s}
		}
		p, ds := compiler.Resolve("plan.cue", &s, diag.NoPos)
		if ds.HasErrors() || float64(p.Estimate.Memory.PerGPUPeakBytes) > solve.DefaultMemoryHeadroom*float64(p.Estimate.Memory.GPUBytes) {
			return resolved{s: s}
		}
		return resolved{s, true, p.Estimate.StepTimeS, p.Estimate.Memory.PerGPUPeakBytes, p.Derived.ETP, p.Derived.DP}
	}
	resolveLeaf := func(s spec.Spec) resolved {
		pp, vpp := s.Parallel.PP, s.Parallel.VPP
		if groupWritten || pp <= 1 || vpp <= 1 {
			return resolveOne(s)
		}
		d := spec.Derive(&s)
		m := s.Train.GlobalBatch / (s.Train.MicroBatch * max(d.DP, 1))
		best, bestStep, bestPlan := -1, 0.0, resolved{}
		for n := pp; n <= m; n++ {
			if r := m % n; r != 0 && r < pp {
				continue
			}
			c := s
			c.Parallel.MicrobatchGroupSize = &n
			r := resolveOne(c)
			if !r.ok {
				continue
			}
			if st := round12(r.step); best < 0 || st < bestStep {
				best, bestStep, bestPlan = n, st, r
			}
		}
		if best > pp {
			return bestPlan
		}
		return resolveOne(s)
	}
	record := func(r resolved) {
		s := r.s
		{
			if !r.ok {
				return
			}
			etp := 0
			if s.Parallel.ETP != nil {
				etp = *s.Parallel.ETP
			}
			par := s.Parallel
			sp := solve.Parallel{TP: par.TP, PP: par.PP, VPP: par.VPP, CP: par.CP, EP: par.EP, ETP: r.etp, DP: r.dp,
				AccountForEmbedding: par.AccountForEmbedding, AccountForLoss: par.AccountForLoss,
				FirstStageLayers: par.FirstStageLayers, LastStageLayers: par.LastStageLayers, MicrobatchGroupSize: par.MicrobatchGroupSize}
			tr := solve.Train{MicroBatch: s.Train.MicroBatch, Recompute: s.Train.Recompute, RecomputeModules: s.Train.RecomputeModules,
				DistributedOptimizer: s.Train.DistributedOptimizer, FSDP: s.Train.FSDP}
			kind := 0
			switch {
			case par.FirstStageLayers != nil || par.LastStageLayers != nil:
				kind = 2
				if par.FirstStageLayers != nil {
					kind++
				}
				if par.LastStageLayers != nil {
					kind++
				}
			default:
				if par.AccountForEmbedding {
					kind++
				}
				if par.AccountForLoss {
					kind++
				}
			}
			inner := 0
			switch {
			case s.Train.FSDP:
				inner = 2
			case s.Train.DistributedOptimizer:
				inner = 1
			}
			label := solve.Label(sp, tr)
			// Two splits that give every pipeline rank the same layers
			// are one: the simplest is kept.
			q := s.Parallel
			k := splitKey{[9]int{par.TP, par.CP, par.PP, par.EP, etp, par.VPP, s.Train.MicroBatch, recomputeRank(s.Train, lists), inner},
				fmt.Sprint(spec.StageLayers(L, q))}
			if j, ok := kept[k]; ok {
				// The simpler split stays; of two equally simple ones
				// (first_stage_layers=5 or last_stage_layers=3 with pp=2),
				// the one that sets the first stage.
				firstOnly := par.FirstStageLayers != nil && par.LastStageLayers == nil
				if all[j].shape[6] < kind || all[j].shape[6] == kind && !firstOnly {
					return
				}
				all[j].label = "" // replaced below
			}
			kept[k] = len(all)
			all = append(all, plan{
				label: label,
				step:  round12(r.step),
				model: par.TP * par.PP * par.CP,
				peak:  r.peak,
				shape: [7]int{par.TP, par.CP, par.PP, par.EP, etp, par.VPP, kind},
				split: fmt.Sprint(par.AccountForEmbedding, par.AccountForLoss, deref(par.FirstStageLayers), deref(par.LastStageLayers)),
				rc:    recomputeRank(s.Train, lists),
				mb:    s.Train.MicroBatch,
				inner: inner,
			})
		}
	}
	rec(0, *base)
	results := concurrently(leaves, resolveLeaf)
	for _, r := range results {
		record(r)
	}
	return slices.DeleteFunc(all, func(p plan) bool { return p.label == "" })
}

// setField sets one open field of s.
func setField(t *testing.T, c *spec.Spec, path string, x any) {
	switch path {
	case "parallel.tp":
		c.Parallel.TP = x.(int)
	case "parallel.pp":
		c.Parallel.PP = x.(int)
	case "parallel.vpp":
		c.Parallel.VPP = x.(int)
	case "parallel.cp":
		c.Parallel.CP = x.(int)
	case "parallel.ep":
		c.Parallel.EP = x.(int)
	case "parallel.etp":
		e := x.(int)
		c.Parallel.ETP = &e
	case "train.micro_batch":
		c.Train.MicroBatch = x.(int)
	case "train.recompute":
		c.Train.Recompute = x.(string)
	case "parallel.account_for_embedding":
		c.Parallel.AccountForEmbedding = x.(bool)
	case "parallel.account_for_loss":
		c.Parallel.AccountForLoss = x.(bool)
	case "parallel.first_stage_layers":
		n := x.(int)
		c.Parallel.FirstStageLayers = &n
	case "parallel.last_stage_layers":
		n := x.(int)
		c.Parallel.LastStageLayers = &n
	case "train.distributed_optimizer":
		c.Train.DistributedOptimizer = x.(bool)
	case "train.fsdp":
		c.Train.FSDP = x.(bool)
	default:
		t.Fatalf("bruteForce: no case for %s", path)
	}
}

// documentedSplit is parc solve's documented family of pipeline splits
// with pp stages: the even split and the accounted ones, and uneven
// first/last stages (not combined with the accounted ones; not both with
// pp = 2) with 3 layers fewer to 1 more than each middle stage.
func documentedSplit(L, pp int, emb, loss bool, f, l int) bool {
	if f == 0 && l == 0 {
		return true
	}
	if emb || loss || pp < 2 {
		return false
	}
	near := func(a, per int) bool { return a >= per-3 && a <= per+1 }
	mid := pp
	if f > 0 {
		mid--
	}
	if l > 0 {
		mid--
	}
	if mid == 0 {
		return false
	}
	middle := L - f - l
	if middle <= 0 || middle%mid != 0 {
		return false
	}
	per := middle / mid
	return (f == 0 || near(f, per)) && (l == 0 || near(l, per))
}

// rankShapes keeps each shape's best plan and orders the shapes as parc
// solve documents.
func rankShapes(all []plan, band float64) []plan {
	best := map[string]plan{}
	for _, p := range all {
		k := fmt.Sprint(p.shape[:6], p.split)
		q, ok := best[k]
		if !ok || cmpPlan(p, q) < 0 {
			best[k] = p
		}
	}
	var out []plan
	fastest := math.Inf(1)
	for _, p := range best {
		out = append(out, p)
		fastest = min(fastest, p.step)
	}
	inBand := func(p plan) bool { return p.step <= fastest*(1+band)*(1+1e-12) }
	slices.SortFunc(out, func(a, b plan) int {
		ia, ib := inBand(a), inBand(b)
		switch {
		case ia && !ib:
			return -1
		case ib && !ia:
			return 1
		case ia:
			return cmp.Or(slices.Compare(simplicity(a), simplicity(b)), cmp.Compare(a.step, b.step), cmp.Compare(a.peak, b.peak), cmp.Compare(a.label, b.label))
		}
		return cmp.Or(cmp.Compare(a.step, b.step), cmp.Compare(a.model, b.model), cmp.Compare(a.peak, b.peak),
			slices.Compare(simplicity(a), simplicity(b)), cmp.Compare(a.label, b.label))
	})
	return out
}

func simplicity(p plan) []int {
	s := p.shape
	return []int{s[0] * s[1] * s[2], s[2], s[1], s[5], s[6], s[3], s[0], s[4]}
}

// cmpPlan orders two plans of one shape.
func cmpPlan(a, b plan) int {
	return cmp.Or(cmp.Compare(a.step, b.step), cmp.Compare(a.peak, b.peak), cmp.Compare(a.rc, b.rc),
		cmp.Compare(a.inner, b.inner), cmp.Compare(a.mb, b.mb))
}

func cmpF(a, b float64) int {
	if a < b {
		return -1
	}
	return 1
}

// round12 is the documented rounding of solve's step times: 12 significant
// digits.
func round12(x float64) float64 {
	if x == 0 {
		return 0
	}
	e := math.Floor(math.Log10(math.Abs(x)))
	scale := math.Pow(10, 11-e)
	return math.Round(x*scale) / scale
}

func upTo(n int) []any {
	var out []any
	for i := 1; i <= n; i++ {
		out = append(out, i)
	}
	return out
}

func ints(xs ...int) []any {
	var out []any
	for _, x := range xs {
		out = append(out, x)
	}
	return out
}

var allModes = []any{"none", "selective", "full"}

// TestSolveMatchesBruteForce: on small specs, parc solve's top K is exactly
// the top K of a brute force that runs the whole compiler on every value of
// every open field — so the rules it prunes with reject nothing vet
// accepts, and the bound never skips a better plan.
func TestSolveMatchesBruteForce(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		values map[string][]any
	}{
		{"dense tp pp vpp mb recompute", fmt.Sprintf(tiny, "80", "tp: int, pp: int, vpp: int", "int", "string"),
			map[string][]any{"parallel.tp": upTo(8), "parallel.pp": upTo(8), "parallel.vpp": upTo(8), "train.micro_batch": upTo(16), "train.recompute": allModes}},
		{"dense tp cp pp, memory-bound", fmt.Sprintf(strings.Replace(tiny, "hidden: 256", "hidden: 1024", 1), "1", "tp: int, cp: int, pp: int", "int", `"none"`),
			map[string][]any{"parallel.tp": upTo(8), "parallel.cp": upTo(8), "parallel.pp": upTo(8), "train.micro_batch": upTo(16)}},
		{"dense constrained", fmt.Sprintf(tiny, "80", "tp: 1 | 2 | 8, pp: >=2, vpp: int", "int", "string"),
			map[string][]any{"parallel.tp": ints(1, 2, 8), "parallel.pp": ints(2, 3, 4, 5, 6, 7, 8), "parallel.vpp": upTo(8), "train.micro_batch": upTo(16), "train.recompute": allModes}},
		{"dense account-for pp", fmt.Sprintf(tiny, "80", "tp: int, pp: int, vpp: int, account_for_embedding: true, account_for_loss: true", "1", `"none"`),
			map[string][]any{"parallel.tp": upTo(8), "parallel.pp": upTo(8), "parallel.vpp": upTo(10)}},
		{"dense uneven pp", fmt.Sprintf(tiny, "80", "tp: int, pp: int, vpp: int, first_stage_layers: 2, last_stage_layers: 2", "1", `"none"`),
			map[string][]any{"parallel.tp": upTo(8), "parallel.pp": upTo(8), "parallel.vpp": upTo(8)}},
		{"dense dp given, pp-dp order", fmt.Sprintf(tiny, "80", `tp: int, cp: int, pp: int, dp: 2, order: "tp-cp-ep-pp-dp"`, "int", `"none"`),
			map[string][]any{"parallel.tp": upTo(8), "parallel.cp": upTo(8), "parallel.pp": upTo(8), "train.micro_batch": upTo(16)}},
		{"moe tp ep etp cp", fmt.Sprintf(tinyMoE, "tp: int, ep: int, etp: int, cp: int, pp: 2", "1"),
			map[string][]any{"parallel.tp": upTo(8), "parallel.ep": upTo(8), "parallel.etp": upTo(8), "parallel.cp": upTo(4)}},
		{"moe ep pp mb", fmt.Sprintf(tinyMoE, "ep: int, pp: int", "int"),
			map[string][]any{"parallel.ep": upTo(8), "parallel.pp": upTo(8), "train.micro_batch": upTo(16)}},
		// The optimizer sharding open: FSDP without the distributed
		// optimizer is counted as the plan with it (duplicate-sharding),
		// and the data-parallel floor (behindDataParallel) skips nothing
		// better.
		{"moe ep pp mb sharding", fmt.Sprintf(strings.Replace(tinyMoE, `recompute: "none"`, `recompute: "none", distributed_optimizer: bool, fsdp: bool`, 1), "ep: int, pp: int", "int"),
			map[string][]any{"parallel.ep": upTo(8), "parallel.pp": upTo(8), "train.micro_batch": upTo(16),
				"train.distributed_optimizer": {false, true}, "train.fsdp": {false, true}}},
		// The same with the overlapped parameter gather set: every plan
		// without a sharded optimizer breaks its rule (shardingRuledOut).
		{"moe sharding, overlap_param_gather", fmt.Sprintf(strings.Replace(tinyMoE, `recompute: "none"`, `recompute: "none", distributed_optimizer: bool, fsdp: bool, overlap_param_gather: true`, 1), "ep: int, pp: int", "int"),
			map[string][]any{"parallel.ep": upTo(8), "parallel.pp": upTo(8), "train.micro_batch": upTo(16),
				"train.distributed_optimizer": {false, true}, "train.fsdp": {false, true}}},
		// recompute open, no modules written: selective with Megatron's
		// default and the recipes' lists the model can use (grouped-GEMM
		// experts: moe_act; no MLA: not mla_up_proj, which check rejects).
		{"moe recompute modules", strings.Replace(strings.Replace(fmt.Sprintf(tinyMoE, "ep: int, pp: 2", "int"), `recompute: "none"`, "recompute: string", 1),
			"shared_ffn_hidden: 64}", "shared_ffn_hidden: 64, grouped_gemm: true}", 1),
			map[string][]any{"parallel.ep": upTo(8), "train.micro_batch": upTo(16), "train.recompute": allModes,
				"train.recompute_modules": {[]string(nil), []string{"moe_act"}, []string{"layernorm", "moe_act"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			matchBruteForce(t, tc.text, tc.values)
		})
	}
}

// matchBruteForce checks that parc solve's top 1, 5 and 1000 of the spec
// text are exactly the brute force's over values (every value the solver
// may give each open field): the same plans in the same order, with the
// same step time and peak memory.
func matchBruteForce(t *testing.T, text string, values map[string][]any) {
	t.Helper()
	res := loadText(t, "plan.cue", text)
	want := bruteForce(t, res, values)
	for _, top := range []int{1, 5, 1000} {
		r, ds := solve.Solve(res, solve.Options{Top: top})
		require.NotNil(t, r)
		if len(want) == 0 {
			assert.Empty(t, r.Candidates)
			assert.True(t, ds.HasErrors())
			continue
		}
		require.False(t, ds.HasErrors(), "%v", ds)
		n := min(top, len(want))
		require.Len(t, r.Candidates, n, "solve:\n%s\nbrute force:\n%s", strings.Join(labels(r.Candidates), "\n"), strings.Join(planLabels(want), "\n"))
		for i, c := range r.Candidates {
			assert.Equal(t, want[i].label, c.Label(), "rank %d of top %d", i+1, top)
			assert.Equal(t, want[i].step, c.StepTimeS, "rank %d: %s", i+1, c.Label())
			assert.Equal(t, want[i].peak, c.Memory.PerGPUPeakBytes, "rank %d: %s", i+1, c.Label())
		}
		assert.LessOrEqual(t, r.Pruned+r.Bounded+int64(r.Evaluated), r.Space)
	}
	t.Logf("%d feasible plans", len(want))
}

// TestSolveMatchesBruteForceRealModels is TestSolveMatchesBruteForce on
// published models at their published scale, where the search's bounds
// and memory rules meet what the tiny specs do not: HybridEP on NVL72
// domains, MXFP8 weights, real activations near the memory headroom, host
// and graph costs. Each open field is bounded (micro_batch: <=8) so the
// brute force covers every value the solver may give it.
func TestSolveMatchesBruteForceRealModels(t *testing.T) {
	if testing.Short() {
		t.Skip("brute force over thousands of full estimates")
	}
	cases := []struct {
		name, text string
		values     map[string][]any
	}{
		{"qwen3-30b-a3b on 16 gb200", `package plan
import ("parc.dev/stdlib/clusters", "parc.dev/stdlib/models")
model: models.qwen3_30b_a3b & {moe: {dispatcher: "flex", flex_dispatcher_backend: "hybridep"}}
cluster: clusters.gb200_nvl72 & {nodes: 4}
parallel: {tp: int, pp: int, ep: int, cp: <=4, account_for_embedding: false, account_for_loss: false}
train: {seq_length: 4096, micro_batch: <=8, global_batch: 512, recompute: "none", precision: "fp8", distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true, iters: 1000}
`, map[string][]any{"parallel.tp": upTo(16), "parallel.pp": upTo(16), "parallel.ep": upTo(16), "parallel.cp": upTo(4), "train.micro_batch": upTo(8)}},
		{"qwen3-235b-a22b on 256 gb300", `package plan
import ("parc.dev/stdlib/clusters", "parc.dev/stdlib/models")
model: models.qwen3_235b_a22b & {moe: {dispatcher: "flex", flex_dispatcher_backend: "hybridep"}}
cluster: clusters.gb300_nvl72 & {nodes: 64}
parallel: {tp: <=2, pp: <=16, vpp: <=4, ep: int, account_for_embedding: true, account_for_loss: true}
train: {seq_length: 4096, micro_batch: <=2, global_batch: 2048, recompute: "none", precision: "fp8", fp8_recipe: "mxfp8", distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true, iters: 1000}
`, map[string][]any{"parallel.tp": upTo(2), "parallel.pp": upTo(16), "parallel.vpp": upTo(4), "parallel.ep": upTo(128), "train.micro_batch": upTo(2)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			matchBruteForce(t, tc.text, tc.values)
		})
	}
}

func labels(cs []solve.Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %.12g", c.Label(), c.StepTimeS))
	}
	return out
}

// TestDeterministic: the same JSON every run.
func TestDeterministic(t *testing.T) {
	res, _ := load.Load(load.Source{Path: "testdata/llama3-70b-64.cue"})
	var first string
	for i := range 3 {
		r, _ := solve.Solve(res, solve.Options{Top: 5})
		b, err := json.Marshal(r)
		require.NoError(t, err)
		if i == 0 {
			first = string(b)
		} else {
			assert.Equal(t, first, string(b))
		}
	}
}

func TestUserConstraintsRespected(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", "tp: 1 | 2, pp: >=2 & <=4, vpp: int", "1 | 2", `"none" | "full"`))
	r, ds := solve.Solve(res, solve.Options{Top: 1000})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.NotEmpty(t, r.Candidates)
	for _, c := range r.Candidates {
		assert.Contains(t, []int{1, 2}, c.Parallel.TP)
		assert.GreaterOrEqual(t, c.Parallel.PP, 2)
		assert.LessOrEqual(t, c.Parallel.PP, 4)
		assert.Contains(t, []int{1, 2}, c.Train.MicroBatch)
		assert.Contains(t, []string{"none", "full"}, c.Train.Recompute)
	}
	assert.Equal(t, []string{"parallel.tp", "parallel.pp", "parallel.vpp", "train.micro_batch", "train.recompute"}, r.Open)
}

// TestCrossFieldConstraint: a constraint that ties two open fields together
// (etp: tp) is not visible field by field; the CUE verification of the top
// K drops the candidates that break it and the search goes on.
func TestCrossFieldConstraint(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tinyMoE, "tp: int, etp: tp, ep: int, pp: 2", "1"))
	r, ds := solve.Solve(res, solve.Options{Top: 3})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.NotEmpty(t, r.Candidates)
	for _, c := range r.Candidates {
		assert.Equal(t, c.Parallel.TP, c.Parallel.ETP, c.Label())
	}
	all := bruteForceAll(t, res, map[string][]any{"parallel.tp": upTo(8), "parallel.etp": upTo(8), "parallel.ep": upTo(8)})
	var same []plan
	for _, p := range all {
		if p.shape[0] == p.shape[4] {
			same = append(same, p)
		}
	}
	same = rankShapes(same, solve.DefaultNoiseBand)
	require.GreaterOrEqual(t, len(same), len(r.Candidates))
	for i, c := range r.Candidates {
		assert.Equal(t, same[i].label, c.Label())
	}
}

func TestNothingOpen(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", "tp: 2, pp: 2", "1", `"none"`))
	r, ds := solve.Solve(res, solve.Options{})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.Len(t, r.Candidates, 1)
	assert.Empty(t, r.Open)
	assert.Equal(t, "tp=2 pp=2 vpp=1 cp=1 ep=1 etp=2 dp=2 micro_batch=1 recompute=none", r.Candidates[0].Label())
	assert.NotEmpty(t, r.Notes)
	p, ds := compiler.Vet(compiler.Source{Path: "plan.cue", Data: []byte(fmt.Sprintf(tiny, "80", "tp: 2, pp: 2", "1", `"none"`))})
	require.NotNil(t, p, "%v", ds)
	assert.Equal(t, round12(p.Estimate.StepTimeS), r.Candidates[0].StepTimeS)

	s, choice, ds := solve.Best(res, nil)
	require.NotNil(t, s, "%v", ds)
	assert.Nil(t, choice)
	assert.Equal(t, 2, s.Parallel.TP)
}

func TestNothingOpenWithErrors(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", "tp: 3", "1", `"none"`))
	r, ds := solve.Solve(res, solve.Options{})
	require.NotNil(t, r)
	assert.Empty(t, r.Candidates)
	assert.Contains(t, codesOf(ds), "tp-heads")
}

func codesOf(ds diag.List) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Code)
	}
	return out
}

// failedSearch solves a spec no plan passes and returns the result and the
// search's last diagnostic, the error that says why.
func failedSearch(t *testing.T, res *load.Result) (*solve.Result, diag.Diagnostic) {
	t.Helper()
	r, ds := solve.Solve(res, solve.Options{})
	require.NotNil(t, r)
	assert.Empty(t, r.Candidates)
	require.True(t, ds.HasErrors())
	return r, ds[len(ds)-1]
}

func TestNoFeasiblePlanMemory(t *testing.T) {
	// The schema's smallest GPU (1 GiB) with a model too big for it.
	res := loadText(t, "plan.cue", fmt.Sprintf(strings.Replace(tiny, "hidden: 256", "hidden: 16384", 1), "1", "tp: int, pp: int", "int", "string"))
	_, d := failedSearch(t, res)
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code)
	assert.Equal(t, "parallel.tp", d.Path)
	assert.Contains(t, d.Message, "memory-exceeds-gpu rejects")
	assert.Contains(t, d.Message, "the plan with the least memory parc found needs")
	assert.Contains(t, d.Hint, "add nodes")
	assert.NotContains(t, d.Hint, "leave parallel.tp", "tp and pp are open already")
	assert.Equal(t, 10, d.Line, "at the user's parallel.tp")

	// With pp fixed, the hint names pp only.
	res = loadText(t, "plan.cue", fmt.Sprintf(strings.Replace(tiny, "hidden: 256", "hidden: 16384", 1), "1", "tp: int, pp: 1", "int", "string"))
	_, d = failedSearch(t, res)
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code)
	assert.Contains(t, d.Hint, "leave parallel.pp open")
	assert.NotContains(t, d.Hint, "parallel.tp")
}

// leastNeeded is the least memory a failed search names: GiB per GPU.
var leastNeeded = regexp.MustCompile(`the plan with the least memory parc found needs ([0-9.]+) GiB per GPU \(([0-9.]+)% of the GPU\)`)

// namedLeast solves text, which no plan fits, and returns the least memory
// its error names.
func namedLeast(t *testing.T, text string) float64 {
	t.Helper()
	_, d := failedSearch(t, loadText(t, "plan.cue", text))
	m := leastNeeded.FindStringSubmatch(d.Message)
	require.NotNil(t, m, d.Message)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// TestNoFeasiblePlanLeastMemory: the least memory a failed search names is
// what the plan that needs the least actually needs, not the least among
// the plans it happened to estimate (the search estimates the fastest
// first, and a shape whose state alone overflows is not estimated again:
// it named micro batch 8 without recomputation, far above the shape's
// least). Every tp·pp of the 8 GPUs with micro batch 1 and full
// recomputation, estimated here one by one, needs at least what it names.
func TestNoFeasiblePlanLeastMemory(t *testing.T) {
	text := fmt.Sprintf(strings.Replace(tiny, "hidden: 256", "hidden: 16384", 1), "1", "tp: int, pp: int", "int", "string")
	named := namedLeast(t, text)
	least := math.Inf(1)
	for _, tp := range []int{1, 2, 4, 8} {
		for _, pp := range []int{1, 2, 4, 8} {
			res := loadText(t, "plan.cue", fmt.Sprintf(strings.Replace(tiny, "hidden: 256", "hidden: 16384", 1), "1",
				fmt.Sprintf("tp: %d, pp: %d", tp, pp), "1", `"full"`))
			s, ds := res.DecodeValue(res.Plan)
			require.False(t, ds.HasErrors(), "%v", ds)
			p, ds := compiler.Resolve("plan.cue", s, diag.NoPos)
			if p == nil || p.Estimate == nil || slices.ContainsFunc(ds, func(x diag.Diagnostic) bool {
				return x.Severity == diag.Error && x.Code != "memory-exceeds-gpu"
			}) {
				continue
			}
			least = min(least, float64(p.Estimate.Memory.PerGPUPeakBytes)/(1<<30))
		}
	}
	require.False(t, math.IsInf(least, 1), "some tp·pp passes the rules")
	assert.LessOrEqual(t, named, least+0.005, "named %.2f GiB; tp·pp with micro batch 1 and full recomputation need %.2f", named, least)
}

// TestNoFeasiblePlanHeadroomHint: when the plan with the least memory fits
// the GPU but not the headroom, the hint names the headroom it needs, and a
// search with that headroom finds a plan (a hint's value passes).
func TestNoFeasiblePlanHeadroomHint(t *testing.T) {
	text := fmt.Sprintf(strings.Replace(tiny, "hidden: 256", "hidden: 16384", 1), "1", "tp: int, pp: int", "int", "string")
	need := namedLeast(t, text)
	// A GPU the least plan fills to about 95%.
	text = fmt.Sprintf(strings.Replace(tiny, "hidden: 256", "hidden: 16384", 1), fmt.Sprintf("%.3f", need/0.95), "tp: int, pp: int", "int", "string")
	res := loadText(t, "plan.cue", text)
	_, d := failedSearch(t, res)
	assert.Contains(t, d.Message, "memory-above-headroom rejects")
	h := regexp.MustCompile(`raise solve\.memory_headroom \(or --memory-headroom; now 0\.9\) to ([0-9.]+)`).FindStringSubmatch(d.Hint)
	require.NotNil(t, h, d.Hint)
	headroom, err := strconv.ParseFloat(h[1], 64)
	require.NoError(t, err)
	assert.InDelta(t, 0.95, headroom, 0.011)
	r, ds := solve.Solve(res, solve.Options{MemoryHeadroom: headroom})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.NotEmpty(t, r.Candidates, "the hint's headroom finds a plan")
}

// TestNoFeasiblePlanOnlyImplied: nothing open, but pp does not divide the
// layers, so parc chooses the split; when no split fits, the error is
// reported at the first field parc chose (it panicked on the empty list of
// open fields).
func TestNoFeasiblePlanOnlyImplied(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(strings.Replace(tiny, "hidden: 256", "hidden: 16384", 1), "1", "tp: 1, pp: 3", "1", `"none"`))
	r, d := failedSearch(t, res)
	assert.Empty(t, r.Open)
	assert.NotEmpty(t, r.Implied)
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code)
	assert.Equal(t, r.Implied[0], d.Path)
}

// TestLayoutWritten: a parallel.layout the spec writes places the layers
// (8 over 3 stages, which no even split gives): pp must divide its stages,
// vpp follows, and the plan keeps the layout — the same plan parc vet
// builds with those degrees written in.
func TestLayoutWritten(t *testing.T) {
	text := fmt.Sprintf(tiny, "80", `tp: int, pp: int, layout: "Ettt|tt|tttL"`, "1", `"none"`)
	res := loadText(t, "plan.cue", strings.Replace(text, "nodes: 2", "nodes: 3", 1))
	r, ds := solve.Solve(res, solve.Options{Top: 3})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.NotEmpty(t, r.Candidates)
	assert.Empty(t, r.Implied, "the layout fixes the split")
	for _, c := range r.Candidates {
		assert.Equal(t, 3, c.Parallel.PP*c.Parallel.VPP, c.Label())
		require.NotNil(t, c.Parallel.Layout, c.Label())
		assert.Equal(t, "Ettt|tt|tttL", *c.Parallel.Layout)
		plan, ds := compiler.Resolve("plan.cue", c.Spec, diag.NoPos)
		require.False(t, ds.HasErrors(), "%v", ds)
		assert.Equal(t, []int{3, 2, 3}, []int{plan.Estimate.Pipeline.LayersPerStage[0][0], plan.Estimate.Pipeline.LayersPerStage[1][0], plan.Estimate.Pipeline.LayersPerStage[2][0]})
	}
}

// TestSharedErrorReportedAsIs: an error no open field can fix (the warm-up
// given twice) is reported where the user can fix it, not as
// no-feasible-plan only; one whose rule reads none of the fields the search
// fills (a warm-up longer than training, check.FixedBySpec) alone, with
// nothing searched.
func TestSharedErrorReportedAsIs(t *testing.T) {
	text := strings.Replace(fmt.Sprintf(tiny, "80", "tp: int", "1", `"none"`), "iters: 10, ", "iters: 10, lr_warmup_iters: 2, lr_warmup_fraction: 0.1, ", 1)
	res := loadText(t, "plan.cue", text)
	r, ds := solve.Solve(res, solve.Options{})
	require.NotNil(t, r)
	assert.Empty(t, r.Candidates)
	got := codesOf(ds)
	assert.Contains(t, got, "lr-warmup-exclusive")
	assert.Contains(t, got, solve.CodeNoFeasiblePlan)
	// The no-feasible-plan hint is that error's own (it names the values
	// to set), not its code's general advice.
	var shared, none diag.Diagnostic
	for _, d := range ds {
		switch d.Code {
		case "lr-warmup-exclusive":
			shared = d
		case solve.CodeNoFeasiblePlan:
			none = d
		}
	}
	require.NotEmpty(t, shared.Hint)
	assert.Equal(t, shared.Hint, none.Hint)

	text = strings.Replace(fmt.Sprintf(tiny, "80", "tp: int", "1", `"none"`), "iters: 10, ", "iters: 10, lr_warmup_iters: 20, ", 1)
	r, ds = solve.Solve(loadText(t, "plan.cue", text), solve.Options{})
	require.NotNil(t, r)
	assert.Empty(t, r.Candidates)
	assert.Equal(t, []string{"lr-warmup"}, codesOf(ds))
	assert.Equal(t, "use lr_warmup_iters < 10", ds[0].Hint)
	assert.Zero(t, r.Space, "nothing searched")
}

func TestOpenFieldWithoutValue(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", "tp: >5000 & <5001", "1", `"none"`))
	r, ds := solve.Solve(res, solve.Options{})
	assert.Nil(t, r)
	require.Len(t, ds, 1)
	assert.Equal(t, solve.CodeOpenNoValue, ds[0].Code)
}

// TestOpenDegreeNoDivisor: an open degree whose constraint allows no divisor
// of the GPUs is one error at its field naming the values it could allow,
// not a no-feasible-plan error after a search that tried nothing.
func TestOpenDegreeNoDivisor(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", "tp: 3 | 5, pp: int", "1", `"none"`))
	r, ds := solve.Solve(res, solve.Options{})
	assert.Nil(t, r)
	require.Len(t, ds, 1, "%v", ds)
	d := ds[0]
	assert.Equal(t, solve.CodeOpenNoValue, d.Code)
	assert.Equal(t, "parallel.tp", d.Path)
	assert.Contains(t, d.Message, "(1, 2, 4, 8)")
	assert.Equal(t, "write parallel.tp: int and parc chooses among the divisors of the 8 GPUs, or allow some of them in the constraint", d.Hint)
	// What the hint says to write finds a plan.
	res = loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", "tp: int, pp: int", "1", `"none"`))
	r, ds = solve.Solve(res, solve.Options{})
	require.NotNil(t, r, "%v", ds)
	assert.NotEmpty(t, r.Candidates, "%v", ds)

	// The micro batch divides the global batch (16), vpp a stage's layers.
	for _, c := range []struct{ par, mb, path, msg string }{
		{"tp: 1", ">100000", "train.micro_batch", "a micro batch divides the global batch of 16 (1, 2, 4, 8, 16)"},
		{"tp: 1, pp: 2, vpp: >100", "1", "parallel.vpp", "vpp splits each pipeline stage's share of the 8 layers, so parc tries only 1, 2, 4, 8"},
	} {
		res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", c.par, c.mb, `"none"`))
		r, ds := solve.Solve(res, solve.Options{})
		assert.Nil(t, r, c.path)
		require.Len(t, ds, 1, "%s: %v", c.path, ds)
		assert.Equal(t, solve.CodeOpenNoValue, ds[0].Code)
		assert.Equal(t, c.path, ds[0].Path)
		assert.Contains(t, ds[0].Message, c.msg)
	}
}

func TestBest(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", "tp: int, pp: int", "1", `"none"`))
	s, choice, ds := solve.Best(res, nil)
	require.NotNil(t, s, "%v", ds)
	require.NotNil(t, choice)
	r, _ := solve.Solve(res, solve.Options{Top: 2})
	assert.Equal(t, r.Candidates[0].Label(), choice.Chosen)
	assert.True(t, strings.HasPrefix(choice.RunnerUp, r.Candidates[1].Label()+" ("), choice.RunnerUp)
	assert.Equal(t, r.Candidates[1].VsBestPct, choice.MarginPct)
	assert.Equal(t, append([]string{"parallel.tp", "parallel.pp"}, r.Implied...), choice.Open)
	assert.Equal(t, r.Candidates[0].Parallel.TP, s.Parallel.TP)
	assert.Equal(t, r.Candidates[0].Parallel.PP, s.Parallel.PP)
}

func planLabels(ps []plan) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %.12g", p.label, p.step))
	}
	return out
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// TestLargeModelsSolve: issue 14's acceptance cases. Llama 3 405B (126
// layers) on 1,024 and 16,384 H100 and DeepSeek-V3 (61 layers) on 1,024
// H100, with every degree, the micro batch and recompute open and no
// pipeline split written, have a plan; the pick's estimated peak is within
// the memory headroom, `parc vet` on the pick does not warn
// memory-near-limit, and the result carries the measured accuracy explain
// reports for the pick.
func TestLargeModelsSolve(t *testing.T) {
	files, err := filepath.Glob("testdata/acceptance/*.cue")
	require.NoError(t, err)
	require.Len(t, files, 3)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".cue"), func(t *testing.T) {
			res, ds := load.Load(load.Source{Path: f})
			require.NotNil(t, res, "%v", ds)
			r, ds := solve.Solve(res, solve.Options{})
			require.False(t, ds.HasErrors(), "%v", ds)
			require.NotEmpty(t, r.Candidates)
			c := r.Candidates[0]
			assert.LessOrEqual(t, c.Memory.FractionOfGPU, solve.DefaultMemoryHeadroom, c.Label())
			p, ds := compiler.Resolve(f, c.Spec, diag.NoPos)
			require.False(t, ds.HasErrors(), "%v", ds)
			assert.NotContains(t, codesOf(ds), "memory-near-limit", c.Label())
			assert.Equal(t, r.Space, r.Pruned+r.Infeasible+r.Feasible+r.Bounded, "the counts add up")
			// The pick comes with the measured accuracy of its kind of
			// plan on H100, as explain gives it for that plan.
			if assert.NotNil(t, r.Accuracy, "the corpus has runs of this kind on H100") {
				assert.Equal(t, estimate.AccuracyOf(&p.Spec), r.Accuracy)
			}
			t.Logf("%s: %.4g s/step, %.0f%% of GPU memory; %s", c.Label(), p.Estimate.StepTimeS, 100*c.Memory.FractionOfGPU, r.Summary())
		})
	}
}

// A measured run's plan with Transformer Engine's cross-entropy fusion (what
// every Megatron-Bridge row ran) is rated with solve.Options.MeasuredRun, and
// only with it: parc solve keeps Megatron-LM's rule.
func TestMeasuredRunTECrossEntropy(t *testing.T) {
	text := fmt.Sprintf(tiny, "80", "tp: int, pp: 1", "1", `"none"`) +
		"kernels: {cross_entropy_loss_fusion: true, cross_entropy_fusion_impl: \"te\"}\n"
	res := loadText(t, "plan.cue", text)
	r, ds := solve.Solve(res, solve.Options{})
	require.NotNil(t, r)
	assert.Empty(t, r.Candidates)
	assert.Contains(t, codesOf(ds), "kernel-options")
	r, ds = solve.Solve(res, solve.Options{MeasuredRun: true})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.NotEmpty(t, r.Candidates)
}

// TestNoFeasiblePlanHintFixesFit: the settings a no-feasible-plan hint
// suggests for memory are the ones with which a search finds a plan.
// Llama 3 70B on 16 H100 without recomputation or a distributed optimizer
// fits only with full recomputation (the hint says so, and the spec with
// it solves); DeepSeek-V3 on 32 B200 fits with neither, so the hint
// suggests no setting (it used to suggest the distributed optimizer).
func TestNoFeasiblePlanHintFixesFit(t *testing.T) {
	const spec = `package plan
import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)
model:   models.%s
cluster: clusters.%s & {nodes: %d}
parallel: {tp: int, pp: int, vpp: int, cp: int, ep: int, etp: int}
train: {seq_length: 4096, micro_batch: int, global_batch: 2048, recompute: %s, distributed_optimizer: %s, iters: 100}
`
	res := loadText(t, "plan.cue", fmt.Sprintf(spec, "llama3_70b", "dgx_h100", 2, `"none"`, "false"))
	_, d := failedSearch(t, res)
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code)
	assert.Contains(t, d.Hint, `leave train.recompute open (or set it to "full")`)
	assert.NotContains(t, d.Hint, "distributed_optimizer", "with recompute none it does not fit")
	r, ds := solve.Solve(loadText(t, "plan.cue", fmt.Sprintf(spec, "llama3_70b", "dgx_h100", 2, `"full"`, "false")), solve.Options{})
	require.NotNil(t, r, "%v", ds)
	assert.NotEmpty(t, r.Candidates, "the hint's full recomputation fits: %v", ds)

	res = loadText(t, "plan.cue", fmt.Sprintf(spec, "deepseek_v3", "dgx_b200", 4, "string", "false"))
	_, d = failedSearch(t, res)
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code)
	assert.Regexp(t, `^add nodes \(with these settings fewer than \d+ cannot hold the model's state; with cluster.nodes \d+, now 4, parc finds a plan\) or use GPUs with more memory$`, d.Hint)
	// The node count it names solves, and is no fewer than the count below
	// which the model's state cannot fit (estimate.StateFloor).
	n := nodesIn(t, d.Hint)
	assert.Greater(t, n, 4)
	floor, err := strconv.Atoi(regexp.MustCompile(`fewer than (\d+) cannot`).FindStringSubmatch(d.Hint)[1])
	require.NoError(t, err)
	assert.LessOrEqual(t, floor, n)
	assert.Contains(t, d.Message, fmt.Sprintf("no plan fits on fewer than %d nodes", floor), "the message and the hint name one floor")
	r, ds = solve.Solve(loadText(t, "plan.cue", fmt.Sprintf(spec, "deepseek_v3", "dgx_b200", n, "string", "false")), solve.Options{})
	require.NotNil(t, r, "%v", ds)
	assert.NotEmpty(t, r.Candidates, "the hint's %d nodes: %v", n, ds)
	_, d = failedSearch(t, loadText(t, "plan.cue", fmt.Sprintf(spec, "deepseek_v3", "dgx_b200", 4, "string", "true")))
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code, "the distributed optimizer does not make it fit")

	// Published plans written with the contract's fields only, which ran
	// with a setting that makes them fit (testdata/measured/runs.jsonl):
	// Megatron-Bridge's DeepSeek-V3 on 256 GB300 with fp8 weights
	// gathered, NeMo's Nemotron-4 340B on 128 H100 with bf16 Adam moments.
	// The hint names the setting, and full recomputation, which the
	// search with it verifies as recompute "full" where the spec writes
	// another mode; each named setting solves.
	const published = `package plan
import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)
model: models.%s
cluster: %s
parallel: %s
train: {%s, micro_batch: %s, distributed_optimizer: true, iters: 10}
`
	for _, tc := range []struct{ model, cluster, parallel, train, mb, fix, set string }{
		{"deepseek_v3", "clusters.gb300_nvl72 & {nodes: 64, gpus_per_node: 4, nvlink_domain: 64, slurm: segment: 16}",
			`{tp: 1, pp: 2, vpp: 8, cp: 1, ep: 32, etp: 1, layout: "Et*4|(t*4|)*14tmL"}`,
			`seq_length: 4096, global_batch: 4096, precision: "fp8", recompute: "selective", recompute_modules: ["mla_up_proj"]`, "2 | 3",
			"set train.fp8_param_gather: true", "fp8_param_gather: true"},
		{"nemotron4_340b", "clusters.dgx_h100 & {nodes: 16}", "{tp: 8, pp: 8, vpp: 12, cp: 1}",
			`seq_length: 4096, global_batch: 32, precision: "fp8", fp8_recipe: "delayed", recompute: "selective"`, "1 | 3",
			`set train.precision_aware_optimizer: true, train.exp_avg_dtype: "bf16" and train.exp_avg_sq_dtype: "bf16"`,
			`precision_aware_optimizer: true, exp_avg_dtype: "bf16", exp_avg_sq_dtype: "bf16"`},
	} {
		// micro_batch 3 breaks the global batch: one assignment, which
		// does not fit.
		_, d := failedSearch(t, loadText(t, "plan.cue", fmt.Sprintf(published, tc.model, tc.cluster, tc.parallel, tc.train, tc.mb)))
		assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code, tc.model)
		assert.Contains(t, d.Hint, tc.fix, tc.model)
		assert.Contains(t, d.Hint, `leave train.recompute open (or set it to "full")`, tc.model)
		for _, train := range []string{tc.train + ", " + tc.set, strings.Replace(tc.train, `recompute: "selective"`, `recompute: "full"`, 1)} {
			r, ds := solve.Solve(loadText(t, "plan.cue", fmt.Sprintf(published, tc.model, tc.cluster, tc.parallel, train, tc.mb)), solve.Options{})
			require.NotNil(t, r, "%v", ds)
			assert.NotEmpty(t, r.Candidates, "%s with %s: %v", tc.model, train, ds)
		}
	}
}

// nodesIn returns the node counts a no-feasible-plan hint names
// ("cluster.nodes 12 or 14", "with cluster.nodes 8"), the first.
func nodesIn(t *testing.T, hint string) int {
	t.Helper()
	m := regexp.MustCompile(`cluster\.nodes (\d+)`).FindStringSubmatch(hint)
	require.NotNil(t, m, "no node count in %q", hint)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// TestNoFeasiblePlanHintNamesNodes: when no assignment satisfies
// Megatron's rules because of the node count's factors (Llama 3 8B on 13
// DGX H100, 104 GPUs, global batch 1,000: dp divides 1,000, so the factor
// 13 falls on tp, pp or cp, and neither the 32 heads, the 32 layers nor
// the sequence takes it), the hint names the nearest node counts and
// global batches below and above with which a search finds a plan, and
// each does; it adds nothing unverified.
func TestNoFeasiblePlanHintNamesNodes(t *testing.T) {
	const spec = `package plan
import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: %d}
parallel: {tp: int, pp: int, vpp: int, cp: int}
train: {seq_length: 8192, micro_batch: int, global_batch: %d, recompute: string, iters: 100}
`
	_, d := failedSearch(t, loadText(t, "plan.cue", fmt.Sprintf(spec, 13, 1000)))
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code)
	assert.Contains(t, d.Message, "no assignment of the open fields satisfies Megatron's rules")
	m := regexp.MustCompile(`^use cluster\.nodes (\d+) or (\d+) \(now 13\), or train\.global_batch (\d+) or (\d+) \(now 1000\): parc finds a plan with each$`).FindStringSubmatch(d.Hint)
	require.NotNil(t, m, "hint %q", d.Hint)
	v := make([]int, 4)
	for i, k := range m[1:] {
		v[i], _ = strconv.Atoi(k)
		nodes, batch := v[i], 1000
		if i >= 2 {
			nodes, batch = 13, v[i]
		}
		r, ds := solve.Solve(loadText(t, "plan.cue", fmt.Sprintf(spec, nodes, batch)), solve.Options{})
		require.NotNil(t, r, "%v", ds)
		assert.NotEmpty(t, r.Candidates, "the hint's %d nodes, global batch %d: %v", nodes, batch, ds)
	}
	assert.Less(t, v[0], 13)
	assert.Greater(t, v[1], 13)
	assert.Less(t, v[2], 1000)
	assert.Greater(t, v[3], 1000)
}

// TestNoFeasiblePlanHintBatchMultiple: on 100 nodes at pp 8 (tp and cp 1)
// every plan's data-parallel size is 100, so no global batch near 2 works;
// the hint names the nearest multiple of it (with which a search finds a
// plan), not the advice of the rule most assignments break first
// (ep-without-moe: with ep 1 the batch still fails).
func TestNoFeasiblePlanHintBatchMultiple(t *testing.T) {
	const spec = `package plan
import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 100}
parallel: {pp: 8, vpp: 1, ep: int}
train: {seq_length: 4096, micro_batch: 1 | 4, global_batch: %d, recompute: string, iters: 100}
`
	_, d := failedSearch(t, loadText(t, "plan.cue", fmt.Sprintf(spec, 2)))
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code)
	m := regexp.MustCompile(`^use train\.global_batch (\d+) \(now 2\): parc finds a plan with it$`).FindStringSubmatch(d.Hint)
	require.NotNil(t, m, "hint %q", d.Hint)
	batch, _ := strconv.Atoi(m[1])
	assert.Equal(t, 100, batch, "the least multiple of dp = 100 above 2")
	r, ds := solve.Solve(loadText(t, "plan.cue", fmt.Sprintf(spec, batch)), solve.Options{})
	require.NotNil(t, r, "%v", ds)
	assert.NotEmpty(t, r.Candidates, "the hint's global batch %d: %v", batch, ds)
}

// TestNoFeasiblePlanHintNamesEveryRule: with vpp 3 and pp 1 written, no
// value of the open tp satisfies the rules, and no other node count or
// batch helps; several rules reject the assignments, so the hint gives each
// one's advice (it gave only the most frequent's, a tp that divides the
// heads, which leaves vpp-pp).
func TestNoFeasiblePlanHintNamesEveryRule(t *testing.T) {
	_, d := failedSearch(t, loadText(t, "plan.cue", `package plan
import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 4}
parallel: {tp: int, pp: 1, vpp: 3}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64, iters: 100}
`))
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code)
	assert.Contains(t, d.Message, "no assignment of the open fields satisfies Megatron's rules")
	assert.Regexp(t, `^each assignment breaks one of these rules; clear all of them: .*vpp-pp: Set vpp to 1, or raise pp`, d.Hint)
}

// TestOpenFieldOfWrongType: an open field whose constraint is of another
// type (tp: string, recompute: int) is a type-mismatch at the field naming
// the type it wants, not a search for values it cannot have.
func TestOpenFieldOfWrongType(t *testing.T) {
	for _, c := range []struct{ par, rc, path, want string }{
		{"tp: string", `"none"`, "parallel.tp", "parallel.tp has type string, want int"},
		{"tp: float", `"none"`, "parallel.tp", "parallel.tp has type float, want int"},
		{"tp: 1", "int", "train.recompute", "train.recompute has type int, want string"},
		{"tp: 1, account_for_loss: string", `"none"`, "parallel.account_for_loss", "parallel.account_for_loss has type string, want bool"},
	} {
		res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", c.par, "1", c.rc))
		r, ds := solve.Solve(res, solve.Options{})
		assert.Nil(t, r, c.par)
		require.Len(t, ds, 1, "%s: %v", c.par, ds)
		assert.Equal(t, "type-mismatch", ds[0].Code, c.par)
		assert.Equal(t, c.path, ds[0].Path, c.par)
		assert.Contains(t, ds[0].Message, c.want, c.par)
	}
}

// TestEveryPlanBreaksARule: when a spec-level rule rejects every plan, the
// rules run before any memory estimate (no plan found, so no leaf can go
// back to the heap), and the search ends with no-feasible-plan within its
// budget instead of solve-search-too-large. Running the memory first for full
// recomputation had Mixtral 8x22B on 128 H100 hit the budget.
func TestEveryPlanBreaksARule(t *testing.T) {
	if testing.Short() {
		t.Skip("searches every plan of Mixtral 8x22B on 128 H100")
	}
	data, err := os.ReadFile("testdata/mixtral-64.cue")
	require.NoError(t, err)
	// Transformer Engine's cross-entropy fusion, which Megatron-LM rejects
	// (kernel-options): a rule the search checks plan by plan.
	src := strings.NewReplacer("mixtral_8x7b", "mixtral_8x22b", "nodes: 8", "nodes: 16", "global_batch:          256", "global_batch:          1024").Replace(string(data)) +
		"\nkernels: {cross_entropy_loss_fusion: true, cross_entropy_fusion_impl: \"te\"}\n"
	res, ds := load.Load(load.Source{Path: "mixtral-8x22b-128.cue", Data: []byte(src)})
	require.NotNil(t, res, "%v", ds)
	r, ds := solve.Solve(res, solve.Options{})
	require.Empty(t, r.Candidates)
	codes := codesOf(ds)
	assert.Contains(t, codes, "kernel-options")
	assert.Contains(t, codes, solve.CodeNoFeasiblePlan)
	assert.NotContains(t, codes, "solve-search-too-large")
}

// TestFixedRuleStopsTheSearch: a spec that breaks a rule no plan can clear
// (check.FixedBySpec; here max-positions, a sequence longer than the
// model's positions) gets that rule's error and hint, as parc vet gives
// them, and no search: before, Mixtral 8x7B on 512 DGX H100 with 128K
// sequences rejected plan after plan until the work budget stopped it and
// reported solve-search-too-large beside the real error.
func TestFixedRuleStopsTheSearch(t *testing.T) {
	src := `package plan

import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)

model:    models.mixtral_8x7b
cluster:  clusters.dgx_h100 & {nodes: 512}
parallel: {tp: int, pp: int, vpp: int, cp: int, ep: int, etp: int}
train: {seq_length: 131072, micro_batch: int, global_batch: 1536, precision: "bf16", recompute: string, distributed_optimizer: true}
`
	res, ds := load.Load(load.Source{Path: "mixtral-128k.cue", Data: []byte(src)})
	require.NotNil(t, res, "%v", ds)
	r, ds := solve.Solve(res, solve.Options{})
	require.Empty(t, r.Candidates)
	assert.Equal(t, []string{"max-positions"}, codesOf(ds))
	assert.Zero(t, int64(r.Evaluated)+r.Pruned+r.Infeasible, "the search ran")
	for _, x := range ds {
		assert.Contains(t, x.Hint, "set max_position_embeddings ≥ 131072")
		assert.Equal(t, 8, x.Pos.Line, "the error points at the model's line: %v", x.Pos)
	}
	assert.Contains(t, strings.Join(r.Notes, "\n"), "nothing was searched")
}

// TestOpenSplitFieldWidensTheSplit: a user who leaves
// account_for_embedding and account_for_loss open asks parc to choose the
// split, so the other split fields and the layouts are searched too, and
// the pick is never slower than with the split fields left unwritten.
// DeepSeek-V3's 61 layers split over many stages only by a layout
// (Megatron-Bridge's DeepSeek-V3 recipes write one); restricted to the
// accounted splits the pick was 18% slower.
func TestOpenSplitFieldWidensTheSplit(t *testing.T) {
	src, err := os.ReadFile("testdata/acceptance/deepseek-v3-1k.cue")
	require.NoError(t, err)
	unwritten := loadText(t, "plan.cue", string(src))
	opened := loadText(t, "plan.cue", strings.Replace(string(src), "etp: int}", "etp: int, account_for_embedding: bool, account_for_loss: bool}", 1))
	a, ds := solve.Solve(unwritten, solve.Options{Top: 1})
	require.False(t, ds.HasErrors(), "%v", ds)
	b, ds := solve.Solve(opened, solve.Options{Top: 1})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.NotEmpty(t, a.Candidates)
	require.NotEmpty(t, b.Candidates)
	assert.Subset(t, b.Implied, []string{"parallel.first_stage_layers", "parallel.last_stage_layers"})
	assert.NotContains(t, b.Implied, "parallel.account_for_embedding", "open, not implied")
	assert.Equal(t, a.Candidates[0].Label(), b.Candidates[0].Label())
	assert.LessOrEqual(t, b.Candidates[0].StepTimeS, a.Candidates[0].StepTimeS)
	assert.NotNil(t, b.Candidates[0].Parallel.Layout, "the pick places DeepSeek-V3's 61 layers with a layout")
}

// TestWrittenStageKeptWithOpenSplitField: a first stage the user wrote as a
// value stays a candidate whatever the window of uneven stages says, when
// another split field is open: Llama 3 405B's 126 layers with
// first_stage_layers 7 (17 on each other stage at pp = 8) and
// account_for_loss open solve as with account_for_loss left out. Before,
// the window (3 fewer to 1 more layers than the middle stages) dropped the
// written 7 and no plan was tried.
func TestWrittenStageKeptWithOpenSplitField(t *testing.T) {
	src, err := os.ReadFile("testdata/acceptance/llama3-405b-1k.cue")
	require.NoError(t, err)
	var picks []string
	for _, extra := range []string{"first_stage_layers: 7", "first_stage_layers: 7, account_for_loss: bool"} {
		res := loadText(t, "plan.cue", strings.Replace(string(src), "etp: int}", "etp: int, "+extra+"}", 1))
		r, ds := solve.Solve(res, solve.Options{Top: 1})
		require.False(t, ds.HasErrors(), "%s: %v", extra, ds)
		require.NotEmpty(t, r.Candidates, extra)
		c := r.Candidates[0]
		require.NotNil(t, c.Parallel.FirstStageLayers, extra)
		assert.Equal(t, 7, *c.Parallel.FirstStageLayers, extra)
		picks = append(picks, c.Label())
	}
	assert.Equal(t, picks[0], picks[1])
}
