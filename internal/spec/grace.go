package spec

// DefaultGraceSeconds is the grace period (stop signal to SIGKILL) when
// neither launch.grace_seconds nor a preemption warning says otherwise: 30 s,
// Slurm's default KillWait (slurm.conf(5)) and torchrun's default timeout in
// PContext.close (torch.distributed.elastic.multiprocessing.api), so that the
// three launcher modes agree by default.
const DefaultGraceSeconds = 30

// GraceSeconds is the plan's grace period: how long workers get between the
// stop signal (SIGTERM, or the preemption warning's) and SIGKILL. It is
// launch.grace_seconds when set; else, with a preemption warning
// (cluster.slurm.preempt_signal_seconds), the whole warning, so that a
// checkpoint started on the warning may use all of it; else
// DefaultGraceSeconds.
func (s *Spec) GraceSeconds() int {
	if s.Launch.GraceSeconds != nil {
		return *s.Launch.GraceSeconds
	}
	if sl := s.Cluster.Slurm; sl != nil && sl.PreemptSignalSeconds != nil {
		return max(*sl.PreemptSignalSeconds, DefaultGraceSeconds)
	}
	return DefaultGraceSeconds
}
