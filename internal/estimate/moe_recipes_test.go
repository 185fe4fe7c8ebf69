package estimate_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/importer/megatron"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/testenv"
)

// moeRecipesReport is the generated table of TestMoERecipesOutOfSample;
// moeRecipesSpecs holds the spec each rated recipe imports as.
const (
	moeRecipesReport = "testdata/calibration/moe-recipes.md"
	moeRecipesSpecs  = "testdata/moe-recipes"
)

type recipeResult struct {
	name               string
	gpus               int
	measured, parcTF   float64
	err                float64 // estimated / measured tokens per second − 1
	acc                *estimate.Accuracy
	refused            string
	inBand, inExtremes bool
	// spec is the imported spec the recipe is estimated as
	// (testdata/moe-recipes/NAME.cue, which the solver's check reads).
	spec string
}

// TestMoERecipesOutOfSample rates Megatron-LM's MoE recipes
// (examples/moe_recipes on its dev branch at e5ad0980, 2026-06-15: DeepSeek-V3,
// Qwen3-235B-A22B and Qwen3-30B-A3B on H100, B200, B300, GB200 and GB300,
// each a full Megatron argument list with the median model TFLOP/s per GPU
// its README measured), none of them in the measured corpus or the fit:
// the import corpus holds them as argument lists
// (internal/importer/megatron/testdata/corpus/mlm_moe_recipe_*.args, each
// header naming its source, environment, cluster and the substitutions
// parc's Megatron commit needs). Each is imported as a user would import
// the recipe's launch line, estimated on its cluster, and compared with the
// measurement: the worst-error target (25%) must hold on them, and
// the generated report says where each error falls against the accuracy
// explain prints for that kind of plan. The spec each recipe imports as is
// kept in testdata/moe-recipes (the solver's out-of-sample check,
// internal/solve TestMoERecipesSolved, opens its degrees).
func TestMoERecipesOutOfSample(t *testing.T) {
	files, err := filepath.Glob("../importer/megatron/testdata/corpus/mlm_moe_recipe_*.args")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	var rs []recipeResult
	for _, f := range files {
		rs = append(rs, rateRecipe(t, f))
	}
	var errs []float64
	for _, r := range rs {
		if r.refused != "" {
			continue
		}
		errs = append(errs, math.Abs(r.err))
		if math.Abs(r.err) > 0.25 {
			t.Errorf("%s: estimated %.1f model TFLOP/s per GPU, measured %.1f (%+.1f%%): beyond the 25%% worst-error target", r.name, r.parcTF, r.measured, 100*r.err)
		}
	}
	require.GreaterOrEqual(t, len(errs), 10, "too few recipes rated")
	out := map[string]string{moeRecipesReport: moeRecipesTable(rs)}
	for _, r := range rs {
		if r.spec != "" {
			out[filepath.Join(moeRecipesSpecs, r.name+".cue")] = r.spec
		}
	}
	for path, text := range out {
		if updateFlag() {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(want), text, "%s is stale: go test ./internal/estimate -run TestMoERecipesOutOfSample -update", path)
	}
}

// rateRecipe imports and estimates one recipe file.
func rateRecipe(t *testing.T, f string) recipeResult {
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	h := testenv.ArgsHeader(string(b))
	r := recipeResult{name: strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "mlm_moe_recipe_"), ".args")}
	m := strings.Fields(first(h["measured"]))
	require.NotEmpty(t, m, "%s: no measured header", f)
	r.measured, err = strconv.ParseFloat(m[0], 64)
	require.NoError(t, err)
	if exp := first(h["expect"]); exp != "round-trip" {
		r.refused = exp
		return r
	}
	o, err := megatron.HeaderOptions(f, h)
	require.NoError(t, err)
	res := megatron.Import(b, o)
	require.NotNil(t, res.Spec, "%s: %v", f, res.Diags)
	text := string(res.Spec)
	if v := strings.Fields(first(h["nvlink-domain"])); len(v) > 0 {
		// Each expert-parallel group inside one NVLink domain, as a
		// Slurm segment of that many GPUs places it.
		domain, err := strconv.Atoi(v[0])
		require.NoError(t, err)
		text += fmt.Sprintf("\n// The header's NVLink domain: each expert-parallel group in one, a Slurm segment of its nodes.\ncluster: nvlink_domain: %d\ncluster: slurm: segment: %d\n", domain, min(domain/o.GPUsPerNode, o.Nodes))
	}
	r.spec = text
	lr, ds := load.Load(load.Source{Path: filepath.Join(t.TempDir(), "recipe.cue"), Data: []byte(text)})
	require.False(t, ds.HasErrors(), "%s: %v", f, ds)
	s, ds := lr.Decode()
	require.False(t, ds.HasErrors(), "%s: %v", f, ds)
	d := spec.Derive(s)
	e, ds := estimate.Run(s, d, estimate.DefaultLinks(s, d), diag.NoPos)
	require.NotNil(t, e, "%s: %v", f, ds)
	r.gpus = d.World
	measuredStep := e.FLOPsPerStep / (r.measured * 1e12 * float64(d.World))
	r.err = measuredStep/e.StepTimeS - 1
	r.parcTF = e.FLOPsPerStep / e.StepTimeS / float64(d.World) / 1e12
	r.acc = estimate.AccuracyOf(s)
	if a := r.acc; a != nil {
		r.inBand = r.err >= a.P10Error && r.err <= a.P90Error
		r.inExtremes = r.err >= a.LowestError && r.err <= a.HighestError
	}
	return r
}

