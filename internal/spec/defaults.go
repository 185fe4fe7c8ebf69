package spec

// DefaultTPCommOverlap is parallel.tp_comm_overlap when the spec leaves it
// out: Transformer Engine's userbuffer overlap of tensor-parallel
// communication with the GEMMs, on where NVIDIA's performance recipes turn it
// on (Megatron-Bridge and NeMo: tp > 1 with sequence parallelism, Hopper and
// later) and where Megatron allows it (validate_args: sequence parallelism;
// --deterministic-mode forbids it). Megatron's own default is off.
func DefaultTPCommOverlap(s *Spec) bool {
	p := s.Parallel
	return p.TP > 1 && (p.SP == nil || *p.SP) && s.Cluster.GPU.ComputeCapability >= 9 && !s.Train.DeterministicMode
}

// TPCommOverlapOn reports whether the plan overlaps tensor-parallel
// communication: parallel.tp_comm_overlap as written, else
// DefaultTPCommOverlap for the plan's own degrees (so a plan whose tp a
// hint, a remedy or the solver changes takes the default of its new tp).
func TPCommOverlapOn(s *Spec) bool {
	if v := s.Parallel.TPCommOverlap; v != nil {
		return *v
	}
	return DefaultTPCommOverlap(s)
}
