package estimate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// TrainingRun is what the whole run costs: the optimizer steps Megatron
// takes (train.iters, or train.samples as update_train_iters counts them),
// the samples and tokens they train on, and the estimated time and
// GPU-hours. Each step is rated at its own batch: with a step batch-size
// schedule every phase the run reaches is estimated at its batch size
// (Phases). The evaluations logging.eval_interval and logging.eval_iters
// ask for are added as forward passes. Start-up, checkpoint saves, restarts
// after failures and the data pipeline are not in it.
type TrainingRun struct {
	Steps   int64 `json:"steps"`
	Samples int64 `json:"samples"`
	Tokens  int64 `json:"tokens"`
	// TrainS is the steps' time, EvalS the evaluations' (Evaluations of
	// logging.eval_iters forward-only steps each: every eval_interval
	// steps and once at the end), TimeS both.
	TrainS      float64 `json:"train_s"`
	Evaluations int64   `json:"evaluations"`
	EvalS       float64 `json:"eval_s"`
	TimeS       float64 `json:"time_s"`
	// GPUHours is TimeS times the GPUs, in hours.
	GPUs     int        `json:"gpus"`
	GPUHours float64    `json:"gpu_hours"`
	Phases   []RunPhase `json:"phases,omitempty"`
	// Jobs is how many Slurm jobs the run takes when it outlasts one and
	// resumes safely (SplitIntoJobs), each JobS long; 0 otherwise.
	Jobs int     `json:"jobs,omitempty"`
	JobS float64 `json:"job_s,omitempty"`
}

// SplitIntoJobs counts the jobs a run longer than the Slurm time limit
// (limitS seconds; 0 or less: none) takes where each stops and saves in
// time and the next resumes (stopsBefore, with checkpoint.save). Where the
// run cannot resume, TimeLimitDiagnostics warns instead and no jobs are
// counted.
func (r *TrainingRun) SplitIntoJobs(s *spec.Spec, limitS int) {
	if r == nil || limitS <= 0 || r.TimeS <= float64(limitS) || !savesCheckpoints(s) {
		return
	}
	if work, _ := stopsBefore(s, limitS); work > 0 {
		r.Jobs, r.JobS = int(math.Ceil(r.TimeS/work)), work
	}
}

// stopsBefore is how long a job trains before Megatron stops it ahead of
// the Slurm time limit of limitS seconds, 0 when nothing does: with
// train.exit_duration_in_mins below the limit (byExit), that long, counted
// from the start of pretrain; else with cluster.slurm.preempt_signal_seconds
// below the limit, until the batch script's signal (--exit-signal-handler).
// Megatron saves a checkpoint when it stops so only with checkpoint.save.
func stopsBefore(s *spec.Spec, limitS int) (workS float64, byExit bool) {
	if e := s.Train.ExitDurationInMins; e != nil && *e*60 < limitS {
		return float64(*e * 60), true
	}
	if sl := s.Cluster.Slurm; sl != nil && sl.PreemptSignalSeconds != nil && *sl.PreemptSignalSeconds < limitS {
		return float64(limitS - *sl.PreemptSignalSeconds), false
	}
	return 0, false
}

// savesCheckpoints: the spec saves checkpoints (checkpoint.save), so a job
// that stops can be resumed.
func savesCheckpoints(s *spec.Spec) bool { return s.Checkpoint != nil && s.Checkpoint.Save != nil }

// RunPhase is a stretch of the run at one scheduled batch size.
type RunPhase struct {
	Batch     int64   `json:"batch"`
	FromStep  int64   `json:"from_step"`
	Steps     int64   `json:"steps"`
	StepTimeS float64 `json:"step_time_s"`
}

// maxRunPhases bounds the phases TrainingRunOf estimates one by one (each
// is a full estimate); a schedule with more is not rated.
const maxRunPhases = 64

