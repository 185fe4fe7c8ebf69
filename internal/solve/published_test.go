package solve_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/solve"
)

var publishedLine = regexp.MustCompile(`(?m)^// published: (.*)$`)

// publishedValues reads the "// published: tp=8 pp=16 ..." line of a
// testdata/published spec: the values its source gives for the open fields
// (and for settings that hold only with them, such as sp=true).
func publishedValues(t *testing.T, text string) map[string]any {
	m := publishedLine.FindStringSubmatch(text)
	require.NotNil(t, m, "no // published: line")
	out := map[string]any{}
	for _, kv := range strings.Fields(m[1]) {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, kv)
		path := "parallel." + k
		if k == "micro_batch" || k == "recompute" {
			path = "train." + k
		}
		if n, err := strconv.Atoi(v); err == nil {
			out[path] = n
		} else if b, err := strconv.ParseBool(v); err == nil {
			out[path] = b
		} else {
			out[path] = v
		}
	}
	return out
}

// withValues is res with the given open fields made concrete, as if the user
// had written them.
func withValues(res *load.Result, values map[string]any) *load.Result {
	r := *res
	for p, v := range values {
		r.User = r.User.FillPath(cue.ParsePath(p), v)
	}
	r.Plan = r.User.Unify(res.Schema)
	return &r
}

// knownMisses are the testdata/published configurations whose published
// plan parc's model rates more than 10% slower than its own pick today
// (issue 14 is open for them), with the ratio and its cause. "Memory" means:
// the memory model puts the published plan without recomputation above the
// GPU, so the published plan is charged the least
// full recomputation that fits (the first k layers of each model chunk,
// Megatron's block method); with the memory limit lifted (memory_gib: 160
// for both) the published plan is within 10% of the pick, so the search and
// the step-time model agree with the experts there.
var knownMisses = map[string]bool{
	// 1.259 (fp8 blockwise, bf16 Adam moments, as §3.3 ran; the flex
	// dispatcher with node-limited routing, as §3.2.2 ran: 1.377 with
	// Megatron's alltoall dispatcher, which sends a token once per expert
	// instead of once per node). The published plan (34.2 s) waits 10.3 s
	// on its expert all-to-all: ep 64 spans 8 nodes, and DeepSeek's DualPipe
	// (§3.2.1, not in Megatron-LM) hides that under another microbatch's
	// compute. Megatron's counterpart, overlap_moe_expert_parallel_comm
	// with delay_wgrad_compute, needs vpp > 1 with pp > 1 and no full
	// recomputation (transformer_config.py at d98e8a64). Memory: without
	// full recomputation the 1F1B schedule holds 16 microbatches on stage
	// 1 (81.4 GiB with DeepSeek's own recompute list, layernorm,
	// mla_up_proj, moe_act), so the published plan is charged full
	// recomputation of 2 of each stage's 4 layers; DeepSeek stored the
	// activations beyond the GEMM inputs in FP8/E5M6 (§3.3.3), which
	// Megatron-LM at d98e8a64 has no option for.
	"deepseek-v3-2048-h800": true,
}

