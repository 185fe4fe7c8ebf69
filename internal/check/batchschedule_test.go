package check

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/testenv"
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

// With a batch schedule and train.iters, Megatron's learning-rate schedule
// counts micro_batch·dp samples an iteration (base: 4) while the steps take
// their scheduled batch: the decay of 100 iterations (400 samples) ends at
// step 7 of 100 (64 samples a step), the warmup of 10 (40 samples) at step 1.
// The hint is the same run by samples, and it clears the warning.
func TestBatchScheduleIterations(t *testing.T) {
	s := specFrom(t, parse(t, `{"train": {"lr_warmup_iters": 10, "step_batch_size_schedule": "0:64 1M:128"}}`))
	var got []diag.Diagnostic
	for _, d := range Run(s, spec.Derive(s), diag.NoPos) {
		if d.Code == "batch-schedule-iterations" {
			got = append(got, d)
		}
	}
	want := "counts an iteration of the learning-rate schedule as micro_batch·dp = 4 samples, while the scheduled steps take 64 to 128: the learning-rate decay over train.iters=100 iterations (400 samples) ends at step 7, the warmup of 10 iterations at step 1"
	if len(got) != 1 || got[0].Path != "train.iters" || !strings.Contains(got[0].Message, want) {
		t.Fatalf("want one batch-schedule-iterations at train.iters containing %q, got %v", want, got)
	}
	// 8 steps of 64 (512 ≥ 488 samples), then 92 of 128; the warmup's 10
	// steps are 640 samples... of 64, then 128: 8·64 + 2·128 = 768.
	if !strings.Contains(got[0].Hint, "train.samples: 12288 instead of train.iters, train.lr_warmup_samples: 768 instead of lr_warmup_iters") {
		t.Fatalf("hint %q", got[0].Hint)
	}
	s.Train.Iters = nil
	n, w := 12288, 768
	s.Train.Samples, s.Train.LRWarmupIters, s.Train.LRWarmupSamples = &n, 0, w
	for _, d := range Run(s, spec.Derive(s), diag.NoPos) {
		if d.Severity == diag.Error || d.Code == "batch-schedule-iterations" {
			t.Errorf("the hint's run: %v", d)
		}
	}
	// A decay longer than the run does not end in it, but runs ahead: 100
	// steps consume 12,288 samples, 61% of lr_decay_iters=5000 (20,000
	// samples), where its iterations say 2%.
	s = specFrom(t, parse(t, `{"train": {"lr_decay_iters": 5000, "step_batch_size_schedule": "0:64 1M:128"}}`))
	got = nil
	for _, d := range Run(s, spec.Derive(s), diag.NoPos) {
		if d.Code == "batch-schedule-iterations" {
			got = append(got, d)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0].Message, "by the run's last step the learning-rate decay over lr_decay_iters=5000 iterations (20,000 samples) has run through 61% of them, not the 2% its iterations say") {
		t.Fatalf("a decay longer than the run: %v", got)
	}
	// A schedule whose every batch is micro_batch·dp counts right.
	s = specFrom(t, parse(t, `{"train": {"global_batch": 4, "step_batch_size_schedule": "0:4 1M:4"}}`))
	for _, d := range Run(s, spec.Derive(s), diag.NoPos) {
		if d.Code == "batch-schedule-iterations" {
			t.Errorf("one microbatch a step: %v", d)
		}
	}
}