func first(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// moeRecipesTable is the report of TestMoERecipesOutOfSample.
func moeRecipesTable(rs []recipeResult) string {
	var b strings.Builder
	b.WriteString("# Megatron-LM's MoE recipes: estimated vs measured, out of sample\n\n")
	b.WriteString("Generated by `go test ./internal/estimate -run TestMoERecipesOutOfSample -update`; do not edit.\n\n")
	b.WriteString("Megatron-LM's `examples/moe_recipes` (dev branch at e5ad0980, 2026-06-15) publishes full argument lists of\n")
	b.WriteString("MoE training runs with the median model TFLOP/s per GPU each measured (Megatron-LM's `--log-throughput`).\n")
	b.WriteString("None is in the measured corpus or the fit. Each is imported from its argument list with `parc import megatron`\n")
	b.WriteString("(`internal/importer/megatron/testdata/corpus/mlm_moe_recipe_*.args`: source, environment, cluster and the\n")
	b.WriteString("substitutions parc's Megatron commit needs in each header), estimated on its cluster and compared; *error* is\n")
	b.WriteString("estimated / measured tokens per second − 1 (negative: the run was faster than estimated). *explain's accuracy*\n")
	b.WriteString("is the line `parc explain` prints for the plan (`accuracy`: the signed error over the corpus runs of its kind of\n")
	b.WriteString("model and GPU: median, 10th–90th percentile, extremes).\n\n")
	b.WriteString("| recipe | GPUs | measured TFLOP/s/GPU | parc | error | explain's accuracy: median, 10th–90th percentile (extremes) | within |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|---|\n")
	var errs []float64
	band, extremes, rated := 0, 0, 0
	pct := func(x float64) string { return fmt.Sprintf("%+.1f%%", 100*x) }
	for _, r := range rs {
		if r.refused != "" {
			fmt.Fprintf(&b, "| %s |  | %.1f |  |  | not rated: %s |  |\n", r.name, r.measured, r.refused)
			continue
		}
		rated++
		errs = append(errs, math.Abs(r.err))
		acc, within := "none", ""
		if a := r.acc; a != nil {
			acc = fmt.Sprintf("%s, %s to %s (%s to %s) over %d runs", pct(a.MedianError), pct(a.P10Error), pct(a.P90Error), pct(a.LowestError), pct(a.HighestError), a.Runs)
			switch {
			case r.inBand:
				within, band, extremes = "10th–90th", band+1, extremes+1
			case r.inExtremes:
				within, extremes = "extremes", extremes+1
			default:
				within = "outside"
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %s | %s | %s |\n", r.name, r.gpus, r.measured, r.parcTF, pct(r.err), acc, within)
	}
	slices.Sort(errs)
	med := errs[len(errs)/2]
	if len(errs)%2 == 0 {
		med = (errs[len(errs)/2-1] + errs[len(errs)/2]) / 2
	}
	fmt.Fprintf(&b, "\n%d recipes rated: median |error| %.1f%%, worst %.1f%% (targets on rows not used for fitting: 10%%, 25%%); %d within explain's 10th–90th percentile, %d within its extremes.\n",
		rated, 100*med, 100*errs[len(errs)-1], band, extremes)
	return b.String()
}
