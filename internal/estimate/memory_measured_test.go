package estimate_test

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/importer/megatron"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/spec"
)

// argsHeader reads the "# key: value" lines at the top of an argument file
// (the format of internal/importer/megatron/testdata/corpus).
func argsHeader(src string) map[string]string {
	h := map[string]string{}
	for line := range strings.Lines(src) {
		if !strings.HasPrefix(line, "#") {
			break
		}
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
		if ok {
			if _, dup := h[strings.TrimSpace(k)]; !dup {
				h[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	return h
}

// importArgs imports a Megatron argument file with parc's importer and
// estimates the spec it writes. It returns nil and the reason when the
// import gives no spec.
func importArgs(t *testing.T, path string) (*estimate.Estimate, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := argsHeader(string(b))
	o := megatron.Options{File: path, Cluster: h["cluster"]}
	if n := h["nodes"]; n != "" {
		o.Nodes, _ = strconv.Atoi(n)
	}
	if n := h["gpus-per-node"]; n != "" {
		o.GPUsPerNode, _ = strconv.Atoi(n)
	}
	res := megatron.Import(b, o)
	if res.Spec == nil {
		return nil, fmt.Sprintf("not imported: %v", res.Diags)
	}
	lr, ds := load.Load(load.Source{Path: filepath.Join(os.TempDir(), filepath.Base(path)+".cue"), Data: res.Spec})
	if ds.HasErrors() {
		return nil, fmt.Sprintf("load: %v", ds)
	}
	s, ds := lr.Decode()
	if ds.HasErrors() {
		return nil, fmt.Sprintf("decode: %v", ds)
	}
	d := spec.Derive(s)
	e, _ := estimate.Run(s, d, nil, diag.NoPos)
	return e, ""
}

// updateFlag is the package's -update flag (calibration_test.go defines it).
func updateFlag() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	v, _ := f.Value.(flag.Getter).Get().(bool)
	return v
}

var (
	peakLine  = regexp.MustCompile(`(?m)^# peak-allocated-bytes: (\d+)$`)
	allocLine = regexp.MustCompile(`(?m)^# allocated-bytes: (\d+)$`)
)

// knownMemoryMisses are measured cases the model misses by more than the
// bound today, with what is known of the cause (the list can only shrink).
var knownMemoryMisses = map[string]string{
	"deepseek_proxy_fsdp_ep2_fsdp2_gb200": "-28% (22.9 vs 31.95 GiB): Megatron-FSDP MoE proxy, fp8 tensorwise, unfused attention over MLA heads (q/k 192, v 128 wide), micro batch 32; " +
		"9 GiB not modelled and not yet explained. It is about what an fp32 copy of the s^2 attention probabilities would take, but Transformer Engine's " +
		"UnfusedDotProductAttention keeps 16-bit probabilities when its fused causal softmax kernel applies (sq = sk = 1024 here), so that is not it unless the kernel is refused",
}

// Bounds of the measured-memory comparison (testdata/memory/README.md):
// runs whose measured peak is at least bigRun bytes must be within
// bigRunError; smaller runs (toy models whose peak is dominated by fixed
// buffers parc does not model: cuBLAS and Transformer Engine workspaces, RNG
// state, communication buffers) within smallRunError. Both directions count:
// an overestimate rejects runs that fit, an underestimate lets a plan OOM.
const (
	bigRun        = 10 << 30
	bigRunError   = 0.10
	smallRunError = 0.30
)

type measuredMemory struct {
	name             string
	source           string
	peak, allocated  float64
	est, state, acts float64
	stage, stages    int
	err              float64
}

// TestMeasuredMemory compares parc's memory estimate with the peak memory
// Megatron-LM's own functional tests measured (testdata/memory: each file is
// a test case's arguments with the golden values' peak, see the README).
// The measured rank is the last one (world_size-1 logs), which is on the
// last pipeline stage, so the estimate compared is that stage's.
// `go test ./internal/estimate -run TestMeasuredMemory -update` rewrites
// testdata/memory/README.md.
func TestMeasuredMemory(t *testing.T) {
	files, err := filepath.Glob("testdata/memory/*.args")
	if err != nil || len(files) < 5 {
		t.Fatalf("testdata/memory: %d files, %v", len(files), err)
	}
	var rows []measuredMemory
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h := argsHeader(string(b))
		m, a := peakLine.FindStringSubmatch(string(b)), allocLine.FindStringSubmatch(string(b))
		if m == nil || a == nil || h["measured"] == "" || h["source"] == "" {
			t.Fatalf("%s: the header needs source, measured, peak-allocated-bytes and allocated-bytes", f)
		}
		peak, _ := strconv.ParseFloat(m[1], 64)
		alloc, _ := strconv.ParseFloat(a[1], 64)
		e, why := importArgs(t, f)
		name := strings.TrimSuffix(filepath.Base(f), ".args")
		if e == nil {
			t.Errorf("%s: %s", name, why)
			continue
		}
		last := e.Memory.Stages[len(e.Memory.Stages)-1]
		r := measuredMemory{
			name: name, source: h["measured"], peak: peak, allocated: alloc,
			est: float64(last.Total), state: float64(last.Weights + last.Gradients + last.Optimizer),
			acts: float64(last.Activations), stage: last.Stage, stages: len(e.Memory.Stages),
		}
		r.err = r.est/r.peak - 1
		rows = append(rows, r)
		bound := smallRunError
		if peak >= bigRun {
			bound = bigRunError
		}
		why, known := knownMemoryMisses[name]
		switch {
		case known && math.Abs(r.err) <= bound:
			t.Errorf("%s is now within %.0f%% (%+.1f%%): remove it from knownMemoryMisses", name, 100*bound, 100*r.err)
		case known:
			t.Logf("known miss %s: %+.1f%%: %s", name, 100*r.err, why)
		case math.Abs(r.err) > bound:
			t.Errorf("%s: estimated %s for the last stage, measured peak %s: error %+.1f%% (bound %.0f%%)",
				name, estimate.GiB(int64(r.est)), estimate.GiB(int64(peak)), 100*r.err, 100*bound)
		}
	}
	readme := measuredMemoryReadme(rows)
	path := filepath.Join("testdata", "memory", "README.md")
	if updateFlag() {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, _ := os.ReadFile(path)
	if string(old) != readme {
		t.Errorf("%s is stale: go test ./internal/estimate -run TestMeasuredMemory -update", path)
	}
}

func measuredMemoryReadme(rows []measuredMemory) string {
	var b strings.Builder
	b.WriteString(`# Measured peak memory (memory model check)

Generated by ` + "`go test ./internal/estimate -run TestMeasuredMemory -update`" + `; do not edit.

Outside truth for parc's memory model (issue 14 §3): Megatron-LM's functional tests log
` + "`torch.cuda.memory_stats()`" + ` at every step (` + "`--log-memory-to-tensorboard`" + `,
megatron/training/training.py ` + "`training_log`" + `: *mem-max-allocated-bytes* = ` + "`allocated_bytes.all.peak`" + `,
*mem-allocated-bytes* = ` + "`allocated_bytes.all.current`" + `), and the CI keeps them as golden values next to each
test's ` + "`model_config.yaml`" + `. The tensorboard writer exists only on rank world_size−1
(megatron/training/global_vars.py ` + "`_set_tensorboard_writer`" + `), which is on the last pipeline stage
with Megatron's default rank order, so the figures are the last stage's.

Each ` + "`*.args`" + ` file is one test case at Megatron-LM d98e8a64: its MODEL_ARGS expanded as
tests/functional_tests/shell_test_utils/_run_training.sh does (a ` + "`true`" + ` value is the flag alone, a ` + "`[a b]`" + `
value splits into words), on the 8 GPUs the recipes in tests/test_utils/recipes give these cases (one DGX H100:
` + "`nodes: 1, gpus: 8`" + `; files ending in ` + "`_gb200`" + `: two GB200 nodes of 4, ` + "`nodes: 2, gpus: 4`" + `), with the golden values' last step. The header names the files; ` + "`convert.py`" + ` regenerates them. The test imports
each file with ` + "`parc import megatron`" + ` (the same code as the CLI), estimates the spec and compares the last
stage's estimate with the measured peak. Nothing here is fitted: no constant of the memory model was chosen
from these numbers.

What the estimate leaves out, so it should sit somewhat below the measured peak: the allocator's view
includes cuBLAS/Transformer Engine workspaces, RNG trackers, the data batch and the transient gradients of the
layer being back-propagated; toy models (peak of a few GiB) are dominated by these. Bounds: ±` +
		fmt.Sprintf("%.0f%% for runs with a measured peak of at least %d GiB, ±%.0f%% below.", 100*bigRunError, bigRun>>30, 100*smallRunError) + `

*state* is weights + gradients + optimizer state as parc counts them; *allocated* is what stays allocated
between steps (mostly that state).

| case | last stage | measured peak | estimated | error | state (est.) | allocated (meas.) | activations (est.) |
|---|---|---|---|---|---|---|---|
`)
	sort.Slice(rows, func(i, j int) bool { return rows[i].peak > rows[j].peak })
	var big, small []float64
	for _, r := range rows {
		fmt.Fprintf(&b, "| [%s](%s) | %d of %d | %s | %s | %+.1f%% | %s | %s | %s |\n", r.name, r.source, r.stage, r.stages,
			estimate.GiB(int64(r.peak)), estimate.GiB(int64(r.est)), 100*r.err, estimate.GiB(int64(r.state)),
			estimate.GiB(int64(r.allocated)), estimate.GiB(int64(r.acts)))
		if r.peak >= bigRun {
			big = append(big, math.Abs(r.err))
		} else {
			small = append(small, math.Abs(r.err))
		}
	}
	stat := func(xs []float64) string {
		if len(xs) == 0 {
			return "none"
		}
		sort.Float64s(xs)
		return fmt.Sprintf("%d runs, median |error| %.1f%%, worst %.1f%%", len(xs), 100*xs[len(xs)/2], 100*xs[len(xs)-1])
	}
	fmt.Fprintf(&b, "\nRuns of at least %d GiB: %s. Smaller runs: %s.\n", bigRun>>30, stat(big), stat(small))
	names := make([]string, 0, len(knownMemoryMisses))
	for n := range knownMemoryMisses {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 0 {
		b.WriteString("\nKnown misses (the test lists them; a listed case that comes within its bound fails until it is removed):\n\n")
		for _, n := range names {
			fmt.Fprintf(&b, "- %s: %s\n", n, knownMemoryMisses[n])
		}
	}
	return b.String()
}

// knownCorpusOverGPU are the import corpus's configurations whose estimate
// exceeds the GPU's memory, with the reason (the list can only shrink).
var knownCorpusOverGPU = map[string]string{}

// TestImportCorpusFits: the real launch configurations of the import corpus
// (internal/importer/megatron/testdata/corpus, each from a public script)
// that parc imports must fit parc's memory model on the cluster their header
// names (estimate ≤ GPU memory), knownCorpusOverGPU aside; those above the
// solver's 90% headroom are logged.
func TestImportCorpusFits(t *testing.T) {
	files, err := filepath.Glob("../importer/megatron/testdata/corpus/*.args")
	if err != nil || len(files) < 10 {
		t.Fatalf("import corpus: %d files, %v", len(files), err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".args")
		b, _ := os.ReadFile(f)
		if !strings.Contains(string(b), "# expect: round-trip") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			corpusFits(t, f, name)
		})
	}
}

// corpusFits checks one import corpus file.
func corpusFits(t *testing.T, f, name string) {
	e, why := importArgs(t, f)
	if e == nil {
		t.Errorf("%s: %s", name, why)
		return
	}
	frac := e.Memory.FractionOfGPU
	reason, known := knownCorpusOverGPU[name]
	switch {
	case frac > 1 && !known:
		t.Errorf("%s: parc estimates %s per GPU, %.1f%% of the GPU", name, estimate.GiB(e.Memory.PerGPUPeakBytes), 100*frac)
	case frac <= 1 && known:
		t.Errorf("%s now fits (%.1f%%): remove it from knownCorpusOverGPU", name, 100*frac)
	case frac > 1:
		t.Logf("known: %s %.1f%%: %s", name, 100*frac, reason)
	default:
		t.Logf("%s: %s, %.1f%% of the GPU%s", name, estimate.GiB(e.Memory.PerGPUPeakBytes), 100*frac,
			map[bool]string{true: " (above the 90% headroom)", false: ""}[frac > 0.9])
	}
}
