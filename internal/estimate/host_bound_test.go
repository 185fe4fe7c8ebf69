package estimate

import (
	"math"
	"regexp"
	"sort"
	"testing"
)

// graphsUnsaid matches a measured run's notes where its source leaves its
// CUDA graphs unknown: a Megatron-Bridge table row that no configuration of
// its release matches ("per-row settings stay unknown"), or one whose
// matching configuration is another plan's ("CUDA graphs stay unknown").
// The calibration rates such a run eager; if it captured graphs, its host
// issued less than the model counts, so its step bounds nothing.
var graphsUnsaid = regexp.MustCompile(`(?i)graphs (stay )?unknown|per-row settings stay unknown`)

// knownHostOverStep are the measured runs whose host issue time in the
// model (hostStep) exceeds their measured step today, each with the
// reason. The list can only shrink: a listed run whose host time comes
// within its step fails the test until it is removed.
var knownHostOverStep = map[string]string{
	// Qwen3-235B-A22B on 256 H100, TP 4 (sequence parallel) PP 8 VP 4 EP 8,
	// DeepEP, eager (Megatron-MoE-ModelZoo): 31.1 s of host time for a
	// measured 29.0 s step, and the model's estimate is that host time
	// (31.2 s, -7.2%). Its 16 local experts per GPU are charged a full eager
	// operation (HostOpS) per expert GEMM, though Transformer Engine issues
	// them from one C++ loop (nvte_multi_stream_cublas_gemm). Charging each
	// GEMM after the first 5 us (a cuBLAS launch) brings this row within its
	// step with the shipped constants (19.2 s), but the held-out rows' worst
	// error rises from 59.7% to 66.9% (session 61); refitted, they are worse
	// still (median/worst/mean 5.5/59.7/8.2% -> 5.6/62.4/8.4%) and the fit's
	// HostOpS, 75.9 us, puts this row (31.4 s) and two others above their
	// steps again. Listed, not fixed.
	"mzoo-qwen3-235b-a22b-h100-bf16-256-tp4-ep8-deepep": "host count of many local experts",
}

// hostStep is the model's host issue time of row's step where the host
// bounds every stretch: the busiest stage's host issue time of a
// microbatch (stageClock's host: eager operations and host
// synchronisations) for all microbatches plus the interleaved pipeline's
// fill ((p-1)/v microbatches).
func hostStep(row *calRow) float64 {
	c := newCostModel(row.s, row.d, resolveOptions(row.s, DefaultOptions()))
	link := linkOf(row.s, row.d, row.links)
	var most float64
	for r := range c.pp {
		most = math.Max(most, c.stageClock(r, c.stageCost(r), link).host)
	}
	return most * (float64(c.m) + float64(c.pp-1)/float64(c.vpp))
}

// TestHostIssueWithinMeasuredSteps: a training step is never shorter than
// the host's time to issue its kernels, so for every measured run the
// model's host issue time of the run's plan (hostStep: each microbatch's
// eager operations and host synchronisations on the busiest stage, plus
// the interleaved pipeline's fill; kernels in CUDA graphs issue none) must
// stay at or below the step its source measured. TestEPOverlapHostCost
// holds this for Megatron-Bridge PR 1760's A/B; this holds it for the whole
// corpus but the runs whose CUDA graphs their source leaves unsaid
// (graphsUnsaid), which bounds the host constants (HostOpS, HostSyncS and
// the combined 1F1B schedule's node operations) from above with outside
// numbers. The eager MoE runs closest to the bound are at 0.84-0.87 of
// their step (Qwen3-235B-A22B on 64 B200 in 25.09, Qwen3-30B-A3B on 16 H100
// and 8 B200): HostOpS at 50 us passes, at 55 us 7 runs exceed their step,
// and session 60's free refit (65.5 us, HostSyncS 514 us) 13.
func TestHostIssueWithinMeasuredSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("estimates every measured run")
	}
	type over struct {
		id         string
		host, step float64
	}
	unsaid := map[string]bool{}
	for _, r := range readMeasuredRuns(t) {
		if graphsUnsaid.MatchString(r.Notes) {
			unsaid[r.ID] = true
		}
	}
	var all []over
	for _, r := range loadCalibrationRows(t) {
		if r.skip != "" || unsaid[r.id] {
			continue
		}
		h, step := hostStep(r), r.measuredStepS()
		all = append(all, over{r.id, h, step})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].host/all[i].step > all[j].host/all[j].step })
	if len(all) < 650 {
		t.Fatalf("%d runs rated, want 650 or more of the corpus's (%d left out: CUDA graphs unsaid)", len(all), len(unsaid))
	}
	seen := map[string]bool{}
	for _, o := range all {
		why, known := knownHostOverStep[o.id]
		seen[o.id] = true
		switch {
		case o.host > o.step && !known:
			t.Errorf("%s: the model's host issue time %.2f s exceeds the measured step %.2f s (%.3fx)", o.id, o.host, o.step, o.host/o.step)
		case o.host <= o.step && known:
			t.Errorf("%s: listed in knownHostOverStep (%s), but its host issue time %.2f s is within the measured step %.2f s: remove it", o.id, why, o.host, o.step)
		}
	}
	for id := range knownHostOverStep {
		if !seen[id] {
			t.Errorf("knownHostOverStep lists %s, which the corpus does not rate", id)
		}
	}
	t.Logf("%d runs rated, %d left out (their CUDA graphs unsaid)", len(all), len(unsaid))
	for _, o := range all[:5] {
		t.Logf("%s: host issue time %.2f s, measured step %.2f s (%.3f)", o.id, o.host, o.step, o.host/o.step)
	}
}
