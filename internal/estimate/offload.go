package estimate

import (
	"math"

	"parc.dev/parc/internal/spec"
)

// CPU activation offloading (train.cpu_offloading_num_layers,
// --cpu-offloading-num-layers). Megatron-Core at d98e8a64 wraps each decoder
// layer of its TransformerBlock in Transformer Engine's CPU offload context
// (transformer_block.py, get_cpu_offload_context(cpu_offloading,
// cpu_offloading_num_layers, num_layers, activations=True, weights=False,
// ...)) and commits the layer's offload after it (group_prefetch_offload_
// commit_async). TE (transformer_engine/pytorch/cpu_offload.py, the
// OffloadSynchronizer of TE 2.10 on; Megatron asks for NVTE_CPU_OFFLOAD_V1
// only with fine-grained offloading) offloads every tensor a layer saves for
// the backward except weights and tensors under 1 MiB, on its own CUDA
// stream, and schedules it so (_default_offload_sync_init):
//
//   - the offloaded layers are the first n, 0 … n−1;
//   - layer i's offload starts when its forward ends and must be finished,
//     freeing its GPU copy, before the forward of layer L−n+i starts;
//   - its reload starts with the backward of layer L−1−n+i and must be done
//     before its own backward.
//
// So at the forward of layer k (and again at its backward) the GPU holds
// the non-offloaded layers n … k and the offloaded layers i with
// k−(L−n) < i ≤ min(k, n−1): L−n layers' activations when all layers are
// alike, TE's stated design goal. Megatron refuses it with pp > 1, with
// recompute and with per-layer CUDA graphs (checked in internal/check), so
// only a single pipeline stage, one microbatch in flight, is modelled.

// defaultHostLinkGBps is the GPU ↔ host bandwidth when the cluster does not
// say: PCIe Gen5 x16, 64 GB/s each way (128 GB/s both directions on the
// H100/H200 SXM datasheets).
const defaultHostLinkGBps = 64

// offloadLayers is the number of leading decoder layers whose activations
// are offloaded: cpu_offloading_num_layers when Megatron runs it (one
// pipeline stage, fewer than all layers, no recompute), else 0.
func (c *costModel) offloadLayers() int {
	n := c.s.Train.CPUOffloadingNumLayers
	if n <= 0 || c.pp != 1 || n >= int(c.sh.layers) || (c.s.Train.Recompute != "" && c.s.Train.Recompute != "none") {
		return 0
	}
	return n
}

// offloadResident returns the largest sum of layer activations the GPU
// holds under TE's schedule (see above) for layers with activations act[l],
// the first n of them offloaded.
func offloadResident(act []float64, n int) float64 {
	L := len(act)
	var peak float64
	for k := range L {
		var held float64
		for l := n; l <= k; l++ {
			held += act[l]
		}
		for i := max(0, k-(L-n)+1); i <= min(k, n-1); i++ {
			held += act[i]
		}
		peak = math.Max(peak, held)
	}
	return peak
}

// layerActivations is every decoder layer's stored activations, nothing
// recomputed (offloading excludes recompute).
func (c *costModel) layerActivations() []float64 {
	act := make([]float64, int(c.sh.layers))
	for l := range act {
		act[l] = c.am.layerOf(c.sh.isMoE(l))
	}
	return act
}

// offloadedBytes is what CPU offloading keeps off the GPU at the activation
// peak of stage r (the layers' activations minus what TE's schedule holds),
// and the bytes each offloaded layer moves each way per microbatch.
func (c *costModel) offloadedBytes(r int) (saved, moved float64) {
	n := c.offloadLayers()
	if n == 0 || r != 0 {
		return 0, 0
	}
	act := c.layerActivations()
	var all float64
	for l, a := range act {
		all += a
		if l < n {
			moved += a
		}
	}
	return all - offloadResident(act, n), moved
}

// hostLinkBytesPerS is the GPU ↔ host bandwidth of one GPU, one direction.
func (c *costModel) hostLinkBytesPerS() float64 {
	gbps := float64(defaultHostLinkGBps)
	if g := c.s.Cluster.HostLinkGBps; g != nil && *g > 0 {
		gbps = *g
	}
	return gbps * 1e9
}

