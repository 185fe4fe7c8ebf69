package estimate

import "math"

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
