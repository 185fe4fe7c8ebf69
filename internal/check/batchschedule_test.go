package check

import (
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// The step batch-size schedule is checked as Megatron reads it at start-up
// and as its training loop runs it (base: seq 2048, micro_batch 1, dp 4,
// pp 2, 100 iterations, global_batch 64). Each failing case names what
// Megatron says; the schedules Megatron runs pass.
func TestBatchSchedule(t *testing.T) {
	cases := []struct {
		name, override string
		path, message  string // "" path: valid
	}{
		{"two phases", `{"train": {"step_batch_size_schedule": "0:64 100K:128"}}`, "", ""},
		{"commas, exponent, lower-case suffix", `{"train": {"step_batch_size_schedule": "0:64,1e6:128 2.5m:256"}}`, "", ""},
		{"a first threshold below one sample", `{"train": {"step_batch_size_schedule": "16:64 1M:128"}}`, "", ""},
		{"a bad phase the run never reaches", `{"train": {"step_batch_size_schedule": "0:64 1B:130"}}`, "", ""},
		{"not divisible where the run reaches it", `{"train": {"step_batch_size_schedule": "0:64 1M:130"}}`,
			batchSchedulePath, "the entry 1M:130 (from 488 samples, step 9 of the run): batch size 130 is not divisible by micro_batch·dp = 1·4 = 4"},
		{"reached by samples", `{"train": {"iters": null, "samples": 1000, "step_batch_size_schedule": "0:64 1M:130"}}`,
			batchSchedulePath, "step 9 of the run"},
		{"not reached by samples", `{"train": {"iters": null, "samples": 400, "step_batch_size_schedule": "0:64 1M:130"}}`, "", ""},
		{"unbounded run: every phase", `{"train": {"iters": null, "step_batch_size_schedule": "0:64 1B:130"}}`,
			batchSchedulePath, "the entry 1B:130 (from 488281 samples): batch size 130"},
		{"fewer microbatches", `{"train": {"step_batch_size_schedule": "0:64 1M:32"}}`,
			batchSchedulePath, "gives 8 microbatches, fewer than the 16 before it"},
		{"two thresholds of 0 samples", `{"train": {"step_batch_size_schedule": "0:64 1K:128"}}`,
			batchSchedulePath, "schedule thresholds must be strictly increasing, got 0 before 0 samples"},
		{"first threshold not 0", `{"train": {"step_batch_size_schedule": "4096:64"}}`,
			batchSchedulePath, "first schedule entry must have threshold 0, got 2 samples"},
		{"not an entry", `{"train": {"step_batch_size_schedule": "0:64 128"}}`,
			batchSchedulePath, `invalid schedule entry "128"`},
		{"hexadecimal", `{"train": {"step_batch_size_schedule": "0:0x40"}}`,
			batchSchedulePath, `"0x40" is not a number`},
		{"infinite", `{"train": {"step_batch_size_schedule": "0:64 inf:128"}}`,
			batchSchedulePath, `"inf" is not a finite number`},
		{"empty", `{"train": {"step_batch_size_schedule": " , "}}`,
			batchSchedulePath, "schedule must have at least one entry"},
		{"zero batch", `{"train": {"step_batch_size_schedule": "0:64 1M:0"}}`,
			batchSchedulePath, "batch size must be positive, got 0"},
		{"global batch is not the first size", `{"train": {"step_batch_size_schedule": "0:32 1M:64"}}`,
			"train.global_batch", "train.global_batch=64 is not the schedule's first batch size 32"},
		{"interleaved: an odd microbatch count", `{"parallel": {"vpp": 2}, "train": {"step_batch_size_schedule": "0:64 1M:68"}}`,
			batchSchedulePath, "M=17 microbatches, which the interleaved schedule (vpp=2)"},
		{"interleaved: an even one", `{"parallel": {"vpp": 2}, "train": {"step_batch_size_schedule": "0:64 1M:72"}}`, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := specFrom(t, parse(t, tc.override))
			var got []diag.Diagnostic
			for _, d := range Run(s, spec.Derive(s), diag.NoPos) {
				if d.Code == "batch-schedule" {
					got = append(got, d)
				}
			}
			if tc.path == "" {
				if len(got) > 0 {
					t.Fatalf("want no batch-schedule diagnostic, got %v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Path != tc.path || !strings.Contains(got[0].Message, tc.message) {
				t.Fatalf("want one batch-schedule at %s containing %q, got %v", tc.path, tc.message, got)
			}
			if got[0].Hint == "" {
				t.Errorf("no hint")
			}
		})
	}
}

// The hint's corrected schedule passes: the nearest multiple of
// micro_batch·dp for the failing phase, the other entries as written.
func TestBatchScheduleHint(t *testing.T) {
	s := specFrom(t, parse(t, `{"train": {"step_batch_size_schedule": "0:64 1M:130 2M:256"}}`))
	l := Run(s, spec.Derive(s), diag.NoPos)
	var hint string
	for _, d := range l {
		if d.Code == "batch-schedule" {
			hint = d.Hint
		}
	}
	if !strings.Contains(hint, `"0:64 1M:132 2M:256"`) {
		t.Fatalf("hint %q", hint)
	}
	fixed := "0:64 1M:132 2M:256"
	s.Train.StepBatchSizeSchedule = &fixed
	for _, d := range Run(s, spec.Derive(s), diag.NoPos) {
		if d.Code == "batch-schedule" {
			t.Fatalf("the hint's schedule fails: %v", d)
		}
	}
}