// TestBatchScheduleIterationsMatchesMegatron drives Megatron-Core's own
// OptimizerParamScheduler (megatron/core/optimizer_param_scheduler.py) as
// training.py does with a schedule and --train-iters (get_optimizer_param_scheduler's
// steps at --global-batch-size = micro_batch·dp, train_step's increment of
// the step's scheduled batch, the batch from StepBatchsizeNumMicroBatchesCalculator)
// and compares the step at which the learning rate reaches min_lr, and the
// step that ends the warmup, with batch-schedule-iterations' message. It
// needs torch and a Megatron-LM checkout named by MEGATRON_LM.
func TestBatchScheduleIterationsMatchesMegatron(t *testing.T) {
	root := testenv.MegatronLM(t)
	type tcase struct {
		Schedule string `json:"schedule"`
		Iters    int    `json:"iters"`
		Warmup   int    `json:"warmup"`
		Decay    int    `json:"decay"`
	}
	var cases []tcase
	for _, sch := range []string{"0:64 1M:128", "0:8 100K:16 500K:64", "0:4 1M:8", "0:32 4M:256"} {
		for _, it := range []int{50, 100, 300} {
			for _, w := range []int{0, 10} {
				cases = append(cases, tcase{sch, it, w, it}, tcase{sch, it, w, it / 2})
			}
		}
	}
	in, _ := json.Marshal(cases)
	script := `
import importlib.util, json, sys, types
root = sys.argv[1]
for name in ("megatron", "megatron.core"):
    sys.modules[name] = types.ModuleType(name)
utils = types.ModuleType("megatron.core.utils"); utils.log_single_rank = lambda *a, **k: None
sys.modules["megatron.core.utils"] = utils
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, root + path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
ops = load("ops", "/megatron/core/optimizer_param_scheduler.py")
nmc = load("nmc", "/megatron/core/num_microbatches_calculator.py")
unit = 4  # micro_batch 1 x dp 4: the base plan
for c in json.load(sys.stdin):
    calc = nmc.StepBatchsizeNumMicroBatchesCalculator(1, 4, False, 1, c["schedule"], seq_length=2048)
    class Opt: param_groups = [{"params": [], "lr": 0.0, "weight_decay": 0.1}]
    s = ops.OptimizerParamScheduler(Opt(), init_lr=0.0, max_lr=3e-4, min_lr=3e-5,
        lr_warmup_steps=c["warmup"] * unit, lr_decay_steps=c["decay"] * unit, lr_decay_style="cosine",
        start_wd=0.1, end_wd=0.1, wd_incr_steps=c["iters"] * unit, wd_incr_style="constant")
    consumed, warm, end = 0, None, None
    for it in range(1, c["iters"] + 1):
        calc.update(consumed, True)
        inc = calc.get() * 1 * 4
        s.step(increment=inc); consumed += inc
        if warm is None and c["warmup"] > 0 and s.num_steps >= s.lr_warmup_steps: warm = it
        if end is None and s.num_steps > s.lr_warmup_steps and s.get_lr(Opt.param_groups[0]) <= 3e-5: end = it
    print(json.dumps({"warm": warm, "end": end}))
`
	cmd := exec.Command(testenv.Python(t), "-c", script, root) // the scheduler imports torch
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("python answered %d of %d cases:\n%s", len(lines), len(cases), out)
	}
	endRE := regexp.MustCompile(`ends at step (\d+)`)
	warned := 0
	warmRE := regexp.MustCompile(`the warmup of \d+ iterations at step (\d+)`)
	for i, c := range cases {
		var got struct{ Warm, End *int }
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatal(err)
		}
		first := strings.TrimPrefix(strings.Fields(c.Schedule)[0], "0:")
		over := fmt.Sprintf(`{"train": {"global_batch": %s, "iters": %d, "lr_warmup_iters": %d, "step_batch_size_schedule": %q}}`, first, c.Iters, c.Warmup, c.Schedule)
		if c.Decay != c.Iters {
			over = fmt.Sprintf(`{"train": {"global_batch": %s, "iters": %d, "lr_warmup_iters": %d, "lr_decay_iters": %d, "step_batch_size_schedule": %q}}`, first, c.Iters, c.Warmup, c.Decay, c.Schedule)
		}
		s := specFrom(t, parse(t, over))
		var msg string
		for _, d := range Run(s, spec.Derive(s), diag.NoPos) {
			if d.Code == "batch-schedule-iterations" {
				msg = d.Message
			}
		}
		if msg == "" {
			// No warning: every step is micro_batch·dp samples, and the
			// schedule ends where its iterations say.
			if got.End == nil || *got.End != c.Decay || (c.Warmup > 0 && (got.Warm == nil || *got.Warm != c.Warmup)) {
				t.Errorf("%+v: no warning, but Megatron's decay ends at step %s and its warmup at %s", c, stepText(got.End), stepText(got.Warm))
			}
			continue
		}
		warned++
		m := endRE.FindStringSubmatch(msg)
		if m == nil || got.End == nil || m[1] != fmt.Sprint(*got.End) {
			t.Errorf("%+v: Megatron's learning rate reaches min_lr at step %s; parc says %q", c, stepText(got.End), msg)
		}
		if w := warmRE.FindStringSubmatch(msg); c.Warmup > 0 && (w == nil || got.Warm == nil || w[1] != fmt.Sprint(*got.Warm)) {
			t.Errorf("%+v: Megatron's warmup ends at step %s; parc says %q", c, stepText(got.Warm), msg)
		}
	}
	if warned < len(cases)/2 {
		t.Errorf("only %d of %d runs warned: the cases should mostly run past micro_batch·dp", warned, len(cases))
	}
	if !t.Failed() {
		t.Logf("%d runs (%d warned): the decay's and the warmup's ends agree with Megatron's scheduler", len(cases), warned)
	}
}

func stepText(p *int) string {
	if p == nil {
		return "never"
	}
	return fmt.Sprint(*p)
}