// TrainingRunOf rates the run of the plan base estimates: nil when the spec
// bounds no run (neither train.iters nor train.samples) or its batch
// schedule does not parse (batch-schedule reports it).
func TrainingRunOf(s *spec.Spec, d spec.Derived, links map[string]string, o Options, base *Estimate) *TrainingRun {
	t := s.Train
	if base == nil || (t.Iters == nil && t.Samples == nil) || t.SeqLength <= 0 || t.GlobalBatch <= 0 {
		return nil
	}
	run := &TrainingRun{}
	stepAt := map[int64]float64{int64(t.GlobalBatch): base.StepTimeS}
	if t.StepBatchSizeSchedule == nil {
		steps := int64(0)
		if t.Iters != nil {
			steps = int64(*t.Iters)
		} else {
			steps = int64(*t.Samples) / int64(t.GlobalBatch) // update_train_iters without a schedule
		}
		run.Steps, run.Samples = steps, steps*int64(t.GlobalBatch)
		run.TrainS = float64(steps) * base.StepTimeS
	} else {
		phases, err := spec.ParseBatchSchedule(*t.StepBatchSizeSchedule, t.SeqLength)
		if err != nil {
			return nil
		}
		stages, _ := spec.ScheduledRun(phases, t.Iters, t.Samples)
		if len(stages) > maxRunPhases {
			return nil
		}
		for _, st := range stages {
			step, ok := stepAt[st.Batch]
			if !ok {
				s2 := *s
				s2.Train.GlobalBatch = int(st.Batch)
				d2 := spec.Derive(&s2)
				e, _ := RunWith(&s2, d2, links, diag.NoPos, o)
				if e == nil {
					return nil
				}
				step = e.StepTimeS
				stepAt[st.Batch] = step
			}
			run.Phases = append(run.Phases, RunPhase{Batch: st.Batch, FromStep: st.FromStep, Steps: st.Steps, StepTimeS: step})
			run.Steps += st.Steps
			run.Samples += st.Steps * st.Batch
			run.TrainS += float64(st.Steps) * step
		}
	}
	run.Tokens = run.Samples * int64(t.SeqLength)
	run.Evaluations, run.EvalS = evaluations(s, d, base, run.Steps)
	run.TimeS = run.TrainS + run.EvalS
	run.GPUs = d.World
	run.GPUHours = run.TimeS * float64(d.World) / 3600
	return run
}

// evaluations counts the evaluations of a run of steps steps and their
// time: Megatron's train loop evaluates the validation set every
// logging.eval_interval steps, and pretrain once more after the loop on the
// validation and on the test set (do_valid, do_test: the splits data.split
// gives them a share of), logging.eval_iters forward-only steps each on the
// evaluation batch (the global batch; with a batch schedule, micro_batch·dp,
// which validate_args sets when no --global-batch-size is given). A
// forward-only step runs its microbatches through the pipeline once:
// (m + (pp−1)/vpp) forward passes of the slowest stage.
func evaluations(s *spec.Spec, d spec.Derived, base *Estimate, steps int64) (int64, float64) {
	l := s.Logging
	if l.EvalIters <= 0 || steps <= 0 {
		return 0, 0
	}
	valid, test := splitShares(s.Data.Split)
	var n int64
	if valid {
		n++
		if l.EvalInterval != nil && *l.EvalInterval > 0 {
			n += steps / int64(*l.EvalInterval)
		}
	}
	if test {
		n++
	}
	m := float64(d.Microbatches)
	if s.Train.StepBatchSizeSchedule != nil {
		m = 1
	}
	vpp := float64(max(d.VPP, 1))
	step := (m + float64(s.Parallel.PP-1)/vpp) * base.Compute.ForwardMicrobatchS
	return n, float64(n) * float64(l.EvalIters) * step
}

// splitShares says whether data.split ("train,valid,test" weights, commas
// or slashes, missing ones 0: parse_and_normalize_split) gives the
// validation and the test set a share.
func splitShares(split string) (valid, test bool) {
	w := strings.FieldsFunc(split, func(r rune) bool { return r == ',' || r == '/' })
	share := func(i int) bool {
		if i >= len(w) {
			return false
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(w[i]), 64)
		return err == nil && f > 0
	}
	return share(1), share(2)
}

// CodeRunExceedsTimeLimit: the run outlasts the Slurm job's time limit.
const CodeRunExceedsTimeLimit = "run-exceeds-time-limit"