// offloadExposed is the time per microbatch the compute stream waits for
// the offload stream: the copies of TE's schedule (one stream, in layer
// order) run beside the layers' forward and backward, and a layer waits when
// its deadline (the offload to finish before the forward of layer L−n+i, the
// reload before the backward of layer i) comes before the copy ends.
func (c *costModel) offloadExposed() float64 {
	n := c.offloadLayers()
	if n == 0 {
		return 0
	}
	dense, moe := c.layerTimes()
	act := c.layerActivations()
	L := len(act)
	fwd, bwd := make([]float64, L), make([]float64, L)
	for l := range L {
		lt := dense
		if c.sh.isMoE(l) {
			lt = moe
		}
		fwd[l], bwd[l] = lt.fwd.total(), lt.bwd.total()
	}
	bw := c.hostLinkBytesPerS()
	var wait float64

	// Forward: layer i's offload is queued when its forward ends.
	done := make([]float64, n) // when each offload ends
	var now, stream float64
	for k := range L {
		// Before the forward of layer k: the offload of layer k−(L−n) (< k,
		// queued already) must be done.
		if i := k - (L - n); i >= 0 && i < n {
			if done[i] > now {
				wait += done[i] - now
				now = done[i]
			}
		}
		now += fwd[k]
		if k < n {
			start := math.Max(stream, now)
			done[k] = start + act[k]/bw
			stream = done[k]
		}
	}

	// Backward, layers L−1 … 0: layer i's reload is queued when the backward
	// of layer L−1−n+i starts, and must be done before layer i's backward.
	ready := make([]float64, n)
	stream = now
	for k := L - 1; k >= 0; k-- {
		if i := k - (L - 1 - n); i >= 0 && i < n {
			start := math.Max(stream, now)
			ready[i] = start + act[i]/bw
			stream = ready[i]
		}
		if k < n && ready[k] > now {
			wait += ready[k] - now
			now = ready[k]
		}
		now += bwd[k]
	}
	return wait
}

// Fine-grained activation offloading (train.fine_grained_activation_offloading,
// --fine-grained-activation-offloading with --offload-modules). Megatron-Core
// at d98e8a64 (pipeline_parallel/fine_grained_activation_offload.py) opens an
// offload group around each listed submodule of each layer and microbatch
// (transformer_layer.py, attention.py, multi_latent_attention.py,
// moe/experts.py): every tensor the submodule saves for the backward that is
// not a parameter and has at least min_offloaded_tensor_size elements is
// copied to pinned host memory on a side stream when the group commits, and
// its GPU copy is freed; the group is reloaded on another stream one group
// ahead of its backward. Which saved tensors each module's group holds, as
// parc's activation model counts them (memory.go):
//
//   - attn_norm: the residual stream the attention's own input norm saves
//     (only MLA layers have one with Transformer Engine's layer spec; the
//     others fuse it into linear_qkv, an IdentityOp, which Megatron skips);
//   - qkv_linear: the QKV GEMM's input, with the fused norm's input for the
//     fused layer norm (TELayerNormColumnParallelLinear); for MLA the down
//     projections' outputs and their norms;
//   - core_attn: query, key and value (unless "mla_up_proj" recomputes MLA's),
//     the fused kernel's softmax statistics or unfused attention's
//     probabilities;
//   - attn_proj: core attention's output, the output projection's input;
//   - mlp_norm: the MoE layer's pre-MLP norm input (a dense layer's norm is
//     fused into linear_fc1: an IdentityOp, skipped);
//   - expert_fc1: the routed tokens, fc1's input; moe_act: the activation's
//     input; fused_group_mlp: the fused grouped MLP's saved inputs.
//
// After the first iteration (post_warmup_callback) the manager keeps one
// group per module name on the GPU (the offload margin, so the first
// reloads do not stall the backward), keeps r·delta_offload_bytes_across_pp_
// ranks bytes of each chunk on pipeline rank r, and offloads only the first
// activation_offload_fraction of each chunk's eligible groups.

// fineTensor is one saved tensor of an offload group: its elements and
// bytes per element.
type fineTensor struct{ elems, bytes float64 }

