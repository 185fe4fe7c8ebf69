package estimate

import "math"

// Communication buffers of the flex token dispatcher's backends. Megatron-LM
// at d98e8a64 (megatron/core/transformer/moe/fused_a2a.py) keeps one buffer
// per process, created on the first dispatch and reused by every MoE layer:
// DeepEP's Buffer (get_buffer) or HybridEP's HybridEPBuffer
// (init_hybrid_ep_buffer). Both allocate with cudaMalloc/cuMem or NVSHMEM,
// outside PyTorch's caching allocator, so torch.cuda.memory_stats() (the
// measured peaks of testdata/memory) never sees them, but the GPU holds
// them for the whole run.

// deepEPConfig is one row of DeepEP's recommended configs: the NVLink and
// RDMA receive queues per channel, in tokens (Config's
// num_max_nvl_chunked_recv_tokens, num_max_rdma_chunked_send/recv_tokens).
type deepEPConfig struct {
	ranks                   int
	nvlRecv, rdmaSend, rdma int
}

// deepEPDispatch and deepEPCombine are Buffer.get_dispatch_config and
// get_combine_config (deep_ep/buffer.py of DeepEP's hybrid-ep branch,
// 94a9f8f, the branch Megatron-LM's docker/Dockerfile.ci.lts installs); the
// sizes read only the receive queues and the RDMA send chunk.
var (
	deepEPDispatch = []deepEPConfig{
		{2, 256, 6, 128}, {4, 256, 6, 128}, {8, 256, 6, 128}, {16, 288, 20, 128},
		{24, 288, 32, 128}, {32, 288, 32, 128}, {64, 288, 28, 128}, {128, 560, 32, 128},
		{144, 720, 12, 128}, {160, 720, 12, 128},
	}
	deepEPCombine = []deepEPConfig{
		{2, 256, 6, 128}, {4, 256, 6, 128}, {8, 256, 6, 128}, {16, 288, 12, 128},
		{24, 288, 8, 128}, {32, 288, 8, 128}, {64, 288, 20, 128}, {128, 560, 12, 128},
		{144, 720, 8, 128}, {160, 720, 8, 128},
	}
)

// deepEPRow is the config for a group of n ranks: DeepEP asserts n is in its
// table; a size it lacks takes the next larger row (the largest past 160).
func deepEPRow(table []deepEPConfig, n int) deepEPConfig {
	for _, c := range table {
		if c.ranks >= n {
			return c
		}
	}
	return table[len(table)-1]
}

// DeepEPBufferBytes is what DeepEP's Buffer allocates on each GPU of an
// expert-parallel group of n ranks for tokens of hiddenBytes bytes
// (fused_a2a.py get_hidden_bytes: hidden × max(element size, 2), so 2 bytes
// per element even with fp8 dispatch), with sms streaming multiprocessors
// (Buffer.num_sms; Megatron sets 20 unless moe_flex_dispatcher_num_sms).
// get_buffer takes the larger of the dispatch and combine configs' size
// hints (csrc/config.hpp Config::get_nvl_buffer_size_hint and
// get_rdma_buffer_size_hint): per channel (sms/2) and NVLink peer
// (min(n, 8)) a receive queue of nvlRecv tokens of hidden bytes, an 8-byte
// SourceMeta, 128 top-k indices (int64) and weights (fp32) and 128 fp32
// scales; past 8 ranks (DeepEP counts a node as 8 GPUs, NUM_MAX_NVL_PEERS,
// whatever the NVLink domain) the same per RDMA peer (n/8), twice (send and
// receive), with the RDMA queue rounded up to the send chunk and a 16-byte
// int4 more per token. The NVLink part is cudaMalloc'd with a few pointers
// and flags (csrc/deep_ep.cpp Buffer::Buffer), plus a 32 MiB workspace
// (NUM_WORKSPACE_BYTES, kernels/configs.cuh); the RDMA part lives in the
// NVSHMEM symmetric heap, which DeepEP maps in 512 MiB granules
// (NVSHMEM_CUMEM_GRANULARITY = 2^29 in deep_ep/buffer.py), so it is counted
// rounded up to them.
func DeepEPBufferBytes(hiddenBytes float64, n, sms int) (nvl, rdma float64) {
	if n < 2 {
		return 0, 0
	}
	if sms <= 0 {
		sms = 20
	}
	const peers, topk, scales, meta = 8, 128, 128, 8
	channels := float64(sms / 2)
	nvlRanks := float64(min(n, peers))
	rdmaRanks := float64(max(n/peers, 1))
	perToken := hiddenBytes + meta + topk*8 + topk*4 + scales*4
	align := func(b float64) float64 { return math.Ceil(b/128) * 128 }
	for _, c := range []deepEPConfig{deepEPRow(deepEPDispatch, n), deepEPRow(deepEPCombine, n)} {
		b := channels*nvlRanks*(2*rdmaRanks+3)*4 + channels*nvlRanks*float64(c.nvlRecv)*perToken
		nvl = max(nvl, align(b))
		if n > peers {
			recv := math.Ceil(float64(c.rdma)/float64(c.rdmaSend)) * float64(c.rdmaSend)
			r := channels*rdmaRanks*(peers*2+2)*2*4 + channels*rdmaRanks*recv*(perToken+16)*2
			rdma = max(rdma, align(r))
		}
	}
	nvl += 3*peers*8 + 32<<20 // barrier signals and pointers, the workspace
	if rdma > 0 {
		const granule = 1 << 29
		rdma = math.Ceil(rdma/granule) * granule
	}
	return nvl, rdma
}

