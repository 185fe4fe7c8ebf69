package solve_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
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
	tuple []int
}

var modes = []string{"none", "selective", "full"}

// bruteForce tries every value in values[path] for each open path (a
// degree's values are 1..n, including the ones the rules reject), runs the
// whole compiler on each, and ranks the plans without errors the way parc
// solve documents: step time (12 significant digits), then tp·pp·cp, then
// peak memory, then tp, cp, pp, ep, etp, vpp, micro_batch, recompute.
func bruteForce(t *testing.T, res *load.Result, values map[string][]any) []plan {
	t.Helper()
	open := res.Open()
	// Decode once with the first values; vary the Go struct after.
	v := res.Plan
	for _, p := range open {
		v = v.FillPath(cue.ParsePath(p), values[p][0])
	}
	base, ds := res.DecodeValue(v)
	require.NotNil(t, base, "%v", ds)
	var out []plan
	var rec func(i int, s spec.Spec)
	rec = func(i int, s spec.Spec) {
		if i == len(open) {
			p, ds := compiler.Resolve("plan.cue", &s, diag.NoPos)
			if ds.HasErrors() {
				return
			}
			e := p.Estimate
			etp := 0
			if s.Parallel.ETP != nil {
				etp = *s.Parallel.ETP
			}
			out = append(out, plan{
				label: fmt.Sprintf("tp=%d pp=%d vpp=%d cp=%d ep=%d etp=%d dp=%d micro_batch=%d recompute=%s",
					s.Parallel.TP, s.Parallel.PP, s.Parallel.VPP, s.Parallel.CP, s.Parallel.EP, p.Derived.ETP, p.Derived.DP,
					s.Train.MicroBatch, s.Train.Recompute),
				step:  round12(e.StepTimeS),
				model: s.Parallel.TP * s.Parallel.PP * s.Parallel.CP,
				peak:  e.Memory.PerGPUPeakBytes,
				tuple: []int{s.Parallel.TP, s.Parallel.CP, s.Parallel.PP, s.Parallel.EP, etp, s.Parallel.VPP,
					s.Train.MicroBatch, slices.Index(modes, s.Train.Recompute)},
			})
			return
		}
		for _, x := range values[open[i]] {
			c := s
			switch open[i] {
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
			}
			rec(i+1, c)
		}
	}
	rec(0, *base)
	slices.SortStableFunc(out, func(a, b plan) int {
		switch {
		case a.step != b.step:
			return cmpF(a.step, b.step)
		case a.model != b.model:
			return a.model - b.model
		case a.peak != b.peak:
			return cmpF(float64(a.peak), float64(b.peak))
		}
		return slices.Compare(a.tuple, b.tuple)
	})
	return out
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
		{"dense tp cp pp, memory-bound", fmt.Sprintf(tiny, "0.02", "tp: int, cp: int, pp: int", "int", `"none"`),
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := loadText(t, "plan.cue", tc.text)
			want := bruteForce(t, res, tc.values)
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
				require.Len(t, r.Candidates, n)
				for i, c := range r.Candidates {
					assert.Equal(t, want[i].label, c.Label(), "rank %d of top %d", i+1, top)
					assert.Equal(t, want[i].step, c.StepTimeS, "rank %d: %s", i+1, c.Label())
					assert.Equal(t, want[i].peak, c.Memory.PerGPUPeakBytes, "rank %d: %s", i+1, c.Label())
				}
				assert.LessOrEqual(t, r.Pruned+r.Bounded+int64(r.Evaluated), r.Space)
			}
			t.Logf("%d feasible plans", len(want))
		})
	}
}

// TestBoundChangesNothing: with and without the bound, the same candidates.
func TestBoundChangesNothing(t *testing.T) {
	mixtral16, err := os.ReadFile("testdata/mixtral-64.cue")
	require.NoError(t, err)
	for f, data := range map[string][]byte{
		"testdata/mixtral-16.cue":    []byte(strings.Replace(string(mixtral16), "nodes: 8", "nodes: 2", 1)),
		"testdata/llama3-70b-64.cue": nil,
	} {
		res, ds := load.Load(load.Source{Path: f, Data: data})
		require.NotNil(t, res, "%v", ds)
		a, _ := solve.Solve(res, solve.Options{Top: 8})
		b, _ := solve.Solve(res, solve.Options{Top: 8, Exhaustive: true})
		require.NotEmpty(t, a.Candidates)
		assert.Equal(t, labels(b.Candidates), labels(a.Candidates), f)
		assert.Less(t, a.Evaluated, b.Evaluated, "the bound should spare estimates: %s", f)
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
	want := bruteForce(t, res, map[string][]any{"parallel.tp": upTo(8), "parallel.etp": upTo(8), "parallel.ep": upTo(8)})
	var same []plan
	for _, p := range want {
		if strings.Contains(p.label, fmt.Sprintf("tp=%d ", p.tuple[0])) && p.tuple[0] == p.tuple[4] {
			same = append(same, p)
		}
	}
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

func TestNoFeasiblePlanMemory(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "0.001", "tp: int, pp: int", "int", "string"))
	r, ds := solve.Solve(res, solve.Options{})
	require.NotNil(t, r)
	assert.Empty(t, r.Candidates)
	require.True(t, ds.HasErrors())
	d := ds[len(ds)-1]
	assert.Equal(t, solve.CodeNoFeasiblePlan, d.Code)
	assert.Equal(t, "parallel.tp", d.Path)
	assert.Contains(t, d.Message, "memory-exceeds-gpu rejects")
	assert.Contains(t, d.Message, "the least memory among the plans estimated is")
	assert.Contains(t, d.Hint, "add nodes")
	assert.Equal(t, 10, d.Line, "at the user's parallel.tp")
}

// TestSharedErrorReportedAsIs: an error no open field can fix (a warm-up
// longer than training) is reported where the user can fix it, not as
// no-feasible-plan only.
func TestSharedErrorReportedAsIs(t *testing.T) {
	text := strings.Replace(fmt.Sprintf(tiny, "80", "tp: int", "1", `"none"`), "iters: 10, ", "iters: 10, lr_warmup_iters: 20, ", 1)
	res := loadText(t, "plan.cue", text)
	r, ds := solve.Solve(res, solve.Options{})
	require.NotNil(t, r)
	assert.Empty(t, r.Candidates)
	var got []string
	for _, d := range ds {
		got = append(got, d.Code)
	}
	assert.Contains(t, got, "lr-warmup")
	assert.Contains(t, got, solve.CodeNoFeasiblePlan)
}

func TestOpenFieldWithoutValue(t *testing.T) {
	res := loadText(t, "plan.cue", fmt.Sprintf(tiny, "80", "tp: >5000 & <5001", "1", `"none"`))
	r, ds := solve.Solve(res, solve.Options{})
	assert.Nil(t, r)
	require.Len(t, ds, 1)
	assert.Equal(t, solve.CodeOpenNoValue, ds[0].Code)
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
	assert.Equal(t, []string{"parallel.tp", "parallel.pp"}, choice.Open)
	assert.Equal(t, r.Candidates[0].Parallel.TP, s.Parallel.TP)
	assert.Equal(t, r.Candidates[0].Parallel.PP, s.Parallel.PP)
}
