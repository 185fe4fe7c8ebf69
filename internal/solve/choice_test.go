package solve_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/solve"
	"parc.dev/parc/internal/spec"
)

// TestOpenChoicesListed: parallel.layout left open (a type, a pattern, a
// disjunction) and train.recompute_modules left open (a list that may grow,
// which CUE alone reads as the empty list, or a disjunction) are open; a
// layout or a closed list, even empty, is written.
func TestOpenChoicesListed(t *testing.T) {
	for _, tc := range []struct {
		parallel, modules string
		want              []string
	}{
		{`tp: 1, layout: string`, ``, []string{spec.LayoutPath}},
		{`tp: 1, layout: =~"^E"`, ``, []string{spec.LayoutPath}},
		{`tp: 1, layout: "Etttt|ttttL" | "Et|tttttttL"`, ``, []string{spec.LayoutPath}},
		{`tp: 1, layout: *"Etttt|ttttL" | string`, ``, nil},
		{`tp: 1, layout: "Etttt|ttttL"`, ``, nil},
		{`tp: 1`, `recompute_modules: [...string]`, []string{spec.RecomputeModulesPath}},
		{`tp: 1`, `recompute_modules: ["core_attn", ...string]`, []string{spec.RecomputeModulesPath}},
		{`tp: 1`, `recompute_modules: ["core_attn"] | ["mlp"]`, []string{spec.RecomputeModulesPath}},
		{`tp: 1`, `recompute_modules: []`, nil},
		{`tp: 1, dp: >=2, sp: bool`, ``, []string{spec.DataParallelPath, spec.SequenceParallelPath}},
		{`tp: 1, dp: 8, sp: false`, ``, nil},
		{`tp: 1`, `recompute_method: string, recompute_layers: int`, []string{spec.RecomputeMethodPath, spec.RecomputeLayersPath}},
		{`tp: 1`, `recompute_method: "block", recompute_layers: 2`, nil},
		{`tp: 1`, `recompute_modules: ["mlp"]`, nil},
	} {
		text := fmt.Sprintf(tiny, "80", tc.parallel, "1", `"selective"`)
		if tc.modules != "" {
			text = strings.Replace(text, `recompute: "selective"`, `recompute: "selective", `+tc.modules, 1)
		}
		res := loadText(t, "plan.cue", text)
		assert.Equal(t, tc.want, res.Open(), "%s %s", tc.parallel, tc.modules)
	}
}

// TestOpenLayoutPlacesAsSplits: with parallel.layout open parc searches the
// splits it searches when it chooses the split, each written as the layout
// that places the same layers (Megatron excludes a layout beside the split
// fields): the same plans, at the same step time and peak, in the same
// order, each with a layout whose stages hold what the split gave them and
// whose vpp Megatron derives from it.
func TestOpenLayoutPlacesAsSplits(t *testing.T) {
	splits := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", `tp: int, pp: int, vpp: int`, "int", `"none"`))
	layouts := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", `tp: int, pp: int, vpp: int, layout: string`, "int", `"none"`))
	want, ds := solve.Solve(splits, solve.Options{Top: 1000})
	require.False(t, ds.HasErrors(), "%v", ds)
	got, ds := solve.Solve(layouts, solve.Options{Top: 1000})
	require.False(t, ds.HasErrors(), "%v", ds)
	assert.Contains(t, got.Open, spec.LayoutPath)
	require.Equal(t, len(want.Candidates), len(got.Candidates), "shapes:\n%s\nwith layouts:\n%s", strings.Join(labels(want.Candidates), "\n"), strings.Join(labels(got.Candidates), "\n"))
	for i, c := range got.Candidates {
		w := want.Candidates[i]
		assert.Equal(t, []int{w.Parallel.TP, w.Parallel.PP, w.Parallel.VPP, w.Train.MicroBatch}, []int{c.Parallel.TP, c.Parallel.PP, c.Parallel.VPP, c.Train.MicroBatch}, "rank %d", i+1)
		assert.Equal(t, w.StepTimeS, c.StepTimeS, "rank %d: %s", i+1, c.Label())
		assert.Equal(t, w.Memory.PerGPUPeakBytes, c.Memory.PerGPUPeakBytes, "rank %d: %s", i+1, c.Label())
		require.NotNil(t, c.Parallel.Layout, c.Label())
		assert.Nil(t, c.Parallel.FirstStageLayers, c.Label())
		assert.Nil(t, c.Parallel.LastStageLayers, c.Label())
		assert.False(t, c.Parallel.AccountForEmbedding || c.Parallel.AccountForLoss, c.Label())
		pw, ds := compiler.Resolve("plan.cue", w.Spec, diag.NoPos)
		require.False(t, ds.HasErrors(), "%v", ds)
		pg, ds := compiler.Resolve("plan.cue", c.Spec, diag.NoPos)
		require.False(t, ds.HasErrors(), "%v", ds)
		assert.Equal(t, pw.Estimate.Pipeline.LayersPerStage, pg.Estimate.Pipeline.LayersPerStage, c.Label())
	}
}

