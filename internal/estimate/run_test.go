package estimate

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// TestTrainingRun: the run's steps are Megatron's (train.iters; with
// train.samples, samples // global_batch as update_train_iters counts them
// without a schedule; with a step schedule, each phase the run reaches at
// its own batch, rated by the estimate at that batch), its tokens are the
// samples times the sequence, its time is the steps' plus the evaluations'
// (every eval_interval steps on the validation set, and once more on the
// validation and the test set at the end), and its GPU-hours are the time
// times the GPUs.
func TestTrainingRun(t *testing.T) {
	load := func(gbs int, train, logging string) (*spec.Spec, spec.Derived, *Estimate, *TrainingRun) {
		s := loadSpecText(t, `
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 2}
parallel: {tp: 2, pp: 2, vpp: 2}
train: {seq_length: 8192, micro_batch: 1, global_batch: `+fmt.Sprint(gbs)+`, `+train+`}
logging: {`+logging+`}
`)
		d := spec.Derive(s)
		links := DefaultLinks(s, d)
		e, _ := RunWith(s, d, links, diag.NoPos, DefaultOptions())
		if e == nil {
			t.Fatal("no estimate")
		}
		return s, d, e, TrainingRunOf(s, d, links, DefaultOptions(), e)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: %g, want %g", what, got, want)
		}
	}

	if _, _, _, r := load(64, `recompute: "none"`, ``); r != nil {
		t.Errorf("a run without a length: %+v", r)
	}

	// 1000 iterations, evaluations every 300 steps: 3 in the loop, and the
	// validation and test sets at the end.
	_, d, e, r := load(64, `iters: 1000`, `eval_interval: 300, eval_iters: 5`)
	if r.Steps != 1000 || r.Samples != 64000 || r.Tokens != 64000*8192 || r.Evaluations != 5 || r.GPUs != 16 {
		t.Fatalf("run %+v", r)
	}
	near("train time", r.TrainS, 1000*e.StepTimeS)
	fwd := (float64(d.Microbatches) + 1.0/2) * e.Compute.ForwardMicrobatchS // (m + (pp−1)/vpp) forward passes
	near("evaluation time", r.EvalS, 5*5*fwd)
	near("GPU-hours", r.GPUHours, (r.TrainS+r.EvalS)*16/3600)
	if e.Compute.ForwardMicrobatchS <= 0 || fwd >= e.StepTimeS {
		t.Errorf("a forward-only step %g s against the training step %g s", fwd, e.StepTimeS)
	}

	// No test set: one evaluation fewer; no validation set: none in the loop.
	if _, _, _, r := load(64, `iters: 1000`, `eval_interval: 300, eval_iters: 5`+"}\ndata: {split: \"99,1,0\""); r.Evaluations != 4 {
		t.Errorf("split without a test share: %d evaluations", r.Evaluations)
	}
	if _, _, _, r := load(64, `iters: 1000`, `eval_interval: 300, eval_iters: 5`+"}\ndata: {split: \"100,0,0\""); r.Evaluations != 0 {
		t.Errorf("split without validation or test: %d evaluations", r.Evaluations)
	}

	// train.samples without a schedule: samples // global_batch steps.
	if _, _, _, r := load(64, `samples: 6500`, `eval_iters: 0`); r.Steps != 101 || r.Samples != 101*64 {
		t.Errorf("samples-based run %+v", r)
	}

	// A step schedule: 64 until 1M tokens (122 samples), then 128.
	// Steps: 2 at 64 (0, 64 < 122), then 128 from 128 samples on.
	_, _, e, r = load(64, `iters: 10, step_batch_size_schedule: "0:64 1M:128"`, `eval_iters: 0`)
	if len(r.Phases) != 2 || r.Phases[0].Steps != 2 || r.Phases[1].Steps != 8 || r.Phases[1].Batch != 128 || r.Samples != 2*64+8*128 {
		t.Fatalf("scheduled run %+v", r)
	}
	near("first phase at the plan's step", r.Phases[0].StepTimeS, e.StepTimeS)
	_, _, e2, _ := load(128, `iters: 10`, `eval_iters: 0`)
	near("second phase at its batch's step", r.Phases[1].StepTimeS, e2.StepTimeS)
	near("scheduled run time", r.TrainS, 2*e.StepTimeS+8*e2.StepTimeS)
	if e2.StepTimeS <= e.StepTimeS {
		t.Errorf("a step of 128 samples (%g s) is not longer than one of 64 (%g s)", e2.StepTimeS, e.StepTimeS)
	}
}

