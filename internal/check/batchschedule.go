package check

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

const batchSchedulePath = "train.step_batch_size_schedule"

// batchSchedule checks train.step_batch_size_schedule as Megatron reads and
// runs it: the schedule itself at start-up (B8, spec.ParseBatchSchedule);
// train.global_batch against its first batch size, which is the batch parc
// plans, rates and checks with (Megatron takes no --global-batch-size beside
// a schedule); and, for every later phase the run reaches
// (spec.ScheduledRun: all of them when train.iters and train.samples are
// both unset), what the training loop asserts at that phase's first step
// however far into the run it lies: the batch divisible by micro_batch·dp
// (B9), no fewer microbatches than the phase before (B10), and with the
// interleaved schedule a microbatch count the group allows (P25/P26).
func (c *checker) batchSchedule() {
	t := c.s.Train
	if t.StepBatchSizeSchedule == nil {
		return
	}
	phases, err := spec.ParseBatchSchedule(*t.StepBatchSizeSchedule, t.SeqLength)
	if err != nil {
		c.report("batch-schedule", batchSchedulePath,
			`write "THRESHOLD:BATCH" entries separated by spaces, thresholds in tokens (K, M, B, T suffixes), the first 0, increasing, e.g. "0:256 100B:512"`,
			"Megatron's step batch-size schedule parser rejects %q: %v", clip(*t.StepBatchSizeSchedule, 120), err)
		return
	}
	if int64(t.GlobalBatch) != phases[0].Batch {
		hint := fmt.Sprintf("set train.global_batch to %d", phases[0].Batch)
		if phases[0].Batch > 1<<30 || !c.accepts("batch-schedule", "train.global_batch", int(phases[0].Batch)) {
			hint = "set train.global_batch to the schedule's first batch size"
		}
		c.report("batch-schedule", "train.global_batch", hint,
			"train.global_batch=%d is not the schedule's first batch size %d: with a schedule Megatron takes no --global-batch-size, and parc plans, rates and checks the first phase with train.global_batch",
			t.GlobalBatch, phases[0].Batch).
			Related(batchSchedulePath, "step_batch_size_schedule = %q", clip(*t.StepBatchSizeSchedule, 120))
		return
	}
	if !c.gridOK() {
		return
	}
	unit := int64(t.MicroBatch * c.d.DP)
	stages, bounded := spec.ScheduledRun(phases, t.Iters, t.Samples)
	interleaved := c.vppOn() && c.s.Parallel.PP > 1
	N, pp := c.d.MicrobatchGroup, c.s.Parallel.PP
	prev := phases[0].Batch / unit // the first phase is global_batch's (global-batch, interleave-microbatches)
	for _, st := range stages {
		if st.Phase == 0 {
			continue
		}
		p := phases[st.Phase]
		where := fmt.Sprintf("the entry %s:%s (from %d samples", p.Threshold, p.BatchText, p.FromSample)
		if bounded {
			where += fmt.Sprintf(", step %d of the run", st.FromStep+1)
		}
		where += ")"
		M := st.Batch / unit
		ok := func(b int64) bool {
			m := b / unit
			return b%unit == 0 && m >= prev && (!interleaved || InterleaveGroupValid(N, int(m), pp))
		}
		if ok(st.Batch) {
			prev = M
			continue
		}
		hint := c.scheduleHint(phases, st.Phase, unit, ok)
		switch {
		case st.Batch%unit != 0:
			c.report("batch-schedule", batchSchedulePath, hint,
				"%s: batch size %d is not divisible by micro_batch·dp = %d·%d = %d; Megatron's training loop stops when the run reaches it (update_num_microbatches' consistency check)",
				where, st.Batch, t.MicroBatch, c.d.DP, unit)
		case M < prev:
			c.report("batch-schedule", batchSchedulePath, hint,
				"%s: batch size %d gives %d microbatches, fewer than the %d before it; Megatron's training loop stops there (\"Number of microbatches should not decrease\")",
				where, st.Batch, M, prev)
		default:
			c.report("batch-schedule", batchSchedulePath, hint,
				"%s: batch size %d gives M=%d microbatches, which the interleaved schedule (vpp=%d) does not allow with the microbatch group N=%d on pp=%d stages (M ≥ N, M mod N 0 or ≥ pp); Megatron stops at that phase's first step",
				where, st.Batch, M, c.s.Parallel.VPP, N, pp)
		}
		return // the loop stops at the first failing phase
	}
	c.batchScheduleIterations(phases, unit)
}