// TestOpenLayoutPattern: an open layout whose constraint allows only the
// spelled-out form (no Megatron repetitions) gets the same plans as an open
// string, each writing its layout spelled out: it was tested only when a
// plan was verified, so every plan with a repeated layout failed there and
// the search ran out of work (Llama 3 405B on 16,384 GPUs: 5 s, then
// solve-search-too-large).
func TestOpenLayoutPattern(t *testing.T) {
	const plain = `^[EtL|]*$`
	anyLayout := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", `tp: int, pp: int, vpp: int, layout: string`, "int", `"none"`))
	pat := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", fmt.Sprintf(`tp: int, pp: int, vpp: int, layout: =~%q`, plain), "int", `"none"`))
	want, ds := solve.Solve(anyLayout, solve.Options{Top: 1000})
	require.False(t, ds.HasErrors(), "%v", ds)
	got, ds := solve.Solve(pat, solve.Options{Top: 1000})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.Equal(t, len(want.Candidates), len(got.Candidates))
	repeated := 0
	for i, c := range got.Candidates {
		w := want.Candidates[i]
		assert.Equal(t, []int{w.Parallel.TP, w.Parallel.PP, w.Parallel.VPP, w.Train.MicroBatch}, []int{c.Parallel.TP, c.Parallel.PP, c.Parallel.VPP, c.Train.MicroBatch}, "rank %d", i+1)
		require.NotNil(t, c.Parallel.Layout, c.Label())
		assert.Regexp(t, plain, *c.Parallel.Layout, c.Label())
		if *w.Parallel.Layout != *c.Parallel.Layout {
			repeated++
		}
		assert.Equal(t, w.StepTimeS, c.StepTimeS, c.Label())
		pw, ds := compiler.Resolve("plan.cue", w.Spec, diag.NoPos)
		require.False(t, ds.HasErrors(), "%v", ds)
		pg, ds := compiler.Resolve("plan.cue", c.Spec, diag.NoPos)
		require.False(t, ds.HasErrors(), "%v", ds)
		assert.Equal(t, pw.Estimate.Pipeline.LayersPerStage, pg.Estimate.Pipeline.LayersPerStage, c.Label())
	}
	assert.Positive(t, repeated, "some plan writes a repeated layout when any string is allowed")

	// A constraint no layout meets: the rules reject every plan.
	none := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", `tp: int, pp: int, vpp: int, layout: =~"^(E|L|\\|)*$"`, "int", `"none"`))
	_, d := failedSearch(t, none)
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code, d.Message)
	assert.Contains(t, d.Message, "pipeline-layout rejects")
}

