package estimate

import (
	"fmt"
	"math"
	"strings"

	"parc.dev/parc/internal/diag"
)

// Diagnostic codes of the estimate stage.
const (
	CodeMemoryExceedsGPU   = "memory-exceeds-gpu"
	CodeMemoryNearLimit    = "memory-near-limit"
	CodePipelineBubble     = "pipeline-bubble"
	CodeCommsExceedCompute = "comms-exceed-compute"
	CodeRoutingUnbounded   = "moe-routing-unbounded"
	CodeBucketPerTensor    = "ddp-bucket-per-tensor"
)

// GiB formats bytes in binary gigabytes.
func GiB(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

func (c *costModel) diagnose(e *Estimate, at diag.Locator, o Options) diag.List {
	r := diag.NewReporter(at)
	c.diagnoseMemory(e, r, o)
	c.diagnoseBubble(e, r, o)
	c.diagnoseComms(e, r)
	c.diagnoseRouting(r)
	c.diagnoseBuckets(e, r)
	return r.List
}

// memoryBreakdown renders a stage's memory as "weights … + … = total".
func memoryBreakdown(st StageMemory) string {
	buffers := ""
	if st.CommBuffers > 0 {
		buffers = fmt.Sprintf(" + dispatcher buffers %s", GiB(st.CommBuffers))
	}
	return fmt.Sprintf("weights %s + gradients %s + optimizer %s + activations %s (layers %s, embedding %s, logits %s, recompute %s)%s = %s",
		GiB(st.Weights), GiB(st.Gradients), GiB(st.Optimizer), GiB(st.Activations),
		GiB(st.ActivationsLayers), GiB(st.ActivationsEmbedding), GiB(st.ActivationsLogits),
		GiB(st.ActivationsRecompute), buffers, GiB(st.Total))
}

func (c *costModel) diagnoseMemory(e *Estimate, r *diag.Reporter, o Options) {
	if e.Memory.GPUBytes <= 0 || len(e.Memory.Stages) == 0 {
		return
	}
	st := e.Memory.Stages[e.Memory.PeakStage]
	gpu := c.s.Cluster.GPU
	near := o.NearLimit
	if near <= 0 || near >= 1 {
		near = DefaultOptions().NearLimit
	}
	over, nearLimit := e.Memory.ExceedsGPU(), float64(st.Total) > near*float64(e.Memory.GPUBytes)
	if !over && !nearLimit {
		return
	}
	limit := e.Memory.GPUBytes
	if !over {
		limit = int64(near * float64(e.Memory.GPUBytes))
	}
	path, hint := c.memoryRemedy(st, limit)
	where := fmt.Sprintf("pipeline stage %d of %d", st.Stage, c.pp)
	if c.pp == 1 {
		where = "the plan"
	}
	switch {
	case over:
		r.Errorf(path, CodeMemoryExceedsGPU, hint,
			"%s needs %s per GPU, more than the %s of a %s: %s",
			where, GiB(st.Total), GiB(e.Memory.GPUBytes), gpuName(gpu.Name), memoryBreakdown(st))
	default:
		r.Warnf(path, CodeMemoryNearLimit, hint,
			"%s needs %s per GPU, %.0f%% of the %s of a %s (above %.0f%%; allocator fragmentation and NCCL buffers need the rest): %s",
			where, GiB(st.Total), 100*float64(st.Total)/float64(e.Memory.GPUBytes), GiB(e.Memory.GPUBytes),
			gpuName(gpu.Name), 100*near, memoryBreakdown(st))
	}
}

func gpuName(n string) string {
	if n == "" {
		return "GPU"
	}
	return n
}

// memoryRemedy blames the field behind the largest part of a stage's memory
// and says what brings the peak to at most limit bytes. With VerifyHints the
// values it suggests are each estimated again and pass every check; without
// it (the solver) it names the fields only.
func (c *costModel) memoryRemedy(st StageMemory, limit int64) (path, hint string) {
	parts := map[string]int64{"weights": st.Weights, "gradients": st.Gradients, "optimizer": st.Optimizer, "activations": st.Activations}
	largest := "activations"
	for _, k := range []string{"weights", "gradients", "optimizer", "activations"} {
		if parts[k] > parts[largest] {
			largest = k
		}
	}
	switch {
	case largest == "activations":
		path = "train.micro_batch"
	case largest == "optimizer" && c.sharding == ShardNone:
		path = "train.distributed_optimizer"
	default:
		path = "parallel.pp"
	}
	split := fmt.Sprintf("raise parallel.pp (now %d) or parallel.tp (now %d)", c.pp, c.tp)
	if c.sh.experts > 0 {
		split += fmt.Sprintf(" or parallel.ep (now %d)", c.ep)
	}
	split += ", or add GPUs"
	if !c.o.VerifyHints {
		return path, "lower train.micro_batch, recompute more (train.recompute), turn on parallel.sp or train.distributed_optimizer, or " + split
	}
	fits := c.fittingRemedies(limit)
	// When the plan's GPUs cannot hold the model's state whatever the
	// degrees, raising them is no advice: the note says from how many
	// nodes a plan can fit.
	floor := StateFloorOf(c.s).Note(c.s.Cluster.Nodes, c.s.Cluster.GPUsPerNode, float64(limit), GiB(limit))
	switch {
	case floor != "" && len(fits) == 0:
		return path, fmt.Sprintf("no single change of %s brings it under %s, nor does any tp, pp or ep: %s", c.remedyFields(), GiB(limit), floor)
	case floor != "":
		return path, fmt.Sprintf("each of these alone brings it under %s: %s; no tp, pp or ep does: %s", GiB(limit), strings.Join(fits, ", "), floor)
	case len(fits) == 0:
		return path, fmt.Sprintf("no single change of %s brings it under %s; %s", c.remedyFields(), GiB(limit), split)
	}
	return path, fmt.Sprintf("each of these alone brings it under %s: %s; or %s", GiB(limit), strings.Join(fits, ", "), split)
}

func (c *costModel) diagnoseBubble(e *Estimate, r *diag.Reporter, o Options) {
	limit := o.BubbleWarn
	if limit <= 0 || c.pp <= 1 {
		return
	}
	b := e.Pipeline.BubbleFraction
	if b <= limit {
		return
	}
	formula := fmt.Sprintf("(p-1)/(m+p-1) = %d/%d", c.pp-1, c.m+c.pp-1)
	if c.vpp > 1 {
		formula = fmt.Sprintf("(p-1)/(v·m+p-1) = %d/%d", c.pp-1, c.vpp*c.m+c.pp-1)
	}
	need := MicrobatchesForBubble(c.pp, c.vpp, c.g, limit)
	tr := c.s.Train
	gb := need * tr.MicroBatch * c.dp
	hint := fmt.Sprintf("%d microbatches bring it to %.1f%%: train.global_batch = %d (micro_batch %d × dp %d × %d)",
		need, 100*BubbleFraction(c.pp, c.vpp, need), gb, tr.MicroBatch, c.dp, need)
	if !c.o.VerifyHints || need <= 0 || !c.globalBatchPasses(gb) {
		hint = fmt.Sprintf("raise the number of microbatches (train.global_batch over micro_batch %d × dp %d)", tr.MicroBatch, c.dp)
	}
	if c.vpp == 1 {
		hint += "; or interleave the pipeline with parallel.vpp"
	}
	if tr.MicroBatch > 1 {
		hint += fmt.Sprintf("; or lower train.micro_batch (now %d) to get more microbatches from the same global batch", tr.MicroBatch)
	}
	path := "train.global_batch"
	r.Warnf(path, CodePipelineBubble, hint,
		"the pipeline bubble is %.1f%% of each step (pp=%d, vpp=%d, %d microbatches: %s), above %.0f%%",
		100*b, c.pp, c.vpp, c.m, formula, 100*limit)
}

func (c *costModel) diagnoseComms(e *Estimate, r *diag.Reporter) {
	paths := map[string]string{
		"tp": "parallel.tp", "cp": "parallel.cp", "ep": "parallel.ep", "etp": "parallel.etp",
		"pp": "parallel.pp", "dp": "parallel.dp", "edp": "parallel.ep", "embd": "parallel.pp",
	}
	for _, ax := range e.Axes() {
		ac := e.Comms[ax]
		if ac.ExposedS <= 0 || e.Compute.TimeS <= 0 {
			continue
		}
		compute := e.Compute.TimeS
		if len(e.Memory.Stages) > ac.Stage {
			// compare with the compute of the stage that moves these bytes
			compute = c.stageComputeTime(ac.Stage)
		}
		if ac.ExposedS <= compute || math.IsInf(ac.ExposedS, 0) {
			continue
		}
		path := paths[ax]
		hint := fmt.Sprintf("keep %s inside the NVLink domain (cluster.nvlink_domain = %d GPUs) by lowering it or reordering parallel.order (now %q)",
			ax, c.s.Cluster.NVLinkDomain, c.s.Parallel.Order)
		if ac.Link == LinkNVLink {
			hint = fmt.Sprintf("lower %s, or give each GPU more work per step (train.micro_batch, train.seq_length)", path)
		}
		if ax == "dp" || ax == "edp" {
			hint = "set train.overlap_grad_reduce (and overlap_param_gather) to hide it behind the backward pass, or raise train.global_batch so each step computes longer"
		}
		r.Warnf(path, CodeCommsExceedCompute, hint,
			"%s communication crosses the %s link: %s per step per GPU at %.0f GB/s takes %.3g s, %.3g s of it exposed, more than the %.3g s of compute it goes with (%s)",
			ax, ac.Link, GiB(ac.BytesPerStep), ac.BandwidthGBps, ac.TimeS, ac.ExposedS, compute, ac.Collective)
	}
}

// diagnoseRouting warns where nothing keeps the experts' loads even
// (spec.MoE.UnboundedRouting): the step time assumes balanced experts, as
// every benchmark run of the calibration forces them, so for such a plan it
// is a lower bound. Megatron-Bridge's verification runs of GPT-OSS 120B and
// 20B on H100 with this routing (its model bridge sets no balancing loss;
// natural routing from a fresh start, examples/model_verification_cards at
// 067f987d) took 2.2x and 1.3x the estimated step
// (testdata/calibration/README.md, rows reported apart).
func (c *costModel) diagnoseRouting(r *diag.Reporter) {
	e := c.s.Model.MoE
	if !e.UnboundedRouting() {
		return
	}
	hint := `set model.moe.router_load_balancing to "aux_loss" (Megatron's default) or "seq_aux_loss", with a positive model.moe.aux_loss_coeff`
	if e.ScoreFunction == "sigmoid" {
		hint += ", or model.moe.expert_bias: true for aux-loss-free balancing"
	}
	routing := "dropless routing"
	if f := e.ExpertRankCapacityFactor; f != nil {
		routing = fmt.Sprintf("a per-rank budget that only caps a GPU at %g times its share (model.moe.expert_rank_capacity_factor)", *f)
	}
	r.Warnf("model.moe.router_load_balancing", CodeRoutingUnbounded, hint,
		"model.moe.router_load_balancing is %q with %s (no capacity_factor, no router_force_load_balancing, no expert_bias): nothing keeps the %d experts' loads even, the GPU holding the busiest ones sets every step, and the estimated step time, which takes every expert at its share of the tokens, is a lower bound",
		e.RouterLoadBalancing, routing, e.Experts)
}

// diagnoseBuckets warns where train.ddp_bucket_size is below the size of the
// rank's parameter tensors: Megatron never splits a parameter across buckets
// and closes one at the first parameter that reaches the size
// (param_and_grad_buffer.py, distrib_optimizer.py at d98e8a64), so every
// tensor becomes a collective of its own, each paying a ring's latency. The
// size counts parameters, not megabytes: MLPerf v5.1 Cisco's Llama 3.1 8B ran
// with 64 (its custom.yaml default, beside a BUCKET_CAP_MB=125 nothing read).
func (c *costModel) diagnoseBuckets(e *Estimate, r *diag.Reporter) {
	tr := c.s.Train
	ac, ok := e.Comms["dp"]
	if tr.DDPBucketSize == nil || !ok || ac.BucketParams <= 0 {
		return
	}
	// The resolved size: the whole buffer without overlap_grad_reduce
	// (ddpBucketParams), where one bucket never outnumbers the tensors.
	dense := c.stageTensors[ac.Stage].dense
	n, _ := c.stageParams[ac.Stage].denseExpertPerGPU(int64(c.tp), int64(c.etp), int64(c.ep))
	if dense <= 0 || float64(n)/float64(ac.BucketParams) <= float64(dense) {
		return
	}
	r.Warnf("train.ddp_bucket_size", CodeBucketPerTensor,
		"give the size in parameters: 134217728 (128Mi, Megatron-Bridge's and NeMo's), or leave it out for Megatron's max(40M, 1M·dp·cp)",
		"train.ddp_bucket_size=%d parameters is below the average size of pipeline stage %d's parameter tensors (%s parameters in %d tensors): Megatron never splits a parameter, so up to %d buckets, a data-parallel collective each, each paying a ring's latency; the size counts parameters, not megabytes",
		*tr.DDPBucketSize, ac.Stage, diag.Thousands(n), dense, dense)
}

// stageComputeTime is the busy compute per step of rank r.
func (c *costModel) stageComputeTime(r int) float64 {
	if r < len(c.computeS) {
		return c.computeS[r]
	}
	return 0
}
