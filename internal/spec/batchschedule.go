package spec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// BatchPhase is one entry of a step batch-size schedule
// (train.step_batch_size_schedule, --step-batch-size-schedule): from
// FromSample consumed samples on, the global batch is Batch.
type BatchPhase struct {
	FromSample int64
	Batch      int64
	// Threshold and BatchText are the entry's two fields as written.
	Threshold, BatchText string
}

// maxScheduleEntries bounds a schedule's entries (hostile input): Megatron
// logs and walks every entry at start-up; no real schedule has more than a
// handful.
const maxScheduleEntries = 4096

// ParseBatchSchedule reads a step batch-size schedule as Megatron-Core's
// StepBatchsizeNumMicroBatchesCalculator does (_parse_schedule and
// _validate_schedule, megatron/core/num_microbatches_calculator.py at
// d98e8a64): entries "THRESHOLD:BATCH" split at whitespace and commas; each
// number a float with an optional K, M, B or T suffix (any case), truncated
// to an integer (int(float(v) · multiplier)); thresholds are tokens, turned
// into samples by floor division by the sequence length (Megatron passes
// --seq-length, so they are never read as samples); entries sorted by
// threshold. The first threshold must be 0 samples, the thresholds strictly
// increasing, every batch positive. The error is Megatron's.
func ParseBatchSchedule(text string, seqLength int) ([]BatchPhase, error) {
	if seqLength <= 0 {
		return nil, fmt.Errorf("the sequence length is not positive")
	}
	entries := strings.FieldsFunc(strings.ReplaceAll(text, ",", " "), pythonSpace)
	if len(entries) > maxScheduleEntries {
		return nil, fmt.Errorf("%d entries; parc reads at most %d", len(entries), maxScheduleEntries)
	}
	var phases []BatchPhase
	for _, entry := range entries {
		thr, bs, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("invalid schedule entry %q: expected format THRESHOLD:BATCH_SIZE", entry)
		}
		t, err := scheduleNumber(thr)
		if err != nil {
			return nil, fmt.Errorf("entry %q: threshold %w", entry, err)
		}
		b, err := scheduleNumber(bs)
		if err != nil {
			return nil, fmt.Errorf("entry %q: batch size %w", entry, err)
		}
		phases = append(phases, BatchPhase{FromSample: floorDiv(t, int64(seqLength)), Batch: b, Threshold: thr, BatchText: bs})
	}
	slices.SortStableFunc(phases, func(a, b BatchPhase) int {
		switch {
		case a.FromSample < b.FromSample:
			return -1
		case a.FromSample > b.FromSample:
			return 1
		}
		return 0
	})
	if len(phases) == 0 {
		return nil, fmt.Errorf("schedule must have at least one entry")
	}
	if phases[0].FromSample != 0 {
		return nil, fmt.Errorf("first schedule entry must have threshold 0, got %d samples (%s tokens / seq_length %d)",
			phases[0].FromSample, phases[0].Threshold, seqLength)
	}
	for i := 1; i < len(phases); i++ {
		if phases[i].FromSample <= phases[i-1].FromSample {
			return nil, fmt.Errorf("schedule thresholds must be strictly increasing, got %d before %d samples (%s and %s tokens / seq_length %d)",
				phases[i-1].FromSample, phases[i].FromSample, phases[i-1].Threshold, phases[i].Threshold, seqLength)
		}
	}
	for _, p := range phases {
		if p.Batch <= 0 {
			return nil, fmt.Errorf("batch size must be positive, got %d", p.Batch)
		}
	}
	return phases, nil
}

// pythonSpace is str.split()'s whitespace: Unicode spaces and the ASCII
// separators 0x1c–0x1f.
func pythonSpace(r rune) bool {
	return r == ' ' || (r >= '\t' && r <= '\r') || (r >= 0x1c && r <= 0x1f) || r == 0x85 || r == 0xa0 ||
		r == 0x1680 || (r >= 0x2000 && r <= 0x200a) || r == 0x2028 || r == 0x2029 || r == 0x202f || r == 0x205f || r == 0x3000
}