// HybridEPBufferBytes is what HybridEP's buffer allocates on each GPU
// (DeepEP's hybrid-ep branch, 94a9f8f: csrc/hybrid_ep/buffer/intranode.cu
// NVLCoordinator, internode_doca.cu RDMACoordinator, extension/allgather.cu),
// built by Megatron's init_hybrid_ep_buffer with bf16 tokens (fp8 dispatch
// is refused), the default shared dispatch/combine buffer, tokens the
// tokens one rank feeds the dispatcher (max_num_of_tokens_per_rank, rounded
// up to 16), h the hidden size, local experts per rank, perDomain ranks of
// the group on one NVLink domain (detect_accessible_ranks) and nodes such
// domains. The NVLink buffer is sized for the worst case of every token of
// the group routed to this rank (max_num_of_tokens = tokens · perDomain ·
// nodes): bf16 tokens, fp32 probabilities over the domain's experts and
// fp32 scaling factors per 128 elements. Across domains, the RDMA buffers
// hold this rank's tokens and probabilities over all experts, and per other
// domain two token and probability buffers each way. The routing-map
// all-gather keeps one byte per (token of the group, expert).
func HybridEPBufferBytes(tokens, h float64, local, perDomain, nodes int) float64 {
	if perDomain*nodes < 2 || local < 1 {
		return 0
	}
	T := math.Ceil(tokens/16) * 16
	r, N, L := float64(perDomain), float64(max(nodes, 1)), float64(local)
	E := L * r * N
	M := T * r * N
	scale := math.Floor(h / 128)
	b := M*h*2 + M*L*r*4 + M*scale*4 // combine token and prob (shared with dispatch), dispatch scales
	if nodes > 1 {
		o := T * (N - 1)
		b += T*h*2 + T*E*4 + T*scale*4 + o*h*2 + o*L*r*4 + o*scale*4 // dispatch
		b += 2 * (o*h*2 + o*L*r*4)                                   // combine
	}
	b += E * M // routing-map all-gather
	return b
}

// commBufferBytes is the flex dispatcher's buffer on a GPU of pipeline rank
// r: none when the stage has no MoE layer (the buffer is created by the
// first dispatch) or the dispatcher is not flex.
func (c *costModel) commBufferBytes(r int) float64 {
	if !c.flexDispatcher() {
		return 0
	}
	if _, expert := c.stageParams[r].denseExpertPerGPU(int64(c.tp), int64(c.etp), int64(c.ep)); expert == 0 {
		return 0
	}
	// The flex dispatcher's group is tp_ep: expert-tensor × expert ranks
	// (token_dispatcher.py MoEFlexTokenDispatcher).
	n := max(c.etp, 1) * c.ep
	switch c.s.Model.MoE.FlexDispatcherBackend {
	case "", "deepep":
		nvl, rdma := DeepEPBufferBytes(float64(c.sh.h)*2, n, 20)
		return nvl + rdma
	case "hybridep":
		// The group's ranks on one NVLink domain: its expert-parallel
		// ranks there, each with its etp ranks (HybridEP needs whole
		// domains, check moe-flex-backend).
		epPerDomain, domains := c.epDomains()
		return HybridEPBufferBytes(c.dispatchTokens(), float64(c.sh.h), int(c.sh.experts)/max(c.ep, 1), max(c.etp, 1)*epPerDomain, domains)
	}
	return 0
}