// TestRecomputeLayersBeyondInt16: the layers full recomputation reruns
// when parc chooses them may exceed 32,767 (the schema allows 65,536
// layers). They were an int16: a 40,000-layer model whose plan fits with
// the block method rerunning 32,846 layers got every layer rerun instead
// (105.4 s a step for 102 s).
func TestRecomputeLayersBeyondInt16(t *testing.T) {
	res := loadText(t, "plan.cue", `
model: {layers: 40000, hidden: 64, heads: 1, vocab: 1000, activation: "swiglu"}
cluster: {nodes: 1, gpus_per_node: 1, gpu: {name: "G", memory_gib: 100, bf16_tflops: 100}, nvlink_gbps: 100, network_gbps: 10}
parallel: {tp: 1, pp: 1}
train: {seq_length: 4096, micro_batch: 1, global_batch: 1, recompute: string, iters: 1}
`)
	r, ds := solve.Solve(res, solve.Options{Top: 1})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.NotEmpty(t, r.Candidates)
	c := r.Candidates[0]
	require.NotNil(t, c.Train.RecomputeLayers, c.Label())
	assert.Greater(t, *c.Train.RecomputeLayers, 32767, c.Label())
	assert.Less(t, *c.Train.RecomputeLayers, 40000, c.Label())
	// The layers fit the headroom, and one fewer does not.
	plan, ds := compiler.Resolve("plan.cue", c.Spec, diag.NoPos)
	require.False(t, ds.HasErrors(), "%v", ds)
	assert.LessOrEqual(t, float64(plan.Estimate.Memory.PerGPUPeakBytes), solve.DefaultMemoryHeadroom*float64(plan.Estimate.Memory.GPUBytes))
	fewer := *c.Spec
	k := *c.Train.RecomputeLayers - 1
	fewer.Train.RecomputeLayers = &k
	plan, ds = compiler.Resolve("plan.cue", &fewer, diag.NoPos)
	require.False(t, ds.HasErrors(), "%v", ds)
	assert.Greater(t, float64(plan.Estimate.Memory.PerGPUPeakBytes), solve.DefaultMemoryHeadroom*float64(plan.Estimate.Memory.GPUBytes))
}

// TestListedChoicesBounded: a disjunction of more module lists or layouts
// than parc searches is one error at the field. 600 module lists took 8 s
// to check and then overflowed a recomputation choice's index (then an int8)
// (a panic: "index out of range [-128]").
func TestListedChoicesBounded(t *testing.T) {
	names := []string{"core_attn", "layernorm", "mlp", "moe_act", "mla_up_proj"}
	var lists []string
	var perm func(prefix []string, rest []string)
	perm = func(prefix, rest []string) {
		if len(prefix) > 0 {
			q := make([]string, len(prefix))
			for i, n := range prefix {
				q[i] = fmt.Sprintf("%q", n)
			}
			lists = append(lists, "["+strings.Join(q, ", ")+"]")
		}
		for i, n := range rest {
			perm(append(slices.Clone(prefix), n), append(slices.Clone(rest[:i]), rest[i+1:]...))
		}
	}
	perm(nil, names)
	require.Greater(t, len(lists), 130)
	res := loadText(t, "plan.cue", strings.Replace(fmt.Sprintf(tiny, "80", `tp: int, pp: int`, "1", "string"),
		"distributed_optimizer: true}", "distributed_optimizer: true, recompute_modules: "+strings.Join(lists[:130], " | ")+"}", 1))
	_, ds := solve.Solve(res, solve.Options{})
	require.True(t, ds.HasErrors())
	assert.Equal(t, solve.CodeSearchTooLarge, ds[0].Code, "%v", ds)
	assert.Equal(t, "train.recompute_modules", ds[0].Path)
	assert.Contains(t, ds[0].Message, "lists 130 module lists")

	layouts := make([]string, 101)
	for i := range layouts {
		layouts[i] = fmt.Sprintf("%q", "E"+strings.Repeat("t", 1+i%7)+"|"+strings.Repeat("t", 7-i%7)+"L"+strings.Repeat(" ", i/7))
	}
	res = loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", `tp: int, pp: int, layout: `+strings.Join(layouts, " | "), "1", `"none"`))
	_, ds = solve.Solve(res, solve.Options{})
	require.True(t, ds.HasErrors())
	assert.Equal(t, solve.CodeSearchTooLarge, ds[0].Code, "%v", ds)
	assert.Equal(t, spec.LayoutPath, ds[0].Path)
}

