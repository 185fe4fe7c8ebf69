package spec

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"parc.dev/parc/internal/testenv"
)

func TestParseBatchSchedule(t *testing.T) {
	cases := []struct {
		text string
		seq  int
		want string // phases as "samples:batch ...", or the error's start
	}{
		{"0:768 250B:1536 500B:3072 750B:6144", 4096, "0:768 61035156:1536 122070312:3072 183105468:6144"},
		{"0:384 200B:768 400B:1152", 2048, "0:384 97656250:768 195312500:1152"},
		{"750B:6144,0:768", 4096, "0:768 183105468:6144"},
		{"  0:16\t1.5k:32  ", 1000, "0:16 1:32"},
		{"1_000:2 0:1", 1000, "0:1 1:2"},
		{"-1:4 0:8", 2048, "error: first schedule entry must have threshold 0, got -1 samples"},
		{"0:8 1K:16", 2048, "error: schedule thresholds must be strictly increasing"},
		{"0:8 _1:16", 1, `error: entry "_1:16": threshold "_1" is not a number`},
		{"0:8 1e400:16", 1, `error: entry "1e400:16": threshold "1e400" is not a finite number`},
		{"0:8 9e18:16", 1, "0:8 9000000000000000000:16"},
		{"0:8 nan:16", 1, `error: entry "nan:16": threshold "nan" is not a finite number`},
		{"0:2.9", 1, "0:2"},
		{"0:0.5K", 1, "0:500"},
		{"", 1, "error: schedule must have at least one entry"},
	}
	for _, tc := range cases {
		got := describePhases(ParseBatchSchedule(tc.text, tc.seq))
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("ParseBatchSchedule(%q, %d) = %s, want %s", tc.text, tc.seq, got, tc.want)
		}
	}
}

func describePhases(ps []BatchPhase, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%d:%d", p.FromSample, p.Batch)
	}
	return strings.Join(parts, " ")
}

func TestScheduledRun(t *testing.T) {
	ps, err := ParseBatchSchedule("0:64 100K:128 1M:256", 2048) // 0, 48 and 488 samples
	if err != nil {
		t.Fatal(err)
	}
	iters := 10
	got := fmt.Sprint(ScheduledRun(ps, &iters, nil))
	// Step 1 at 0 samples (64), step 2 at 64 ≥ 48 (128 from then on),
	// 64+3·128 = 448 < 488, so step 5 is the last at 128; step 6 at 576.
	if want := "[{0 64 0 0 1} {1 128 1 64 4} {2 256 5 576 5}] true"; got != want {
		t.Errorf("ScheduledRun = %s, want %s", got, want)
	}
	samples := 500
	if got, want := fmt.Sprint(ScheduledRun(ps, nil, &samples)), "[{0 64 0 0 1} {1 128 1 64 4} {2 256 5 576 0}] true"; got == want {
		t.Errorf("a stage of 0 steps: %s", got)
	}
	if got, want := fmt.Sprint(ScheduledRun(ps, nil, &samples)), "[{0 64 0 0 1} {1 128 1 64 4}] true"; got != want {
		t.Errorf("ScheduledRun by samples = %s, want %s", got, want)
	}
}