// scheduleNumber is _parse_numeric_value: strip, upper-case, an optional
// K/M/B/T suffix, then int(float(rest) · multiplier). Values beyond int64
// are clamped (a threshold no run reaches); what Python's float() refuses
// (hexadecimal, misplaced underscores) and what int() refuses (inf, nan)
// is an error.
func scheduleNumber(s string) (int64, error) {
	v := strings.ToUpper(strings.TrimFunc(s, pythonSpace))
	mult := 1.0
	switch {
	case strings.HasSuffix(v, "T"):
		mult = 1e12
	case strings.HasSuffix(v, "B"):
		mult = 1e9
	case strings.HasSuffix(v, "M"):
		mult = 1e6
	case strings.HasSuffix(v, "K"):
		mult = 1e3
	}
	if mult != 1 {
		v = v[:len(v)-1]
	}
	f, ok := pythonFloat(strings.TrimFunc(v, pythonSpace))
	if !ok {
		return 0, fmt.Errorf("%q is not a number", strings.TrimFunc(s, pythonSpace))
	}
	x := math.Trunc(f * mult)
	switch {
	case math.IsInf(x, 0) || math.IsNaN(x):
		return 0, fmt.Errorf("%q is not a finite number", strings.TrimFunc(s, pythonSpace))
	case x >= math.MaxInt64:
		return math.MaxInt64, nil
	case x <= math.MinInt64:
		return math.MinInt64, nil
	}
	return int64(x), nil
}

// pythonFloat is Python's float() of a string without its surrounding
// whitespace: decimal only (no hexadecimal), underscores only between
// digits (PEP 515).
func pythonFloat(s string) (float64, bool) {
	body := strings.TrimLeft(s, "+-")
	low := strings.ToLower(body)
	if len(body) < len(s)-1 || strings.HasPrefix(low, "0x") || strings.HasPrefix(low, "0b") || strings.HasPrefix(low, "0o") {
		return 0, false
	}
	if strings.Contains(s, "_") {
		for i := 0; i < len(s); i++ {
			if s[i] == '_' && (i == 0 || i == len(s)-1 || !isDigit(s[i-1]) || !isDigit(s[i+1])) {
				return 0, false
			}
		}
		s = strings.ReplaceAll(s, "_", "")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if e, ok := err.(*strconv.NumError); ok && e.Err == strconv.ErrRange {
			return f, true // ±Inf or 0: Python gives the same
		}
		return 0, false
	}
	return f, true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// floorDiv is Python's // on integers.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// BatchStage is a stretch of a run at one scheduled batch size: Steps
// optimizer steps of Batch samples from step FromStep and FromSample
// consumed samples on, under schedule entry Phase.
type BatchStage struct {
	Phase      int
	Batch      int64
	FromStep   int64
	FromSample int64
	Steps      int64
}

// ScheduledRun walks a run through its batch schedule as Megatron's
// training loop does (update_num_microbatches before every step on the
// consumed samples, each step consuming the current batch): the stages it
// reaches, in order. iters bounds the run (--train-iters); with samples
// instead (--train-samples) the run takes as many steps as update_train_iters
// counts, stepping until the consumed samples reach them. With neither the
// run is unbounded and every phase is returned once, with Steps 0. A stage
// whose step count would overflow is cut at maxRunSteps.
func ScheduledRun(phases []BatchPhase, iters, samples *int) (stages []BatchStage, bounded bool) {
	if len(phases) == 0 {
		return nil, false
	}
	if iters == nil && samples == nil {
		for i, p := range phases {
			stages = append(stages, BatchStage{Phase: i, Batch: p.Batch, FromSample: p.FromSample})
		}
		return stages, false
	}
	var step, consumed int64
	for range 2 * len(phases) {
		// The phase in force: the last whose threshold the consumed
		// samples reached (_get_batch_size_for_samples).
		i := 0
		for j, p := range phases {
			if consumed >= p.FromSample {
				i = j
			}
		}
		b := phases[i].Batch
		n := int64(maxRunSteps)
		if i+1 < len(phases) {
			n = ceilDiv(phases[i+1].FromSample-consumed, b)
		}
		if iters != nil {
			n = min(n, int64(*iters)-step)
		} else {
			n = min(n, ceilDiv(int64(*samples)-consumed, b))
		}
		if n <= 0 {
			break
		}
		stages = append(stages, BatchStage{Phase: i, Batch: b, FromStep: step, FromSample: consumed, Steps: n})
		step += n
		if consumed > math.MaxInt64/2 || n > (math.MaxInt64/2-consumed)/b {
			break
		}
		consumed += n * b
	}
	return stages, true
}

// maxRunSteps bounds the steps ScheduledRun counts in one stage.
const maxRunSteps = 1 << 40

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}
