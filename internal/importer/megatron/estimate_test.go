package megatron

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/measured"
	"parc.dev/parc/internal/spec"
	mg "parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/targets/template"
)

var corpusAll = flag.Bool("corpus", false, "TestImportKeepsTheEstimate: every kind of settings of the measured corpus, not a sample")

// sampled picks about one run in six by its id (FNV-1a), the runs
// TestImportKeepsTheEstimate compares without -corpus.
func sampled(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%6 == 0
}

// measuredRuns is the measured corpus: published runs with the settings
// they ran with (internal/measured).
const measuredRuns = "../../estimate/testdata/measured/runs.jsonl"

// settingsKind is what sets a run's settings apart from another's: the
// settings it recorded with their values, its precision, recipe,
// recomputation and sharding, and its GPU.
func settingsKind(r *measured.Run) string {
	b, _ := json.Marshal([]any{r.Settings, r.Train.Precision, r.Train.FP8Recipe, r.Train.Recompute, r.Train.RecomputeModules, r.Train.FSDP, r.GPU})
	return string(b)
}

// launchScript is the script a user keeps for a compiled plan: the
// environment the spec gives the workers exported, then torchrun with the
// compiled arguments, every word through the launch scripts' quoting.
func launchScript(env map[string]string, nodes, gpusPerNode int, args []string) []byte {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&b, "export %s=%s\n", k, template.ShellQuote(env[k]))
	}
	fmt.Fprintf(&b, "torchrun --nnodes %d --nproc_per_node %d pretrain_gpt.py", nodes, gpusPerNode)
	for _, a := range args {
		b.WriteString(" \\\n  " + template.ShellQuote(a))
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// TestImportKeepsTheEstimate: what parc estimates for a plan survives the
// trip through a launch script. Each published run of the measured corpus
// (one of every kind of settings, settingsKind; with -corpus all of them,
// else those sampled) is compiled, and the launch
// script of its arguments and environment (launchScript) is read back by
// the importer; the imported spec, on the run's own cluster (the importer
// takes a preset's), must have the same estimated step time and peak memory
// per GPU. A setting that the compiled arguments carry and the importer
// drops, or reads back as another value, changes one of them. Transformer
// Engine's cross-entropy fusion, which the runs' Megatron-Core allowed and
// Megatron-LM's arguments reject, is written as the native fusion, and a
// recomputation the source leaves unsaid as none; runs that do not compile
// otherwise (they ran on Megatron-Bridge, which skips Megatron-LM's
// argument checks, or no longer fit without recomputation) are counted and
// left out.
func TestImportKeepsTheEstimate(t *testing.T) {
	all, err := measured.ReadRuns[measured.Run](measuredRuns)
	require.NoError(t, err)
	seen := map[string]bool{}
	var runs []*measured.Run
	for _, r := range all {
		if k := settingsKind(&r); !seen[k] && measured.ClusterPreset(r.GPU) != "" {
			seen[k] = true
			if *corpusAll || sampled(r.ID) {
				runs = append(runs, &r)
			}
		}
	}

	type outcome struct{ compared, open, refused int }
	results := make([]outcome, len(runs))
	t.Run("runs", func(t *testing.T) {
		for i, r := range runs {
			t.Run(r.ID, func(t *testing.T) {
				t.Parallel()
				results[i] = importRun(t, r)
			})
		}
	})
	var total outcome
	for _, o := range results {
		total.compared += o.compared
		total.open += o.open
		total.refused += o.refused
	}
	t.Logf("%d kinds of settings: %d compared, %d with fields their source leaves open, %d not compiled", len(runs), total.compared, total.open, total.refused)
	// Most kinds compile: a change that stops them would leave this test
	// comparing nothing.
	require.GreaterOrEqual(t, total.compared, len(runs)*3/5, "too few runs compiled to compare")
}

// importRun compiles run r, imports its launch script and compares the
// estimates; it reports whether it compared them.
func importRun(t *testing.T, r *measured.Run) (o struct{ compared, open, refused int }) {
	if r.Settings["cross_entropy_fusion_impl"] == "te" {
		r.Settings["cross_entropy_fusion_impl"] = "native"
	}
	if r.Train.Recompute == "" {
		r.Train.Recompute = "none" // unsaid by the source: any value will do here
	}
	pub, err := measured.PublishedPlan(r)
	require.NoError(t, err)
	src := load.Source{Path: filepath.Join(t.TempDir(), "run.cue"), Data: []byte(pub.CUE())}
	res, ds := load.Load(src)
	require.False(t, ds.HasErrors(), "%v", ds)
	if len(res.Open()) > 0 {
		o.open = 1
		return o
	}
	orig, ds := res.Decode()
	require.False(t, ds.HasErrors(), "%v", ds)
	p, ds := compiler.Vet(src)
	if ds.HasErrors() {
		t.Logf("not compiled: %s", ds[0].Message)
		o.refused = 1
		return o
	}
	args, ds := mg.Args(p, res.Locator())
	require.False(t, ds.HasErrors(), "%v", ds)
	nodes := r.GPUs / r.GPUsPerNode
	script := launchScript(orig.Launch.Env, nodes, r.GPUsPerNode, args)
	im := Import(script, Options{File: "run.sh", Cluster: measured.ClusterPreset(r.GPU), GPUsPerNode: r.GPUsPerNode, Nodes: nodes})
	require.NotNil(t, im.Spec, "the importer refuses parc's own arguments: %v", im.Diags)
	res2, ds := load.Load(load.Source{Path: filepath.Join(t.TempDir(), "imported.cue"), Data: im.Spec})
	require.False(t, ds.HasErrors(), "%v\n%s", ds, im.Spec)
	back, ds := res2.Decode()
	require.False(t, ds.HasErrors(), "%v", ds)
	back.Cluster = orig.Cluster

	want, got := estimateOf(t, orig), estimateOf(t, back)
	same := func(a, b float64) bool { return math.Abs(a/b-1) < 1e-9 }
	require.True(t, same(got.StepTimeS, want.StepTimeS) && same(float64(got.Memory.PerGPUPeakBytes), float64(want.Memory.PerGPUPeakBytes)),
		"imported: step %.6g s, peak %d B; compiled spec: step %.6g s, peak %d B\nimported spec:\n%s", got.StepTimeS, got.Memory.PerGPUPeakBytes, want.StepTimeS, want.Memory.PerGPUPeakBytes, im.Spec)
	o.compared = 1
	return o
}

func estimateOf(t *testing.T, s *spec.Spec) *estimate.Estimate {
	d := spec.Derive(s)
	e, ds := estimate.Run(s, d, estimate.DefaultLinks(s, d), diag.NoPos)
	require.NotNil(t, e, "%v", ds)
	return e
}
