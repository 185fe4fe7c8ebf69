package estimate

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// fitRow is one measured run's memory estimate.
type fitRow struct {
	id, skip string
	fraction float64
	peak     int64
	stage    int
}

// measuredRunFits estimates the memory of every run of the measured corpus
// (testdata/measured/runs.jsonl) with the settings it ran with, as the
// calibration writes them (measured.PublishedPlan, pipeline layout included).
func measuredRunFits(t *testing.T) []fitRow {
	t.Helper()
	out := mapRuns(readMeasuredRuns(t), runFit)
	sort.Slice(out, func(i, j int) bool { return out[i].fraction > out[j].fraction })
	return out
}

func runFit(r *measuredRun) fitRow {
	row := fitRow{id: r.ID}
	_, s, skip := loadRunSpec(r)
	if skip != "" {
		row.skip = skip
		return row
	}
	d := spec.Derive(s)
	e, _ := Run(s, d, DefaultLinks(s, d), diag.NoPos)
	row.fraction, row.peak, row.stage = e.Memory.FractionOfGPU, e.Memory.PerGPUPeakBytes, e.Memory.PeakStage
	return row
}

// knownOverGPU are the measured runs whose estimate exceeds the GPU's memory
// today, each with the reason. The list can only shrink: a listed run that
// fits fails the test until it is removed. Each is a row whose table shape
// no release config of its source has, so the memory settings it ran with
// are unknown; what parc estimates with its release's settings is said.
var knownOverGPU = map[string]string{
	// None today. Two runs listed here before (bridge-25.11-gpt-oss-120b-h100-bf16-64,
	// nemo-25.07-llama3.1-405b-gb200-fp8-128: 154.7%, 141.6% without recomputation) leave
	// their recomputation unsaid, and their spec now takes the least that fits
	// (measured.RecomputeConstraint): full recomputation of 8 and 54 layers per stage. Their
	// published shapes match no configuration of their release (MBS 4 with GA 2 at GBS 512
	// and dp 16; GBS 64 for a plan NeMo's csv runs at GBS 256 with 95 layers offloaded), so
	// what they ran with is unknown. The third, bridge-26.02.01-llama3-70b-gb300-mxfp8-64
	// (132.1% as its table printed it: MBS 2 at pp 4 without vpp), is now recorded as its
	// release's config ran it (PP 4, VP 5, MBS 1; runs.jsonl notes).
}

// TestMeasuredRunsFit: every run of the measured corpus ran, so each must
// fit parc's memory model (estimate ≤ GPU memory), knownOverGPU aside. Runs
// above the 90% headroom the solver keeps are logged.
func TestMeasuredRunsFit(t *testing.T) {
	if testing.Short() {
		t.Skip("estimates every measured run")
	}
	rows := measuredRunFits(t)
	fit, near := 0, []string{}
	maxFit := 0.0
	for _, r := range rows {
		if r.skip != "" {
			t.Errorf("%s: %s", r.id, r.skip)
			continue
		}
		why, known := knownOverGPU[r.id]
		switch {
		case r.fraction > 1 && !known:
			t.Errorf("%s ran, but parc estimates %s per GPU, %.1f%% of the GPU", r.id, GiB(r.peak), 100*r.fraction)
		case r.fraction <= 1 && known:
			t.Errorf("%s now fits (%.1f%%): remove it from knownOverGPU", r.id, 100*r.fraction)
		case r.fraction > 1:
			t.Logf("known: %s %.1f%% (%s): %s", r.id, 100*r.fraction, GiB(r.peak), why)
		default:
			fit++
			maxFit = max(maxFit, r.fraction)
			if r.fraction > 0.9 {
				near = append(near, fmt.Sprintf("%s %.1f%%", r.id, 100*r.fraction))
			}
		}
	}
	t.Logf("%d of %d runs fit (largest %.1f%% of the GPU); %d of them above 90%%: %s",
		fit, len(rows), 100*maxFit, len(near), strings.Join(near, ", "))
}