// batchScheduleIterations warns when a batch schedule meets iteration-based
// training: with a schedule Megatron takes no --global-batch-size and sets it
// to micro_batch·dp (validate_args), and get_optimizer_param_scheduler
// (training.py at d98e8a64) turns train.iters, lr_decay_iters,
// lr_warmup_iters and lr_wsd_decay_iters into samples with that batch, while
// train_step advances the scheduler by each step's scheduled batch. The
// warmup and the decay then end after a fraction of the steps they name, and
// the learning rate stays at min_lr for the rest of the run. Sample-based
// training (train.samples, lr_*_samples) counts what the steps consume.
func (c *checker) batchScheduleIterations(phases []spec.BatchPhase, unit int64) {
	t := c.s.Train
	if t.Iters == nil {
		return
	}
	stages, _ := spec.ScheduledRun(phases, t.Iters, nil)
	lo, hi := stages[0].Batch, stages[0].Batch
	for _, st := range stages {
		lo, hi = min(lo, st.Batch), max(hi, st.Batch)
	}
	if hi <= unit {
		return // every step is micro_batch·dp samples: the iterations count right
	}
	// endStep is the step after which n scheduler iterations (n·unit
	// samples) have passed; samples is what n steps of the run consume.
	endStep := func(n int64) int64 {
		var consumed int64
		for _, st := range stages {
			need := n*unit - consumed
			if need <= st.Steps*st.Batch {
				return st.FromStep + (need+st.Batch-1)/st.Batch
			}
			consumed += st.Steps * st.Batch
		}
		return -1
	}
	samples := func(n int) int64 {
		var total int64
		st, _ := spec.ScheduledRun(phases, &n, nil)
		for _, x := range st {
			total += x.Steps * x.Batch
		}
		return total
	}
	decay := *t.Iters
	if t.LRDecayIters != nil {
		decay = *t.LRDecayIters
	}
	end := endStep(int64(decay))
	what := fmt.Sprintf("the learning-rate decay over lr_decay_iters=%d iterations (%s samples) ends at step %d of the run's %d", decay, diag.Thousands(int64(decay)*unit), end, *t.Iters)
	if t.LRDecayIters == nil {
		what = fmt.Sprintf("the learning-rate decay over train.iters=%d iterations (%s samples) ends at step %d", decay, diag.Thousands(int64(decay)*unit), end)
	}
	after := ", and the learning rate stays at min_lr after it"
	if end < 0 {
		// A decay longer than the run: it does not end, but runs ahead.
		run := samples(*t.Iters)
		what = fmt.Sprintf("by the run's last step the learning-rate decay over lr_decay_iters=%d iterations (%s samples) has run through %.0f%% of them, not the %.0f%% its iterations say",
			decay, diag.Thousands(int64(decay)*unit), 100*min(1, float64(run)/float64(int64(decay)*unit)), 100*float64(*t.Iters)/float64(decay))
		after = ""
	}
	if t.LRWarmupIters > 0 && t.LRWarmupFraction == nil {
		if w := endStep(int64(t.LRWarmupIters)); w > 0 {
			what += fmt.Sprintf(", the warmup of %d iterations at step %d", t.LRWarmupIters, w)
		}
	}
	// The hint: the same run by samples, each iteration count as the
	// samples the run's steps consume.
	var set []setting
	var parts []string
	for _, f := range []struct {
		n           *int
		path, name  string // the iteration count's field, as the hint names it
		unset       any    // what the field becomes: removed (nil), or 0
		samplesPath string
	}{
		{t.Iters, "train.iters", "train.iters", nil, "train.samples"},
		{positive(t.LRWarmupIters), "train.lr_warmup_iters", "lr_warmup_iters", 0, "train.lr_warmup_samples"},
		{t.LRDecayIters, "train.lr_decay_iters", "lr_decay_iters", nil, "train.lr_decay_samples"},
		{t.LRWSDDecayIters, "train.lr_wsd_decay_iters", "lr_wsd_decay_iters", nil, "train.lr_wsd_decay_samples"},
	} {
		if f.n == nil {
			continue
		}
		n := int(samples(*f.n))
		set = append(set, setting{f.path, f.unset}, setting{f.samplesPath, n})
		parts = append(parts, fmt.Sprintf("%s: %d instead of %s", f.samplesPath, n, f.name))
	}
	hint := "train by samples (train.samples and the lr_*_samples fields), which count what the scheduled steps consume"
	if c.acceptsAll("batch-schedule-iterations", set...) {
		hint = "train by samples, the same run: " + strings.Join(parts, ", ")
	}
	take := fmt.Sprintf("%d", lo)
	if hi > lo {
		take = fmt.Sprintf("%d to %d", lo, hi)
	}
	c.report("batch-schedule-iterations", "train.iters", hint,
		"with train.step_batch_size_schedule Megatron takes no --global-batch-size and counts an iteration of the learning-rate schedule as micro_batch·dp = %d samples, while the scheduled steps take %s: %s%s",
		unit, take, what, after)
}

// scheduleHint offers the schedule with phase i's batch size replaced by
// the nearest one ok accepts (at most 64 multiples of unit away), when the
// whole schedule then passes; otherwise says what a valid size must be.
func (c *checker) scheduleHint(phases []spec.BatchPhase, i int, unit int64, ok func(int64) bool) string {
	general := fmt.Sprintf("every batch size the run reaches must be a multiple of micro_batch·dp = %d, with no fewer microbatches than the one before", unit)
	b := phases[i].Batch
	base := b / unit * unit
	for k := int64(0); k <= 64; k++ {
		for _, cand := range []int64{base + (k+1)*unit, base - k*unit} {
			if cand <= 0 || cand > 1<<30 || !ok(cand) {
				continue
			}
			entries := make([]string, len(phases))
			for j, p := range phases {
				bs := p.BatchText
				if j == i {
					bs = fmt.Sprint(cand)
				}
				entries[j] = p.Threshold + ":" + bs
			}
			fixed := strings.Join(entries, " ")
			if c.acceptsAll("batch-schedule", setting{batchSchedulePath, fixed}) {
				return fmt.Sprintf("%s; e.g. %q", general, fixed)
			}
			return general
		}
	}
	return general
}

// clip shortens a long value for a message: its first n bytes (on a rune
// boundary) and an ellipsis.
func clip(v string, n int) string {
	if len(v) <= n {
		return v
	}
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n] + "…"
}

// positive is &n for n > 0, else nil: an iteration count the spec sets.
func positive(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}