// TimeLimitDiagnostics warns when the estimated run r is longer than the
// job's time limit of limitS seconds (cluster.slurm.time; 0 or less: none)
// and Megatron is not told to stop before it: without
// train.exit_duration_in_mins below the limit, Slurm ends the job mid-run and
// the steps since the last checkpoint are lost (all of them without
// checkpoint.save). Megatron's --exit-duration-in-mins counts from the start
// of pretrain and, when it passes, saves a checkpoint (with --save) and
// exits, so the run resumes in the next job; with
// cluster.slurm.preempt_signal_seconds and checkpoint.save the batch script's
// signal has Megatron save and exit (--exit-signal-handler) before the limit.
func TimeLimitDiagnostics(s *spec.Spec, r *TrainingRun, limitS int, at diag.Locator) diag.List {
	if r == nil || limitS <= 0 || r.TimeS <= float64(limitS) || r.Steps <= 0 {
		return nil
	}
	rep := diag.NewReporter(at)
	limitMin := limitS / 60
	exit := s.Train.ExitDurationInMins
	saved := savesCheckpoints(s)
	if work, byExit := stopsBefore(s, limitS); work > 0 {
		if saved {
			return nil // Megatron stops and saves in time; the run spans several jobs
		}
		if byExit {
			rep.Warnf("train.exit_duration_in_mins", CodeRunExceedsTimeLimit,
				"set checkpoint.save and checkpoint.load to a checkpoint directory, so that Megatron saves when it stops and the next job resumes",
				"the training run is estimated at %s (%d steps), longer than the Slurm time limit of %d min: Megatron stops after train.exit_duration_in_mins = %d min, about %d steps in, but the spec saves no checkpoint (checkpoint.save), so the run cannot resume",
				diag.Duration(r.TimeS), r.Steps, limitMin, *exit, int64(work/(r.TrainS/float64(r.Steps))))
			return rep.List
		}
	}
	suggest := max(1, limitMin*9/10)
	saves := "the spec saves no checkpoint (checkpoint.save), so the run cannot resume"
	if saved {
		saves = fmt.Sprintf("the steps since the last checkpoint are lost (every checkpoint.interval = %d steps)", s.Checkpoint.Interval)
	}
	perStep := r.TrainS / float64(r.Steps)
	done := int64(float64(limitS) / perStep)
	jobs := int64(math.Ceil(r.TimeS / (float64(suggest) * 60)))
	hint := fmt.Sprintf("set train.exit_duration_in_mins to %d (below the limit, leaving time to save) so that Megatron saves and stops in time, and submit the job again to resume (about %d jobs)", suggest, jobs)
	if !saved {
		hint += ", with checkpoint.save and checkpoint.load naming the checkpoint directory"
	}
	hint += "; or set cluster.slurm.preempt_signal_seconds (with checkpoint.save: Megatron saves on the signal, and cluster.slurm.requeue resubmits the job); or raise cluster.slurm.time"
	if suggest >= limitMin {
		// A limit of a minute or less leaves no whole minute to stop in.
		hint = fmt.Sprintf("raise cluster.slurm.time to at least %d min: a limit of %d s leaves Megatron no whole minute to stop and save in", int(math.Ceil(r.TimeS/60)), limitS)
	}
	if exit != nil {
		rep.Warnf("train.exit_duration_in_mins", CodeRunExceedsTimeLimit, hint,
			"train.exit_duration_in_mins = %d is not below the Slurm time limit of %d min (cluster.slurm.time), and the run is estimated at %s: Slurm ends the job before Megatron stops, after about %d of %d steps; %s",
			*exit, limitMin, diag.Duration(r.TimeS), done, r.Steps, saves)
		return rep.List
	}
	rep.Warnf("cluster.slurm.time", CodeRunExceedsTimeLimit, hint,
		"the training run is estimated at %s (%d steps), longer than the Slurm time limit of %d min (cluster.slurm.time): Slurm ends the job after about %d steps, and %s",
		diag.Duration(r.TimeS), r.Steps, limitMin, done, saves)
	return rep.List
}