// TestBatchScheduleMatchesMegatron runs schedules through Megatron-Core's own
// StepBatchsizeNumMicroBatchesCalculator (num_microbatches_calculator.py,
// standard library only, loaded by path) and its training loop's stepping
// (update before every step, consumed samples growing by the current batch;
// update_train_iters' count for --train-samples), and compares the parsed
// phases, the errors and the batch at every step with ParseBatchSchedule and
// ScheduledRun. It needs a Megatron-LM checkout at the commit of
// targets/megatron/options.tsv, named by MEGATRON_LM.
func TestBatchScheduleMatchesMegatron(t *testing.T) {
	root := testenv.MegatronLM(t)
	type scase struct {
		Text    string `json:"text"`
		Seq     int    `json:"seq"`
		Iters   *int   `json:"iters"`
		Samples *int   `json:"samples"`
	}
	r := rand.New(rand.NewPCG(14, 41))
	// Mostly values Megatron reads, a fifth it refuses.
	pick := func(good, bad []string) string {
		if r.IntN(5) == 0 {
			return bad[r.IntN(len(bad))]
		}
		return good[r.IntN(len(good))]
	}
	goodT := []string{"1K", "1.5M", "2B", "100", "1e3", "1_000", "3.7k", "250B", "1T", " 7 ", "+8", "0.0001M", "5000", "0"}
	badT := []string{"-5", "0x10", "inf", "nan", "", "1__0", "--8", "1e400"}
	goodB := []string{"64", "128", "1.5K", "3.7", "2k", "256", "1e2", "96", "0.5K"}
	badB := []string{"0", "-1", "", "nan", "0x40"}
	seps := []string{" ", ",", "\t", ", ", "  "}
	var cases []scase
	for range 1000 {
		n := 1 + r.IntN(4)
		var b strings.Builder
		if r.IntN(3) > 0 {
			b.WriteString("0:64 ") // most schedules start well, so that the later entries decide
		}
		for i := range n {
			if i > 0 {
				b.WriteString(seps[r.IntN(len(seps))])
			}
			if r.IntN(25) == 0 {
				b.WriteString(pick(goodT, badT)) // no colon
				continue
			}
			fmt.Fprintf(&b, "%s:%s", pick(goodT, badT), pick(goodB, badB))
		}
		c := scase{Text: b.String(), Seq: []int{1, 7, 1000, 2048, 4096}[r.IntN(5)]}
		switch k := 1 + r.IntN(200); r.IntN(3) {
		case 0:
			c.Iters = &k
		case 1:
			s := k * 50
			c.Samples = &s
		}
		cases = append(cases, c)
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	script := `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("nmc", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
for c in json.load(sys.stdin):
    try:
        calc = m.StepBatchsizeNumMicroBatchesCalculator(1, 1, False, 1, c["text"], seq_length=c["seq"])
    except BaseException as e:
        print(json.dumps({"error": True})); continue
    steps = []
    iters = c["iters"]
    if iters is None and c["samples"] is not None:
        # update_train_iters (training.py) with a schedule
        iters, consumed = 0, 0
        while consumed < c["samples"]:
            calc.update(consumed, False); consumed += calc.get_current_global_batch_size(); iters += 1
    if iters is not None:
        consumed = 0
        for it in range(iters):
            calc.update(consumed, False)
            b = calc.get_current_global_batch_size()
            steps.append(b); consumed += b
    print(json.dumps({"phases": [[t, b] for t, b in calc.schedule], "steps": steps}))
`
	cmd := exec.Command("python3", "-c", script, filepath.Join(root, "megatron", "core", "num_microbatches_calculator.py"))
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<24)
	i, accepted := 0, 0
	for sc.Scan() {
		var got struct {
			Error  bool       `json:"error"`
			Phases [][2]int64 `json:"phases"`
			Steps  []int64    `json:"steps"`
		}
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		c := cases[i]
		i++
		ps, err := ParseBatchSchedule(c.Text, c.Seq)
		if got.Error != (err != nil) {
			t.Errorf("%q (seq %d): Megatron error %v, parc %v", c.Text, c.Seq, got.Error, err)
			continue
		}
		if err != nil {
			continue
		}
		accepted++
		if len(ps) != len(got.Phases) {
			t.Errorf("%q: phases %v, parc %v", c.Text, got.Phases, ps)
			continue
		}
		for j, p := range ps {
			if p.FromSample != got.Phases[j][0] || p.Batch != got.Phases[j][1] {
				t.Errorf("%q: phase %d Megatron %v, parc %d:%d", c.Text, j, got.Phases[j], p.FromSample, p.Batch)
			}
		}
		if c.Iters == nil && c.Samples == nil {
			continue
		}
		var steps []int64
		stages, _ := ScheduledRun(ps, c.Iters, c.Samples)
		for _, st := range stages {
			for range st.Steps {
				steps = append(steps, st.Batch)
			}
		}
		if fmt.Sprint(steps) != fmt.Sprint(got.Steps) {
			t.Errorf("%q, iters %v, samples %v: Megatron's steps %v, parc's %v", c.Text, c.Iters, c.Samples, got.Steps, steps)
		}
	}
	if i != len(cases) {
		t.Fatalf("python answered %d of %d cases", i, len(cases))
	}
	if accepted < 100 || accepted > len(cases)-100 {
		t.Errorf("%d of %d schedules accepted: the generator should give both kinds", accepted, len(cases))
	}
	t.Logf("%d schedules, %d accepted by Megatron and parc alike", len(cases), accepted)
}
