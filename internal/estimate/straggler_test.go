package estimate

import (
	"math"
	"strings"
	"testing"
)

// TestSlowestNodeWait: one submitter's MLPerf Training v5.1 Llama 3.1 8B runs
// (the same code, one microbatch a step) on one node and on several. Before
// each step waited for its slowest node (Calibration.StepJitterS) the model's
// error moved by up to 22 points from the run on one node to the runs on
// more (University of Florida's B200: -9% on 8 GPUs, +13% on 32), where the
// measured step grew by a cost per step the model lacked; with the wait it
// moves by less than the 10% target. The constant was fitted on the
// fit rows, four of these nine among them (Nebius's 32, University of
// Florida's 32, 64 and 256); the one-node runs it is checked against are
// held out.
func TestSlowestNodeWait(t *testing.T) {
	rows := loadCalibrationRows(t)
	for _, prefix := range []string{
		"mlperf-v5.1-llama3.1-8b-university-of-florida-hpg-b200-fp8-",
		"mlperf-v5.1-llama3.1-8b-nebius-b200-nvfp4-",
	} {
		var one *calRow
		var more []*calRow
		for _, r := range rows {
			if !strings.HasPrefix(r.id, prefix) || r.skip != "" {
				continue
			}
			if r.d.World <= r.s.Cluster.GPUsPerNode {
				one = r
			} else {
				more = append(more, r)
			}
		}
		if one == nil || len(more) < 2 {
			t.Fatalf("%s: want a run on one node and runs on more", prefix)
		}
		cal := DefaultCalibration()
		base := one.estimated(cal)/one.measured - 1
		for _, r := range more {
			e := r.estimated(cal)/r.measured - 1
			t.Logf("%s: %+.1f%% (one node %+.1f%%)", r.id, 100*e, 100*base)
			if math.Abs(e-base) > 0.10 {
				t.Errorf("%s on %d GPUs: error %+.1f%% against %+.1f%% on one node", r.id, r.d.World, 100*e, 100*base)
			}
		}
	}
}