// TestTimeLimitDiagnostics: a run longer than the Slurm time limit is warned
// about unless Megatron stops and saves before it (exit_duration_in_mins
// below the limit, or the preemption signal with checkpoint.save), at the
// field that decides; the hint's exit_duration_in_mins clears it.
func TestTimeLimitDiagnostics(t *testing.T) {
	base := &TrainingRun{Steps: 1000, TrainS: 36000, TimeS: 36000} // 10 h
	cases := []struct {
		name, text string
		path, msg  string // "" path: no warning
	}{
		{"no limit", `{}`, "", ""},
		{"within the limit", `{"cluster": {"slurm": {"time": "12:00:00"}}}`, "", ""},
		{"no limit to exceed", `{"cluster": {"slurm": {"time": "infinite"}}}`, "", ""},
		{"over, nothing saved", `{"cluster": {"slurm": {"time": "04:00:00"}}}`,
			"cluster.slurm.time", "estimated at 10.0 h (1000 steps), longer than the Slurm time limit of 240 min (cluster.slurm.time): Slurm ends the job after about 400 steps, and the spec saves no checkpoint"},
		{"over, saved", `{"cluster": {"slurm": {"time": "04:00:00"}}, "checkpoint": {"save": "ck", "interval": 500}}`,
			"cluster.slurm.time", "the steps since the last checkpoint are lost (every checkpoint.interval = 500 steps)"},
		{"exit before the limit, saved", `{"cluster": {"slurm": {"time": "04:00:00"}}, "train": {"exit_duration_in_mins": 230}, "checkpoint": {"save": "ck"}}`, "", ""},
		{"exit before the limit, nothing saved", `{"cluster": {"slurm": {"time": "04:00:00"}}, "train": {"exit_duration_in_mins": 230}}`,
			"train.exit_duration_in_mins", "Megatron stops after train.exit_duration_in_mins = 230 min, about 383 steps in, but the spec saves no checkpoint"},
		{"exit at the limit", `{"cluster": {"slurm": {"time": "04:00:00"}}, "train": {"exit_duration_in_mins": 240}}`,
			"train.exit_duration_in_mins", "train.exit_duration_in_mins = 240 is not below the Slurm time limit of 240 min"},
		{"preemption signal with saves", `{"cluster": {"slurm": {"time": "04:00:00", "preempt_signal_seconds": 300}}, "checkpoint": {"save": "ck"}}`, "", ""},
		{"a limit below two minutes", `{"cluster": {"slurm": {"time": "00:01:30"}}}`,
			"cluster.slurm.time", "longer than the Slurm time limit of 1 min"},
		{"preemption signal, nothing saved", `{"cluster": {"slurm": {"time": "04:00:00", "preempt_signal_seconds": 300}}}`,
			"cluster.slurm.time", "saves no checkpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &spec.Spec{}
			if err := json.Unmarshal([]byte(tc.text), s); err != nil {
				t.Fatal(err)
			}
			limit := 0
			if sl := s.Cluster.Slurm; sl != nil && sl.Time != nil {
				limit = map[string]int{"04:00:00": 4 * 3600, "12:00:00": 12 * 3600, "00:01:30": 90, "infinite": -1}[*sl.Time]
			}
			l := TimeLimitDiagnostics(s, base, limit, diag.NoPos)
			if tc.path == "" {
				if len(l) > 0 {
					t.Fatalf("want no warning, got %v", l)
				}
				return
			}
			if len(l) != 1 || l[0].Path != tc.path || l[0].Code != CodeRunExceedsTimeLimit || !strings.Contains(l[0].Message, tc.msg) {
				t.Fatalf("want a warning at %s containing %q, got %v", tc.path, tc.msg, l)
			}
			// The hint's exit_duration_in_mins (216 = 90% of 240) clears it,
			// with checkpoint.save where the hint asks for it.
			v, dir := 216, "ck"
			switch {
			case strings.Contains(l[0].Hint, "set train.exit_duration_in_mins to 216"):
				s.Train.ExitDurationInMins = &v
			case strings.HasPrefix(l[0].Hint, "set checkpoint.save"):
			case strings.HasPrefix(l[0].Hint, "raise cluster.slurm.time to at least 600 min"):
				limit = 600 * 60 // the hint's limit: the run's 10 h
				if l := TimeLimitDiagnostics(s, base, limit, diag.NoPos); len(l) > 0 {
					t.Errorf("the hint's limit leaves %v", l)
				}
				return
			default:
				t.Fatalf("hint %q", l[0].Hint)
			}
			if strings.Contains(l[0].Hint, "checkpoint.save") {
				if s.Checkpoint == nil {
					s.Checkpoint = &spec.Checkpoint{}
				}
				s.Checkpoint.Save = &dir
			}
			if l := TimeLimitDiagnostics(s, base, limit, diag.NoPos); len(l) > 0 {
				t.Errorf("the hint's value leaves %v", l)
			}
		})
	}
}

