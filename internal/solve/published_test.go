package solve_test

import (
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
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/solve"
)

var publishedLine = regexp.MustCompile(`(?m)^// published: (.*)$`)

// publishedValues reads the "// published: tp=8 pp=16 ..." line of a
// testdata/published spec: the values its source gives for the open fields.
func publishedValues(t *testing.T, text string) map[string]any {
	m := publishedLine.FindStringSubmatch(text)
	require.NotNil(t, m, "no // published: line")
	out := map[string]any{}
	for _, kv := range strings.Fields(m[1]) {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, kv)
		n, err := strconv.Atoi(v)
		path := "parallel." + k
		if k == "micro_batch" || k == "recompute" {
			path = "train." + k
		}
		if err != nil {
			out[path] = v
		} else {
			out[path] = n
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

// TestPublishedPlans: on training configurations published by papers and
// vendors' recipes (testdata/published, each citing its source), with every
// degree, the micro batch and the recompute mode open, parc solve's top 5
// holds the published plan or plans the cost model rates at least as good.
// The published plan must pass every check: where its source leaves a field
// unsaid (recompute, vpp, micro batch), the best value the checks allow is
// taken. Its step time is checked against compiler.Resolve on the spec with
// those values written in.
func TestPublishedPlans(t *testing.T) {
	if testing.Short() {
		t.Skip("solves 16 published configurations")
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
			best, ds := solve.Solve(withValues(res, pub), solve.Options{Top: 1})
			require.False(t, ds.HasErrors(), "the published plan %v does not pass parc's checks: %v", pub, ds)
			require.Len(t, best.Candidates, 1)
			p := best.Candidates[0]

			// The published plan's numbers are what the compiler gives it.
			spec := p.Spec
			plan, ds := compiler.Resolve(f, spec, diag.NoPos)
			require.False(t, ds.HasErrors(), "%v", ds)
			assert.InEpsilon(t, plan.Estimate.StepTimeS, p.StepTimeS, 1e-11)

			var labels []string
			for _, c := range top.Candidates {
				labels = append(labels, c.Label())
			}
			inTop := slices.Contains(labels, p.Label())
			atLeastAsGood := top.Candidates[0].StepTimeS <= p.StepTimeS
			assert.True(t, inTop || atLeastAsGood,
				"published %s (%.4g s) is not in the top 5 and nothing there is rated at least as good:\n%s",
				p.Label(), p.StepTimeS, strings.Join(labels, "\n"))
			rank := slices.Index(labels, p.Label()) + 1
			t.Logf("published %s: %.4g s/step (rank %d in the top 5; 0 = below); best %s: %.4g s/step (%+.1f%% vs published)",
				p.Label(), p.StepTimeS, rank, top.Candidates[0].Label(), top.Candidates[0].StepTimeS,
				100*(top.Candidates[0].StepTimeS-p.StepTimeS)/p.StepTimeS)
		})
	}
}