// TestOpenLayoutDisjunction: a disjunction of layouts is searched as
// written: every candidate runs one of them, its vpp their stages over pp,
// and the pick is the fastest of the plans each layout gives alone.
func TestOpenLayoutDisjunction(t *testing.T) {
	ls := []string{"Et|tt|ttt|ttL", "Etttt|ttttL", "Etttttttt|L"}
	q := make([]string, len(ls))
	for i, l := range ls {
		q[i] = fmt.Sprintf("%q", l)
	}
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", `tp: int, pp: int, layout: `+strings.Join(q, " | "), "1", `"none"`))
	r, ds := solve.Solve(res, solve.Options{Top: 1000})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.NotEmpty(t, r.Candidates)
	for _, f := range spec.PipelineSplitFields {
		assert.NotContains(t, r.Implied, f.Path(), "the layouts place the layers")
	}
	best := 0.0
	for _, l := range ls {
		one := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", fmt.Sprintf(`tp: int, pp: int, layout: %q`, l), "1", `"none"`))
		r1, _ := solve.Solve(one, solve.Options{Top: 1})
		if len(r1.Candidates) > 0 && (best == 0 || r1.Candidates[0].StepTimeS < best) {
			best = r1.Candidates[0].StepTimeS
		}
	}
	for _, c := range r.Candidates {
		require.NotNil(t, c.Parallel.Layout, c.Label())
		assert.Contains(t, ls, *c.Parallel.Layout)
		pl, err := spec.ParsePipelineLayout(*c.Parallel.Layout)
		require.NoError(t, err)
		assert.Equal(t, len(pl.Stages), c.Parallel.PP*c.Parallel.VPP, c.Label())
	}
	assert.InDelta(t, best, r.Candidates[0].StepTimeS, best*solve.DefaultNoiseBand, "the pick against the best layout solved alone")
}

// TestOpenLayoutBesideOpenSplit: a layout excludes the split fields, so
// both open is an error at the layout, and a split field set beside an open
// layout an error at that field, before any search.
func TestOpenLayoutBesideOpenSplit(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", `tp: int, pp: int, layout: string, first_stage_layers: int`, "1", `"none"`))
	r, ds := solve.Solve(res, solve.Options{})
	assert.Nil(t, r)
	require.True(t, ds.HasErrors())
	assert.Equal(t, solve.CodeOpenNoValue, ds[0].Code)
	assert.Equal(t, spec.LayoutPath, ds[0].Path)
	assert.Contains(t, ds[0].Message, "parallel.first_stage_layers")

	res = loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", `tp: int, pp: int, layout: string, account_for_loss: true`, "1", `"none"`))
	r, ds = solve.Solve(res, solve.Options{})
	assert.Nil(t, r)
	require.True(t, ds.HasErrors())
	assert.Equal(t, solve.CodeOpenNoValue, ds[0].Code)
	assert.Equal(t, "parallel.account_for_loss", ds[0].Path)
}

// TestOpenRecomputeModules: with train.recompute_modules open parc chooses
// the list selective recomputation reruns among those the model can use
// (grouped-GEMM experts: Megatron's default, moe_act, layernorm+moe_act),
// and the pick is the fastest of the plans each list gives alone; beside
// another recomputation the list is left out, as Megatron ignores it.
func TestOpenRecomputeModules(t *testing.T) {
	moe := strings.Replace(tinyMoE, "shared_ffn_hidden: 64}", "shared_ffn_hidden: 64, grouped_gemm: true}", 1)
	text := func(rc, mods string) string {
		return strings.Replace(fmt.Sprintf(moe, "ep: int, pp: 2", "int"), `recompute: "none"`, fmt.Sprintf("recompute: %s, recompute_modules: %s", rc, mods), 1)
	}
	lists := []string{`["core_attn"]`, `["moe_act"]`, `["layernorm", "moe_act"]`}
	best := 0.0
	for _, l := range lists {
		r1, ds := solve.Solve(loadText(t, "plan.cue", text(`"selective"`, l)), solve.Options{Top: 1})
		require.False(t, ds.HasErrors(), "%s: %v", l, ds)
		if best == 0 || r1.Candidates[0].StepTimeS < best {
			best = r1.Candidates[0].StepTimeS
		}
	}
	for _, mods := range []string{`[...string]`, strings.Join(lists, " | ")} {
		r, ds := solve.Solve(loadText(t, "plan.cue", text(`"selective"`, mods)), solve.Options{Top: 1000})
		require.False(t, ds.HasErrors(), "%s: %v", mods, ds)
		assert.Contains(t, r.Open, spec.RecomputeModulesPath)
		seen := map[string]bool{}
		for _, c := range r.Candidates {
			require.NotEmpty(t, c.Spec.Train.RecomputeModules, c.Label())
			seen[strings.Join(c.Spec.Train.RecomputeModules, ",")] = true
			for _, v := range c.Variants {
				seen[strings.Join(v.Train.RecomputeModules, ",")] = true
			}
		}
		assert.Subset(t, []string{"core_attn", "moe_act", "layernorm,moe_act"}, slices.Sorted(maps.Keys(seen)), mods)
		assert.Greater(t, len(seen), 1, "%s: the candidates run more than one list", mods)
		assert.Equal(t, best, r.Candidates[0].StepTimeS, "%s: the pick against the best list solved alone", mods)
	}
	r, ds := solve.Solve(loadText(t, "plan.cue", text(`"none"`, `[...string]`)), solve.Options{Top: 3})
	require.False(t, ds.HasErrors(), "%v", ds)
	for _, c := range r.Candidates {
		assert.Nil(t, c.Spec.Train.RecomputeModules, c.Label())
	}
}