// TestSplitIntoJobs: a 10 h run under a 4 h limit takes ceil(10 h / work)
// jobs where each stops and saves in time: 216 min with an exit duration,
// 4 h less the 300 s warning with the preemption signal; none where it
// cannot resume (nothing saved, or no stop before the limit) or fits one job.
func TestSplitIntoJobs(t *testing.T) {
	for _, tc := range []struct {
		text string
		jobs int
		work float64
	}{
		{`{"train": {"exit_duration_in_mins": 216}, "checkpoint": {"save": "ck"}}`, 3, 216 * 60},
		{`{"cluster": {"slurm": {"preempt_signal_seconds": 300}}, "checkpoint": {"save": "ck"}}`, 3, 4*3600 - 300},
		{`{"train": {"exit_duration_in_mins": 216}}`, 0, 0},
		{`{"checkpoint": {"save": "ck"}}`, 0, 0},
	} {
		s := &spec.Spec{}
		if err := json.Unmarshal([]byte(tc.text), s); err != nil {
			t.Fatal(err)
		}
		r := &TrainingRun{Steps: 1000, TrainS: 36000, TimeS: 36000}
		r.SplitIntoJobs(s, 4*3600)
		if r.Jobs != tc.jobs || r.JobS != tc.work {
			t.Errorf("%s: %d jobs of %g s, want %d of %g", tc.text, r.Jobs, r.JobS, tc.jobs, tc.work)
		}
		short := &TrainingRun{Steps: 10, TrainS: 3600, TimeS: 3600}
		if short.SplitIntoJobs(s, 4*3600); short.Jobs != 0 {
			t.Errorf("%s: a run of one job split into %d", tc.text, short.Jobs)
		}
		// The warning and the jobs come from one reading of the spec: a
		// run split into jobs is never warned about, one that is not
		// always is.
		if warned := len(TimeLimitDiagnostics(s, r, 4*3600, diag.NoPos)) > 0; warned == (tc.jobs > 0) {
			t.Errorf("%s: %d jobs, warned %v", tc.text, r.Jobs, warned)
		}
	}
	// A limit of whole seconds: an exit duration of 2 min stops a job in
	// time under 2 min 30 s (it once read the limit as 2 whole minutes and
	// warned while counting the jobs).
	s := &spec.Spec{}
	if err := json.Unmarshal([]byte(`{"train": {"exit_duration_in_mins": 2}, "checkpoint": {"save": "ck"}}`), s); err != nil {
		t.Fatal(err)
	}
	r := &TrainingRun{Steps: 1000, TrainS: 3600, TimeS: 3600}
	r.SplitIntoJobs(s, 150)
	if r.Jobs != 30 {
		t.Errorf("2 min jobs of a 1 h run under a 150 s limit: %d, want 30", r.Jobs)
	}
	if l := TimeLimitDiagnostics(s, r, 150, diag.NoPos); len(l) > 0 {
		t.Errorf("warned although each job stops and saves in time: %s", l[0].Message)
	}
}
