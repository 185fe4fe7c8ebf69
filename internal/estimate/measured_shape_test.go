package estimate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/measured"
)

// measuredRun is one line of testdata/measured/runs.jsonl, the corpus of
// published measured training throughputs (see its README.md).
type measuredRun = measured.Run

// TestMeasuredCorpusShape checks that every row of the measured-throughput
// corpus parses into the agreed shape and is internally consistent (the
// degrees fit the GPU count, the batch splits into micro batches). It does
// not look at any estimate: the corpus is outside truth, not parc's output.
func TestMeasuredCorpusShape(t *testing.T) {
	path := filepath.Join("testdata", "measured", "runs.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	presets := map[string]bool{}
	for _, p := range load.Presets("models") {
		presets[p] = true
	}
	if len(presets) == 0 {
		t.Fatal("no model presets found under stdlib/models")
	}
	measuredKeys := map[string]bool{"tokens_per_s_per_gpu": true, "model_tflops_per_gpu": true, "mfu": true, "step_time_s": true}
	precisions := map[string]bool{"bf16": true, "fp8": true, "fp4": true}
	recipes := map[string]bool{"": true, "delayed": true, "tensorwise": true, "mxfp8": true, "blockwise": true}
	recomputes := map[string]bool{"": true, "none": true, "selective": true, "full": true}
	ids := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		n++
		var r measuredRun
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Errorf("%s:%d: %v", path, line, err)
			continue
		}
		at := func(format string, args ...any) {
			t.Helper()
			t.Errorf("%s:%d (%s): "+format, append([]any{path, line, r.ID}, args...)...)
		}
		if r.ID == "" || ids[r.ID] {
			at("id empty or repeated")
		}
		ids[r.ID] = true
		if r.Source == "" || r.SourceDetail == "" || r.Release == "" {
			at("source, source_detail and release are required")
		}
		// A measurement is set apart only on its source's own word: the
		// field quotes it ('…') and names where it is.
		if k := r.KnownSlow; k != "" && (strings.Count(k, "'") < 2 || !strings.Contains(k, "/")) {
			at("known_slow must quote the source's words ('…') and name the page or file they are in")
		}
		var name string
		if json.Unmarshal(r.Model, &name) == nil {
			if !presets[name] {
				at("model %q is not a preset in stdlib/models", name)
			}
		} else {
			var m map[string]any
			if err := json.Unmarshal(r.Model, &m); err != nil {
				at("model is neither a preset name nor an object: %v", err)
			}
			for _, k := range []string{"layers", "hidden", "heads", "vocab"} {
				if _, ok := m[k].(float64); !ok {
					at("model object lacks number %q", k)
				}
			}
		}
		if r.GPU == "" || r.GPUs < 1 || r.GPUsPerNode < 1 || r.GPUs%r.GPUsPerNode != 0 && r.GPUs > r.GPUsPerNode {
			at("gpu %q, gpus %d, gpus_per_node %d", r.GPU, r.GPUs, r.GPUsPerNode)
		}
		deg := func(p *int) int {
			if p == nil {
				return 1
			}
			return *p
		}
		if r.Parallel.TP == nil || r.Parallel.PP == nil {
			at("parallel.tp and parallel.pp are required")
		}
		for _, p := range []*int{r.Parallel.TP, r.Parallel.PP, r.Parallel.VPP, r.Parallel.CP, r.Parallel.EP, r.Parallel.ETP} {
			if p != nil && *p < 1 {
				at("parallel degree %d < 1", *p)
			}
		}
		mp := deg(r.Parallel.TP) * deg(r.Parallel.PP) * deg(r.Parallel.CP)
		if r.GPUs%mp != 0 {
			at("tp·pp·cp = %d does not divide gpus %d", mp, r.GPUs)
		}
		dp := r.GPUs / max(mp, 1)
		if r.Train.GlobalBatch != nil && r.Train.MicroBatch != nil && *r.Train.GlobalBatch%(*r.Train.MicroBatch*dp) != 0 {
			at("global_batch %d is not a multiple of micro_batch·dp = %d·%d", *r.Train.GlobalBatch, *r.Train.MicroBatch, dp)
		}
		if r.Train.SeqLength < 1 || !precisions[r.Train.Precision] || !recipes[r.Train.FP8Recipe] || !recomputes[r.Train.Recompute] {
			at("train: seq_length %d precision %q fp8_recipe %q recompute %q", r.Train.SeqLength, r.Train.Precision, r.Train.FP8Recipe, r.Train.Recompute)
		}
		if (r.Train.Precision == "fp8") != (r.Train.FP8Recipe != "") {
			at("fp8_recipe must be set exactly when precision is fp8")
		}
		if len(r.Measured) == 0 {
			at("measured is empty")
		}
		for k, v := range r.Measured {
			f, ok := v.(float64)
			if !measuredKeys[k] || !ok || f <= 0 {
				at("measured.%s = %v: unknown key or not a positive number", k, v)
			}
		}
		if c := r.FLOPsCount; c != "" {
			if c != flopsMegatronFullAttention && c != flopsNarayananEq3 {
				at("flops_count %q: unknown count", c)
			}
			if _, ok := r.Measured["model_tflops_per_gpu"]; !ok {
				at("flops_count without measured.model_tflops_per_gpu")
			}
		}
		if mfu, ok := r.Measured["mfu"].(float64); ok && mfu > 1 {
			at("measured.mfu %v is a percentage, want a fraction", mfu)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("corpus is empty")
	}
}

// readMeasuredRuns reads every run of testdata/measured/runs.jsonl.
// measuredRunsByID is readMeasuredRuns by row id.
func measuredRunsByID(t *testing.T) map[string]*measuredRun {
	all := readMeasuredRuns(t)
	runs := make(map[string]*measuredRun, len(all))
	for i := range all {
		runs[all[i].ID] = &all[i]
	}
	return runs
}

func readMeasuredRuns(t *testing.T) []measuredRun {
	t.Helper()
	runs, err := measured.ReadRuns[measuredRun](filepath.Join("testdata", "measured", "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// mapRuns applies f to every run, four at a time, and returns the results
// in the runs' order.
func mapRuns[T any](runs []measuredRun, f func(*measuredRun) T) []T {
	out := make([]T, len(runs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = f(&runs[i])
		}(i)
	}
	wg.Wait()
	return out
}

// calRowsOf returns the calibration rows of the measured runs named by ids,
// in the corpus's order; the test stops when one is missing or its spec
// cannot be estimated.
func calRowsOf(t *testing.T, ids ...string) []*calRow {
	t.Helper()
	var runs []measuredRun
	for _, r := range readMeasuredRuns(t) {
		if slices.Contains(ids, r.ID) {
			runs = append(runs, r)
		}
	}
	if len(runs) != len(ids) {
		t.Fatalf("found %d of the runs %v", len(runs), ids)
	}
	rows := mapRuns(runs, makeCalRow)
	for _, row := range rows {
		if row.skip != "" {
			t.Fatalf("%s: %s", row.id, row.skip)
		}
	}
	return rows
}