// TestOpenDerivedParallel: parallel.dp and parallel.sp left open follow each
// plan as when they are not written (dp the GPUs over tp·cp·pp, sp on with
// tp > 1): the same plans at the same step times, less those whose dp the
// constraint does not allow.
func TestOpenDerivedParallel(t *testing.T) {
	moe := fmt.Sprintf(tinyMoE, "tp: int, ep: int, pp: 1%s", "1")
	written, ds := solve.Solve(loadText(t, "plan.cue", fmt.Sprintf(moe, "")), solve.Options{Top: 1000})
	require.False(t, ds.HasErrors(), "%v", ds)
	for _, open := range []string{", sp: bool", ", dp: int", ", dp: >=2", ", dp: int, sp: bool"} {
		r, ds := solve.Solve(loadText(t, "plan.cue", fmt.Sprintf(moe, open)), solve.Options{Top: 1000})
		require.False(t, ds.HasErrors(), "%s: %v", open, ds)
		var want []solve.Candidate
		for _, c := range written.Candidates {
			if !strings.Contains(open, ">=2") || c.Parallel.DP >= 2 {
				want = append(want, c)
			}
		}
		require.Equal(t, len(want), len(r.Candidates), "%s:\n%s", open, strings.Join(labels(r.Candidates), "\n"))
		for i, c := range r.Candidates {
			assert.Equal(t, want[i].Label(), c.Label(), open)
			assert.Equal(t, want[i].StepTimeS, c.StepTimeS, open)
			assert.Equal(t, c.Parallel.TP > 1, c.Parallel.SP, "%s: %s", open, c.Label())
			if strings.Contains(open, "dp") {
				require.NotNil(t, c.Spec.Parallel.DP, open)
				assert.Equal(t, c.Parallel.DP, *c.Spec.Parallel.DP, open)
			}
		}
		if strings.Contains(open, "sp") {
			assert.Contains(t, r.Open, spec.SequenceParallelPath, open)
		}
	}
}