// fineOffloadLayer is the bytes of one layer's saved activations the offload
// modules move to host memory, and the number of groups that move any.
func (am activationModel) fineOffloadLayer(moe bool) (bytes float64, groups int) {
	if len(am.offload) == 0 {
		return 0, 0
	}
	group := func(name string, ts ...fineTensor) {
		if !am.offload[name] {
			return
		}
		var g float64
		for _, t := range ts {
			if t.elems > 0 && t.elems >= am.offloadMin {
				g += t.elems * t.bytes
			}
		}
		if g > 0 {
			bytes += g
			groups++
		}
	}
	T := am.tokens
	resid := fineTensor{T * am.h / am.rep, am.ab}
	normOut := fineTensor{am.normOutput(1, am.mla), am.gb}
	var attn []fineTensor
	switch {
	case am.fused:
		attn = append(attn, fineTensor{T * am.a / am.t, 4})
	case am.recompute == "none" || !am.modules["core_attn"]:
		per := am.ab
		if am.attnDropout {
			per += 1 + am.ab
		}
		attn = append(attn, fineTensor{am.a / am.t * am.s * am.s * (T / am.s), per})
	}
	if am.mla {
		group("attn_norm", resid)
		group("qkv_linear", normOut,
			fineTensor{T * am.qlora / am.rep, am.ab}, fineTensor{T * am.qlora / am.rep, am.ab},
			fineTensor{T * am.kvlora / am.rep, am.ab}, fineTensor{T * am.kvlora / am.rep, am.ab},
			fineTensor{T * am.pos / am.rep, am.ab})
		if !am.modules["mla_up_proj"] {
			attn = append(attn, fineTensor{T * am.q / am.t, am.ab}, fineTensor{T * am.kv / am.t, am.ab}, fineTensor{T * am.kv / am.t, am.ab})
		}
	} else {
		group("qkv_linear", resid, normOut)
		attn = append(attn, fineTensor{T * am.q / am.t, am.ab}, fineTensor{T * am.kv / am.t, am.ab}, fineTensor{T * am.kv / am.t, am.ab})
	}
	group("core_attn", attn...)
	group("attn_proj", fineTensor{T * am.out / am.t, am.gb})
	if moe {
		group("mlp_norm", resid)
		if !am.modules["moe"] {
			routed := T * am.topk * am.etp / am.t * am.budget
			fc1 := fineTensor{routed * am.h, am.fc1InputBytes()}
			act := fineTensor{routed * am.fe * am.gated / am.etp, am.ab}
			group("expert_fc1", fc1)
			group("moe_act", act)
			fused := []fineTensor{fc1, act}
			if !am.modules["moe_act"] {
				fused = append(fused, fineTensor{routed * am.fe / am.etp, am.gb})
			}
			group("fused_group_mlp", fused...)
		}
	}
	return bytes, groups
}

// chunkFineOffloaded is what fine-grained offloading moves to host memory of
// one microbatch of a chunk, after activation_offload_fraction (the later
// groups of the chunk stay on the GPU), and the largest one layer moves.
func (am *activationModel) chunkFineOffloaded(sh modelShape, chunk spec.LayerRange) (moved, layerMax float64) {
	if len(am.offload) == 0 || am.recompute == "full" {
		return 0, 0
	}
	var groups int
	for l := chunk.First; l < chunk.First+chunk.Count; l++ {
		i := 0
		if sh.isMoE(l) {
			i = 1
		}
		moved += am.offPerLayer[i]
		groups += am.offGroups[i]
		layerMax = math.Max(layerMax, am.offPerLayer[i])
	}
	if groups > 0 && am.offloadFraction < 1 {
		kept := math.Floor(float64(groups) * (1 - am.offloadFraction))
		moved *= 1 - kept/float64(groups)
	}
	return moved, layerMax
}

// fc1InputBytes is the bytes per element the routed experts' fc1 saves of
// its input.
func (am *activationModel) fc1InputBytes() float64 {
	if am.fc1Original {
		return am.ab
	}
	return am.gb
}

// layerResident is a decoder layer's stored activations less what
// fine-grained offloading moves to host memory (an MTP layer is a
// TransformerLayer with the same offload groups; a layer whose forward runs
// ahead under expert-parallel overlap offloads its groups as they commit).
func (am *activationModel) layerResident(moe bool) float64 {
	if am.recompute == "full" {
		return am.layerOf(moe)
	}
	i := 0
	if moe {
		i = 1
	}
	return am.layerOf(moe) - am.offPerLayer[i]
}

// deferredWgradBuffers is what --defer-embedding-wgrad-compute keeps on the
// last stage at its peak: each deferred microbatch's output-layer input
// (embedding_activation_buffer) and 16-bit logits gradient
// (grad_output_buffer) until the pipeline flush computes the weight gradient
// (tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication;
// schedules.py finish_embedding_wgrad_compute). The first
// wgrad_deferral_limit microbatches are deferred (0: all); at the last
// microbatch's loss peak the earlier ones are held.
func (am *activationModel) deferredWgradBuffers() float64 {
	if am.deferred == 0 {
		return 0
	}
	return am.deferred * (am.ab*am.tokens*am.h/am.rep + am.ab*am.tokens*am.v/am.t)
}

