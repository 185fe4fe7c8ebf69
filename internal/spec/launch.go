package spec

import "slices"

// FSDP reports which fully-sharded data parallelism the plan uses:
// "megatron-fsdp" (train.fsdp, or --use-megatron-fsdp in launch.extra_args),
// "torch-fsdp2" (--use-torch-fsdp2 in launch.extra_args), or "" for none.
func (s *Spec) FSDP() string {
	if s.Train.FSDP {
		return "megatron-fsdp"
	}
	for _, a := range s.Launch.ExtraArgs {
		switch a {
		case "--use-torch-fsdp2":
			return "torch-fsdp2"
		case "--use-megatron-fsdp":
			return "megatron-fsdp"
		}
	}
	return ""
}

// NeedsSerialCUDAConnections reports whether Megatron-Core requires
// CUDA_DEVICE_MAX_CONNECTIONS=1 for this plan: tensor or context parallelism
// on a GPU before Blackwell (compute capability < 10), unless FSDP (which
// requires the opposite) or parallel.overlap_moe_expert_parallel_comm (or
// --overlap-moe-expert-parallel-comm in launch.extra_args; it only
// warns) is on (validate_args, rule C5; O4/O5).
func (s *Spec) NeedsSerialCUDAConnections() bool {
	return (s.Parallel.TP > 1 || s.Parallel.CP > 1) && s.Cluster.GPU.ComputeCapability < 10 &&
		s.FSDP() == "" && !s.Parallel.OverlapMoEExpertParallelComm &&
		!slices.Contains(s.Launch.ExtraArgs, "--overlap-moe-expert-parallel-comm")
}