// TestPublishedPlans: on training configurations published by papers and
// vendors' recipes (testdata/published, each citing its source), with every
// degree open, and the micro batch and the recompute mode open where the
// source does not give them, parc solve finds a plan and rates the
// published one within 10% of its pick (knownMisses aside). What a source
// says the run used (Narayanan et al. 2021: full recomputation, no sequence
// parallelism) is written in its spec, so both plans are rated with it.
// The published plan must pass every check: where its source leaves a field
// unsaid (recompute, vpp, micro batch), the best value the checks allow is
// taken. It ran, so its peak need only fit the GPU (MemoryHeadroom 1, as
// TestPublishedCorpus rates the corpus's published plans); the solver's
// default headroom is a margin for its own picks. Its step time is checked against compiler.Resolve on the spec with
// those values written in.
func TestPublishedPlans(t *testing.T) {
	if testing.Short() {
		t.Skip("solves the published configurations of testdata/published")
	}
	files, err := filepath.Glob("testdata/published/*.cue")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".cue"), func(t *testing.T) {
			text, err := os.ReadFile(f)
			require.NoError(t, err)
			res, ds := load.Load(load.Source{Path: f})
			require.NotNil(t, res, "%v", ds)
			require.Contains(t, res.Open(), "parallel.tp")

			top, ds := solve.Solve(res, solve.Options{Top: 5})
			require.False(t, ds.HasErrors(), "%v", ds)
			require.NotEmpty(t, top.Candidates)

			pub := publishedValues(t, string(text))
			best, ds := solve.Solve(withValues(res, pub), solve.Options{Top: 1, MemoryHeadroom: 1})
			require.False(t, ds.HasErrors(), "the published plan %v does not pass parc's checks: %v", pub, ds)
			require.Len(t, best.Candidates, 1)
			p := best.Candidates[0]

			// The published plan's numbers are what the compiler gives it.
			spec := p.Spec
			plan, ds := compiler.Resolve(f, spec, diag.NoPos)
			require.False(t, ds.HasErrors(), "%v", ds)
			assert.InEpsilon(t, plan.Estimate.StepTimeS, p.StepTimeS, 1e-11)

			// Issue 14's acceptance: parc rates the published plan (one that
			// ran on a real cluster) within 10% of its own pick. The
			// solver's pick is never rated slower than the published plan
			// beyond the noise band, so the test can only fail one way: the
			// model thinks experts leave time on the table. knownMisses
			// names the configurations where it does today; a listed one
			// that comes within 10% fails too, so the list only shrinks.
			ratio := p.StepTimeS / top.Candidates[0].StepTimeS
			name := strings.TrimSuffix(filepath.Base(f), ".cue")
			t.Logf("published %s: %.4g s/step; pick %s: %.4g s/step; published/pick %.3f",
				p.Label(), p.StepTimeS, top.Candidates[0].Label(), top.Candidates[0].StepTimeS, ratio)
			switch {
			case ratio > 1.10 && !knownMisses[name]:
				t.Errorf("parc rates the published plan %.1f%% slower than its pick (limit 10%%)", 100*(ratio-1))
			case ratio <= 1.10 && knownMisses[name]:
				t.Errorf("now within 10%% of the pick (%.3f): remove %s from knownMisses", ratio, name)
			}
		})
	}
}

// TestLeastRecomputeThatFits: with train.recompute open and no
// recompute_method or recompute_layers written, parc charges a plan that
// does not fit without recomputation the least full recomputation that
// fits: the first k layers of each model chunk (Megatron's block method),
// where k−1 layers would leave the peak above the headroom and k does not.
// NeMo's Llama 3 70B plan (tp4 pp4 vpp5 cp2 on 32 H100, 4 layers per
// chunk) does not fit without recomputation (nemo-llama3-70b.cue).
func TestLeastRecomputeThatFits(t *testing.T) {
	f := "testdata/published/nemo-llama3-70b.cue"
	res, ds := load.Load(load.Source{Path: f})
	require.NotNil(t, res, "%v", ds)
	// Gradients reduced in fp32 (not the bf16 default): the plan then fits
	// only with some of its layers recomputed.
	pub := map[string]any{"parallel.tp": 4, "parallel.pp": 4, "parallel.vpp": 5, "parallel.cp": 2, "parallel.ep": 1, "train.micro_batch": 1,
		"train.grad_reduce_in_bf16": false}
	r, ds := solve.Solve(withValues(res, pub), solve.Options{Top: 1})
	require.False(t, ds.HasErrors(), "%v", ds)
	require.NotEmpty(t, r.Candidates)
	c := r.Candidates[0]
	require.Equal(t, "full", c.Train.Recompute, c.Label())
	require.NotNil(t, c.Train.RecomputeLayers, c.Label())
	k := *c.Train.RecomputeLayers
	require.Less(t, k, 4, "block recomputation of fewer layers than a chunk holds")
	assert.Equal(t, "block", c.Spec.Train.RecomputeMethod)
	assert.Contains(t, r.Implied, "train.recompute_layers")

	fraction := func(k int) float64 {
		s := *c.Spec
		if k == 0 {
			s.Train.Recompute = "none"
		} else {
			s.Train.RecomputeLayers = &k
		}
		p, ds := compiler.Resolve(f, &s, diag.NoPos)
		require.NotNil(t, p, "%v", ds)
		return p.Estimate.Memory.FractionOfGPU
	}
	assert.LessOrEqual(t, fraction(k), r.MemoryHeadroom, "k=%d fits", k)
	assert.Greater(t, fraction(k-1), r.MemoryHeadroom, "k−1=%d does not fit", k-1)
}