// setOffload fills the activation model's fine-grained offloading and
// deferred output-layer wgrad settings.
func (am *activationModel) setOffload(s *spec.Spec, d spec.Derived) {
	tr, p := s.Train, s.Parallel
	if tr.FineGrainedActivationOffloading && len(tr.OffloadModules) > 0 {
		am.offload = map[string]bool{}
		for _, m := range tr.OffloadModules {
			am.offload[m] = true
		}
		am.offloadMin = float64(tr.MinOffloadedTensorSize)
		// experts.py (TEGroupedMLP.__init__ at d98e8a64): offloading
		// expert_fc1 makes linear_fc1 save its original 16-bit input
		// (set_save_original_input) unless the recipe is MXFP8 (or NVFP4).
		am.fc1Original = am.offload["expert_fc1"] && tr.Precision == "fp8" && tr.FP8Recipe != "mxfp8"
		am.offloadFraction = tr.ActivationOffloadFraction
		am.offloadDelta = float64(tr.DeltaOffloadBytesAcrossPPRanks)
		for i, moe := range []bool{false, true} {
			am.offPerLayer[i], am.offGroups[i] = am.fineOffloadLayer(moe)
		}
	}
	if p.DeferEmbeddingWgradCompute && p.PP > 1 {
		m := max(d.Microbatches, 1)
		n := m - 1
		if k := p.WgradDeferralLimit; k > 0 && k < m {
			n = k
		}
		am.deferred = float64(n)
	}
}

// fineOffloadExposed is the time per microbatch stage r's compute waits for
// fine-grained offloading's reloads: a microbatch's offloaded groups come
// back over the host link one group ahead of their backward, so the
// backward waits when the reload of its bytes takes longer than the
// backward itself (the offloads run on their own stream during the forward
// and, the link being full duplex, never slow the reloads).
func (c *costModel) fineOffloadExposed(r int, st stageClock) float64 {
	if len(c.am.offload) == 0 {
		return 0
	}
	var moved float64
	for _, ch := range c.stages[r] {
		b, _ := c.am.chunkFineOffloaded(c.sh, ch)
		moved += b
	}
	return math.Max(0, moved/c.hostLinkBytesPerS()-st.bwd)
}

// deferredWgrad is the output layer's weight-gradient GEMM time per
// microbatch that --defer-embedding-wgrad-compute takes out of the last
// stage's microbatches, and the time the deferred GEMMs add after the last
// stage's final backward beyond what the other stages' cooldown hides
// (pp−1 backward steps, as the last stage finishes its backward first).
func (c *costModel) deferredWgrad(slowBwd float64) (perMB, exposed float64) {
	if c.am.deferred == 0 {
		return 0, 0
	}
	ls := c.ls
	t, _ := c.cm.gemm(1, ls.h, float64(c.sh.vocab)/ls.tp, ls.T, false, false)
	n := float64(c.m) // every microbatch's wgrad runs in the flush, or the first wgrad_deferral_limit
	if lim := c.s.Parallel.WgradDeferralLimit; lim > 0 && lim < c.m {
		n = float64(lim)
	}
	perMB = t * n / float64(c.m)
	cooldown := float64(c.pp-1) / float64(c.vpp) * slowBwd
	return perMB, math.Max(0, n*t-cooldown)
}

// hostAdamS is the host's time per optimizer element of one GPU's shard
// with optimizer_cpu_offload: PyTorch's fused CPU AdamW on the fp32 copy,
// with the eight ranks of a node sharing its CPUs. Fitted on the one
// measurement it has: Megatron-Bridge's Qwen3-30B-A3B runs on two DGX H100
// (TP2 PP2 EP4, 1.909 B elements per rank's shard as parc counts them),
// 100% offloaded without overlap, 996 → 4,189 ms per step
// (skills/nemo-mbridge-perf-cpu-offloading/card.yaml at Megatron-Bridge
// 067f987d, measured_results), less the copies at the default host link;
// the 25/50/75% and the overlapped run are held out
// (TestOptimizerOffloadMeasured). Another host (Grace, fewer cores per GPU)
// runs Adam at another speed that no published run gives.
const hostAdamS = 1.55e-9

// hostOptimizerStep is the optimizer step's host part for a shard of n
// elements: Adam on the offloaded fraction, after its gradients are copied
// to the host and before the weights are copied back (4 bytes each way per
// element: the fp32 main gradients and the fp32 copy). With
// overlap_cpu_optimizer_d2h_h2d each parameter has its own host optimizer
// and its copies run on their own streams beside the other parameters'
// steps, so only Adam is timed; without it the copies and Adam run one
// after another (HybridDeviceOptimizer.step).
func (c *costModel) hostOptimizerStep(n float64) float64 {
	f := c.set.optOffload
	if f <= 0 {
		return 0
	}
	t := f * n * hostAdamS
	if !c.set.optOffloadOverlap {
		t += f * n * 8 / c.hostLinkBytesPerS()
	}
	return t
}
