package estimate

import "parc.dev/parc/internal/diag"

// Codes lists every code the estimate stage emits.
var Codes = []diag.CodeInfo{
	{Code: CodeMemoryExceedsGPU, Severity: diag.Error, Meaning: "The most loaded GPU's peak memory (weights, gradients, optimizer state, activations) exceeds the GPU's memory; the message shows the breakdown.", Fix: "Use the distributed optimizer, more pp or tp, a smaller micro_batch, or recompute (the hint names what helps most)."},
	{Code: CodeMemoryNearLimit, Severity: diag.Warning, Meaning: "Peak memory is above 90% of the GPU's memory: allocator fragmentation and NCCL buffers may not fit.", Fix: "Leave headroom: the same levers as memory-exceeds-gpu."},
	{Code: CodePipelineBubble, Severity: diag.Warning, Meaning: "The pipeline bubble (p−1)/(m+p−1), or (p−1)/(v·m+p−1) interleaved, is above 25% of the step.", Fix: "Raise the number of microbatches (the hint names the count and the global batch), or interleave with vpp."},
	{Code: CodeRunExceedsTimeLimit, Severity: diag.Warning, Meaning: "The training run is estimated to outlast the Slurm job's time limit (cluster.slurm.time) while Megatron is not told to stop and save before it (train.exit_duration_in_mins below the limit, or cluster.slurm.preempt_signal_seconds, each with checkpoint.save): Slurm ends the job mid-run, or Megatron stops without saving, and the steps since the last checkpoint are lost.", Fix: "Set train.exit_duration_in_mins below the limit with checkpoint.save and resubmit to resume, or raise cluster.slurm.time."},
	{Code: CodeRoutingUnbounded, Severity: diag.Warning, Meaning: "An MoE with no load-balancing loss, no expert bias, no forced balancing and dropless dispatch: nothing keeps the experts' loads even, the busiest expert rank sets the step, and the estimate (balanced experts) is a lower bound.", Fix: "Set a load-balancing loss (model.moe.router_load_balancing \"aux_loss\" or \"seq_aux_loss\") or model.moe.expert_bias."},
	{Code: CodeBucketPerTensor, Severity: diag.Warning, Meaning: "train.ddp_bucket_size is below the size of the rank's parameter tensors: Megatron never splits a parameter across buckets, so every tensor is a data-parallel collective of its own, each paying a ring's latency (the size counts parameters, not megabytes).", Fix: "Give the size in parameters (Megatron-Bridge and NeMo use 134217728), or leave it out for Megatron's default."},
	{Code: CodeCommsExceedCompute, Severity: diag.Warning, Meaning: "An axis's exposed communication on its link takes longer than the compute it goes with.", Fix: "Keep that axis inside the NVLink domain, or lower its degree."},
}