// TestOpenFullRecompute: train.recompute_method and train.recompute_layers
// left open with full recomputation: the pick is the fastest of the plans
// each written choice gives (block of k layers for every k, uniform), and
// runs the fewest block layers that fit; with the layers written both
// methods are tried; beside another recomputation they are left out.
func TestOpenFullRecompute(t *testing.T) {
	big := strings.Replace(tiny, "hidden: 256", "hidden: 2048", 1)
	text := func(mem, fields string) string {
		// At 2.37 GiB only a block of 2 layers or more fits tp 1, pp 1
		// within the headroom (peaks 2.145 GiB with 1, 2.118 with 2).
		par := map[string]string{"80": "tp: 1 | 2, pp: 1 | 2", "2.37": "tp: 1, pp: 1"}[mem]
		return strings.Replace(fmt.Sprintf(big, mem, par, "1", `"full"`), `recompute: "full"`, `recompute: "full", `+fields, 1)
	}
	for _, mem := range []string{"80", "2.37"} {
		best := 0.0
		for _, fields := range []string{`recompute_method: "uniform", recompute_layers: 1`, `recompute_method: "block", recompute_layers: 1`,
			`recompute_method: "block", recompute_layers: 2`, `recompute_method: "block", recompute_layers: 3`, `recompute_method: "block", recompute_layers: 4`,
			`recompute_method: "block", recompute_layers: 8`} {
			r, _ := solve.Solve(loadText(t, "plan.cue", text(mem, fields)), solve.Options{Top: 1})
			if r == nil || len(r.Candidates) == 0 || r.Candidates[0].Memory.FractionOfGPU > solve.DefaultMemoryHeadroom {
				continue // a search keeps its picks within the headroom
			}
			if best == 0 || r.Candidates[0].StepTimeS < best {
				best = r.Candidates[0].StepTimeS
			}
		}
		require.NotZero(t, best, mem)
		for _, fields := range []string{`recompute_method: string, recompute_layers: int`, `recompute_layers: int`, `recompute_method: "block", recompute_layers: >=1`} {
			r, ds := solve.Solve(loadText(t, "plan.cue", text(mem, fields)), solve.Options{Top: 3})
			require.False(t, ds.HasErrors(), "%s %s: %v", mem, fields, ds)
			assert.Contains(t, r.Open, spec.RecomputeLayersPath, fields)
			assert.Equal(t, best, r.Candidates[0].StepTimeS, "%s GiB, %s: the pick against the best written choice", mem, fields)
			for _, c := range r.Candidates {
				assert.Equal(t, "full", c.Spec.Train.Recompute)
				require.NotNil(t, c.Spec.Train.RecomputeLayers, c.Label())
			}
		}
	}
	r, ds := solve.Solve(loadText(t, "plan.cue", text("80", `recompute_method: string, recompute_layers: 2`)), solve.Options{Top: 1000})
	require.False(t, ds.HasErrors(), "%v", ds)
	methods := map[string]bool{}
	for _, c := range r.Candidates {
		methods[c.Spec.Train.RecomputeMethod] = true
		for _, v := range c.Variants {
			methods[v.Train.RecomputeMethod] = true
		}
	}
	assert.Equal(t, map[string]bool{"block": true, "uniform": true}, methods, "both methods tried with the layers written")
	none := strings.Replace(text("80", `recompute_method: string, recompute_layers: int`), `recompute: "full"`, `recompute: "none"`, 1)
	r, ds = solve.Solve(loadText(t, "plan.cue", none), solve.Options{Top: 3})
	require.False(t, ds.HasErrors(), "%v", ds)
	for _, c := range r.Candidates {
		assert.Nil(t, c.Spec.Train.RecomputeLayers, c.Label())
	}
}

// TestCandidatesAreDistinctShapes: the candidates of the acceptance specs
// are distinct parallel shapes (tp, pp, cp, ep, etp), the top K of them; a
// shape's other virtual-stage counts and pipeline splits are among its
// variants, each with its vpp and split.
func TestCandidatesAreDistinctShapes(t *testing.T) {
	for _, name := range []string{"acceptance/llama3-405b-16k", "acceptance/llama3-405b-1k"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".cue"))
		require.NoError(t, err)
		r, ds := solve.Solve(loadText(t, "plan.cue", string(data)), solve.Options{Top: 5})
		require.False(t, ds.HasErrors(), "%v", ds)
		require.Len(t, r.Candidates, 5, name)
		seen := map[[5]int]bool{}
		splits, vpps := 0, 0
		for _, c := range r.Candidates {
			p := c.Parallel
			k := [5]int{p.TP, p.PP, p.CP, p.EP, p.ETP}
			assert.False(t, seen[k], "%s: %s listed twice", name, c.Label())
			seen[k] = true
			for _, v := range c.Variants {
				if v.Split != nil {
					splits++
				}
				if v.VPP != nil {
					vpps++
					assert.NotEqual(t, p.VPP, *v.VPP, "%s: %s", name, c.Label())
				}
			}
		}
		assert.Positive(t, splits, "%s: a shape's other splits are variants", name)
		assert.Positive(t, vpps, "%s: a shape's other virtual-stage counts are variants", name)
		assert.GreaterOrEqual(t, r.Shapes, len(r.Candidates))
	}
}
