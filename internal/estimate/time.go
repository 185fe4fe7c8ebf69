package estimate

import (
	"math"
	"slices"
	"sort"

	"parc.dev/parc/internal/spec"
)

// AllReduceBytes is what one GPU sends in a ring all-reduce of size bytes over
// n GPUs: a reduce-scatter and an all-gather, 2(n−1)/n of the tensor.
func AllReduceBytes(size float64, n int) float64 {
	if n <= 1 {
		return 0
	}
	return 2 * float64(n-1) / float64(n) * size
}

// GatherBytes is what one GPU sends in a ring all-gather or reduce-scatter
// of a tensor of size bytes (the full tensor) over n GPUs: (n−1)/n of it.
func GatherBytes(size float64, n int) float64 {
	if n <= 1 {
		return 0
	}
	return float64(n-1) / float64(n) * size
}

// TPBytesPerLayer is what one GPU of a tensor-parallel group of t moves per
// transformer layer and microbatch: two all-reduces forward and two backward
// of the s·b·h activation (Shoeybi et al. 2019; with sequence parallelism the
// same bytes as all-gathers and reduce-scatters, Korthikanti et al. 2022).
func TPBytesPerLayer(s, b, h, t int, elemBytes float64) float64 {
	return 4 * AllReduceBytes(float64(s)*float64(b)*float64(h)*elemBytes, t)
}

// stageWork is one pipeline rank's work for one microbatch: Megatron's FLOPs
// of its layers and what one GPU of it moves on each axis.
type stageWork struct {
	flops, recompute, core float64  // FLOPs of the tp·cp group: model, recompute extra, core attention
	bytes                  axisVals // per microbatch, by axis
	perLayer               axisVals
	// tpUnits counts the tensor-parallel collectives in all-reduce
	// equivalents (an all-gather and a reduce-scatter with sp) of the
	// s·b·h activation; tpAsync is the part of them Megatron issues
	// asynchronously beside a GEMM of the backward (see stageBytes).
	tpUnits, tpAsync float64
	// ppSends is the point-to-point transfers (activations forward,
	// gradients backward) of one microbatch over all virtual stages.
	ppSends float64
	// cpColls, epColls, etpColls count the collectives per microbatch.
	cpColls, epColls, etpColls float64
}

func (c *costModel) elemBytes() float64 {
	if c.s.Train.Precision == "fp32" {
		return 4
	}
	return 2
}

// stageCost is rank r's work per microbatch: FLOPs, then bytes.
func (c *costModel) stageCost(r int) stageWork {
	var w stageWork
	c.stageFLOPs(r, &w)
	c.stageBytes(r, &w)
	return w
}

// stageFLOPs adds Megatron's FLOPs of rank r's layers (num_floating_point_
// operations' terms), the output layer and MTP on the last stage, and what
// recompute repeats.
func (c *costModel) stageFLOPs(r int, w *stageWork) {
	a := newMegatronArgs(c.s, c.d)
	f := a.flopTerms()
	tr := c.s.Train
	tokens := float64(tr.MicroBatch) * float64(tr.SeqLength)
	s2 := tokens * float64(tr.SeqLength)
	const six = 6
	denseLinear := six*f.hidden*f.ffn*f.ffnFactor + f.selfAttn
	moeLinear := six*f.hidden*(f.moeFFN*a.topk*f.ffnFactor+f.sharedFFN*f.ffnFactor) + f.selfAttn
	for _, ch := range c.stages[r] {
		rerun := recomputedLayers(&tr, ch.Count) // full: the chunk's first rerun layers
		for l := ch.First; l < ch.First+ch.Count; l++ {
			lin := denseLinear
			if c.sh.isMoE(l) {
				lin = moeLinear
			}
			w.flops += tokens*lin + s2*f.selfAttnCore
			w.core += s2 * f.selfAttnCore
			switch tr.Recompute {
			case "full":
				if l-ch.First >= rerun {
					continue
				}
				w.recompute += (tokens*lin + s2*f.selfAttnCore) / 3
			case "selective":
				w.recompute += s2 * f.selfAttnCore / 3
			}
		}
	}
	if r == c.pp-1 {
		mtp := f.mtpLayers
		lastLinear := denseLinear
		if a.lastLayerIsMoE() == 1 {
			lastLinear = moeLinear
		}
		w.flops += tokens*six*f.hidden*f.paddedVocab*(mtp+1) +
			tokens*six*mtp*(3*f.hidden+2*f.hidden*f.hidden) +
			mtp*(tokens*lastLinear+s2*f.selfAttnCore)
		w.core += mtp * s2 * f.selfAttnCore
	}
}

// stageBytes adds what one GPU of rank r moves per microbatch on the tp, cp,
// ep, etp and pp axes.
func (c *costModel) stageBytes(r int, w *stageWork) {
	elem := c.elemBytes()
	T := c.am.tokens // tokens on this GPU's sequence shard
	h := c.am.h
	ar := AllReduceBytes(elem*T*h, c.tp)
	// Full recomputation repeats a rerun layer's forward collectives: the
	// share of this rank's layers it reruns (all with the uniform method,
	// the first of each chunk with the block method; recomputedLayers).
	fwdExtra := c.rerunShare(r)
	// TP, per block (attention, MLP or shared expert), in all-reduce units:
	// one forward (the row-parallel output's all-reduce, or with sp the
	// column-parallel input's all-gather and the row-parallel output's
	// reduce-scatter), repeated by full recompute, and one backward (the
	// column-parallel input gradient's all-reduce; with sp the
	// row-parallel output gradient's all-gather and the column-parallel
	// input gradient's reduce-scatter). With sp the column-parallel layer
	// also gathers its input again for the weight gradient (half a unit:
	// only the local shard is kept for the backward). The column-parallel
	// layer's input-gradient all-reduce / reduce-scatter runs
	// asynchronously beside its weight-gradient GEMM, and the re-gather
	// beside its input-gradient GEMM (Megatron-LM d98e8a64
	// megatron/core/tensor_parallel/layers.py,
	// LinearWithGradAccumulationAndAsyncCommunication.backward, async_op=True
	// "rely on CUDA_DEVICE_MAX_CONNECTIONS=1"; Transformer Engine's
	// _Linear.backward the same: column_parallel_comm_input overlapped
	// with the dgrad GEMM, column_parallel_comm_dgrad with the wgrad GEMM):
	// one unit per block (tpAsync).
	block := 2 + fwdExtra
	if c.d.SP {
		block += 0.5
	}
	blocks := 2.0 // dense layer: attention and MLP
	moeBlocks := 1.0
	if c.sh.fs > 0 {
		moeBlocks++
	}
	// Selective recomputation reruns in the backward the forward
	// collectives inside what it checkpoints, as full recomputation does a
	// rerun layer's (Megatron-LM at d98e8a64): core attention's
	// context-parallel exchange ("core_attn": Attention's
	// _checkpointed_attention_forward wraps the core attention, in which
	// Transformer Engine runs the ring or the all-to-all), a dense layer's
	// MLP with its input gather and output reduction ("mlp":
	// TransformerLayer checkpoints self.mlp), the shared experts'
	// ("shared_experts": MoELayer.shared_experts_compute), and the whole MoE
	// block's, dispatch and combine included ("moe": MoELayer.forward runs
	// route, dispatch, the experts and combine under
	// tensor_parallel.checkpoint, or te_checkpoint in fp8/fp4).
	attnExtra, mlpExtra, sharedExtra, moeExtra := fwdExtra, fwdExtra, fwdExtra, fwdExtra
	if rm := c.set.recomputeModules; c.s.Train.Recompute == "selective" {
		moeExtra = boolF(c.recomputesMoE())
		attnExtra, mlpExtra, sharedExtra = boolF(rm["core_attn"]), boolF(rm["mlp"]), max(boolF(rm["shared_experts"]), moeExtra)
	}
	// Each block's forward unit is 1 of block's 2 + fwdExtra (+ 0.5 with sp).
	base := block - fwdExtra
	// A dense layer's attention (core attention has no tensor-parallel
	// collective) and MLP; an MoE layer's attention and shared experts (the
	// routed experts' collectives are the ep and etp axes').
	tpDense, tpMoE := 2*base+fwdExtra+mlpExtra, base+fwdExtra
	if c.sh.fs > 0 {
		tpMoE += base + sharedExtra
	}
	w.perLayer[axTP] = blocks * base * ar

	// CP: K and V of the local shard, heads split over tp.
	kv := 2 * elem * T * c.am.kv / float64(c.tp)
	var cpLayer, cpColls float64
	if c.cp > 1 {
		n := float64(c.cp - 1)
		switch c.s.Parallel.CPCommType {
		case "a2a":
			// Ulysses: all-to-all of Q, K, V before and O after, forward and backward.
			x := elem * T * (2*c.am.q + 2*c.am.kv) / float64(c.tp)
			cpLayer = (2 + attnExtra) * n / float64(c.cp) * x
			cpColls = 4 + 2*attnExtra
		default:
			// Ring (p2p, a2a+p2p) or all-gather: K/V go around forward; K/V and
			// their gradients backward (all_gather: K/V gathered forward, gathered
			// again backward, dK/dV reduce-scattered).
			cpLayer = (3 + attnExtra) * n * kv
			cpColls = (2 + attnExtra) * n
		}
	}
	w.perLayer[axCP] = cpLayer

	// EP: dispatch and combine forward and backward of the routed tokens.
	routed := T * c.am.topk / float64(c.tp)
	var epLayer, etpLayer float64
	if c.sh.experts > 0 {
		if c.ep > 1 {
			if c.s.Model.MoE != nil && c.s.Model.MoE.Dispatcher == "allgather" {
				epLayer = (4 + 2*moeExtra) * float64(c.ep-1) * elem * c.dispatchTokens() * h
			} else {
				nv, net := c.epCopies()
				epLayer = (4 + 2*moeExtra) * elem * c.dispatchTokens() * h * (nv + net)
			}
		}
		if c.etp > 1 {
			etpLayer = (4 + 2*moeExtra) * float64(c.etp-1) * elem * routed * h
		}
	}
	w.perLayer[axEP], w.perLayer[axETP] = epLayer, etpLayer

	for _, ch := range c.stages[r] {
		for l := ch.First; l < ch.First+ch.Count; l++ {
			if c.sh.isMoE(l) {
				w.tpUnits += tpMoE
				w.tpAsync += moeBlocks
				w.bytes[axEP] += epLayer
				w.bytes[axETP] += etpLayer
				w.epColls += boolF(epLayer > 0) * (4 + 2*moeExtra)
				w.etpColls += boolF(etpLayer > 0) * (4 + 2*moeExtra)
			} else {
				w.tpUnits += tpDense
				w.tpAsync += blocks
			}
			w.bytes[axCP] += cpLayer
			w.cpColls += cpColls
		}
	}
	if r == 0 {
		w.tpUnits += 0.5 // embedding output: one reduction forward
	}
	if r == c.pp-1 {
		w.tpUnits += 0.5 // output layer input: gathered forward, reduced backward
	}
	w.bytes[axTP] = w.tpUnits * ar
	// PP: the boundary activation (sequence-parallel shard) once per chunk
	// boundary, forward and backward.
	if c.pp > 1 {
		act := elem * T * h / c.am.rep
		for v := range c.vpp {
			if r != c.pp-1 || v != c.vpp-1 {
				w.ppSends++ // forward activation to the next stage
			}
			if r != 0 || v != 0 {
				w.ppSends++ // backward gradient to the previous stage
			}
		}
		w.bytes[axPP] = w.ppSends * act
	}
}

// remoteCopies is how many copies of one token the expert-parallel dispatch
// sends to other ranks, routing uniform over the experts (the recipes force
// balanced routing). Megatron's alltoall and allgather-free dispatchers
// permute tokens by expert, so a token goes once per routed expert on
// another rank: topk·(ep−1)/ep. The flex dispatcher (DeepEP, HybridEP) sends
// a token once per destination rank, however many of its experts that rank
// holds (DeepEP's dispatch by is_token_in_rank): (ep−1)·h, h the chance
// that one of the token's topk distinct experts is among a rank's E/ep
// (hitProb).
func (c *costModel) remoteCopies() float64 {
	if !c.flexDispatch() {
		return c.am.topk * float64(c.ep-1) / float64(c.ep)
	}
	return float64(c.ep-1) * c.hitProb(float64(c.sh.experts)/float64(c.ep))
}

// flexDispatcher: the MoE layers dispatch through the flex dispatcher
// (DeepEP, HybridEP), whatever the routing.
func (c *costModel) flexDispatcher() bool {
	mo := c.s.Model.MoE
	return mo != nil && mo.Dispatcher == "flex" && c.sh.experts > 0
}

// flexDispatch: the flex dispatcher with a routing the counting below
// applies to.
func (c *costModel) flexDispatch() bool {
	return c.flexDispatcher() && c.am.topk < float64(c.sh.experts)
}

// dispatchTokens is what one rank feeds the expert-parallel dispatcher per
// microbatch: the sequence-parallel shard of the microbatch's tokens its
// router saw (an MoE model with tp > 1 runs sequence parallelism, check
// Q4 moe-sp-required, so this is the tokens over tp).
func (c *costModel) dispatchTokens() float64 {
	return c.am.tokens / c.am.rep
}

// epDomains is how the expert-parallel group lies over NVLink domains:
// perDomain of its expert-parallel ranks share one (epDomainRanks), in
// domains domains.
func (c *costModel) epDomains() (perDomain, domains int) {
	k := c.epDomainRanks()
	return k, (c.ep + k - 1) / k
}

// missIn is the chance that none of k distinct experts drawn uniformly from
// E is among L given ones.
func missIn(E, L, k float64) float64 {
	q := 1.0
	for i := 0.0; i < k; i++ {
		q *= math.Max(E-L-i, 0) / (E - i)
	}
	return q
}

// hitProb is the chance that at least one of a token's topk experts is
// among the L consecutive experts one rank or NVLink domain holds (expert
// parallelism gives each rank E/ep consecutive experts): routeHit with the
// model's routing.
func (c *costModel) hitProb(L float64) float64 {
	G, g := 0.0, 0.0
	if mo := c.s.Model.MoE; mo != nil && mo.RouterNumGroups != nil && mo.RouterGroupTopK != nil {
		G, g = float64(*mo.RouterNumGroups), float64(*mo.RouterGroupTopK)
	}
	return routeHit(float64(c.sh.experts), c.am.topk, G, g, L)
}

// routeHit is the chance that a token routed to k of E experts reaches a
// place holding L consecutive experts. Without group-limited routing (G or
// g 0) the k experts are distinct and uniform: 1 − missIn(E, L, k). With
// it (model.moe.router_num_groups G, router_group_topk g: Megatron's
// group_limited_topk in moe_utils.py at d98e8a64) the experts form G equal
// groups of consecutive experts; a token selects the g groups whose top
// k/g scores sum highest and then its k experts among the selected groups'
// experts, so its experts fall k/g in each selected group, and a place
// whose groups are not selected receives nothing: DeepSeek-V3's
// node-limited routing, G the nodes of the expert-parallel group
// (arXiv:2412.19437 §2.1.2, §3.2.2: "each token will be sent to at most 4
// nodes"). With uniform scores (the recipes force balanced routing) the
// groups are selected uniformly: a place holding c whole groups is reached
// unless none of them is selected, 1 − C(G−c, g)/C(G, g); a place within
// one group when that group is selected and one of its k/g experts falls
// in the place, g/G·(1 − missIn(E/G, L, k/g)). A place that does not align
// with the groups is counted as without groups.
func routeHit(E, k, G, g, L float64) float64 {
	if G < 1 || g < 1 || g > G || E/G != math.Trunc(E/G) {
		return 1 - missIn(E, L, k)
	}
	Eg := E / G
	switch c := L / Eg; {
	case c >= 1 && c == math.Trunc(c) && c <= G:
		return 1 - choose(G-c, g)/choose(G, g)
	case c < 1 && Eg/L == math.Trunc(Eg/L):
		return g / G * (1 - missIn(Eg, L, k/g))
	}
	return 1 - missIn(E, L, k)
}

// choose is the binomial coefficient C(n, r) of small whole numbers (0 when
// r is out of range).
func choose(n, r float64) float64 {
	if r < 0 || r > n {
		return 0
	}
	v := 1.0
	for i := 0.0; i < r; i++ {
		v *= (n - i) / (i + 1)
	}
	return v
}

// epDomainRanks is how many ranks of this plan's expert-parallel group
// share an NVLink domain: the domain's share (spec.ExpertRanksPerNVLinkDomain),
// at most the whole group.
func (c *costModel) epDomainRanks() int {
	return max(1, min(c.ep, spec.ExpertRanksPerNVLinkDomain(c.s.Cluster.NVLinkDomain, c.etp)))
}

// epCopies is what the dispatch of one token sends, in copies of the token,
// over NVLink (nv) and over the network (net), when the group leaves its
// NVLink domain. Megatron's alltoall dispatcher sends its remoteCopies to
// each peer directly, so they split as the peers do. The flex dispatcher's
// DeepEP and HybridEP backends remove the redundant copies across domains
// (Megatron-LM megatron/core/transformer/moe/README.md at d98e8a64: DeepEP
// "removes redundant tokens during cross-node communication, fuses
// intra/inter-node communication into single kernel"): a token crosses the
// network once per destination domain, to the GPU of the same local index,
// which forwards it over NVLink to the ranks there that hold its experts
// (DeepSeek-V3 technical report, arXiv:2412.19437, §3.2.2). Over N domains
// of k ranks each that is (N−1)·h_N network copies, h_N the chance one of
// the token's experts is in a domain's E/N (hitProb; with node-limited
// routing at most router_group_topk domains), and N·(k−1)·h NVLink copies
// (to the own domain's peers, and forwarded in each other).
func (c *costModel) epCopies() (nv, net float64) {
	r := c.remoteCopies()
	k, domains := c.epDomains()
	if k >= c.ep {
		return r, 0
	}
	if !c.flexDispatch() {
		on := float64(k-1) / float64(c.ep-1)
		return r * on, r * (1 - on)
	}
	N := float64(domains)
	E := float64(c.sh.experts)
	net = (N - 1) * c.hitProb(E/N)
	nv = N * float64(k-1) * c.hitProb(E/float64(c.ep))
	return nv, net
}

// stageClock is one pipeline rank's time for one microbatch.
type stageClock struct {
	compute op // forward, backward and recompute of every layer, embedding, output layer
	fwd     float64
	bwd     float64 // backward with recompute
	comm    axisVals
	exposed axisVals
	// commBound is a lower bound of the exposed communication proportional
	// to the microbatch's tokens (bandwidth terms only, no latency).
	commBound float64
	// host is the host's issue time of the microbatch: its eager
	// operations forward and backward and the host synchronisations.
	host float64
}

func (c *costModel) total(st stageClock) float64 {
	t := st.compute.total()
	for _, x := range st.exposed {
		t += x
	}
	return t
}

// The per-microbatch axes, in the fixed order their times add in.
const (
	axTP = iota
	axCP
	axEP
	axETP
	axPP
	numAxes
)

// axisVals holds one number per per-microbatch axis.
type axisVals [numAxes]float64

// axisNames are the axes' names in the comms map.
var axisNames = [numAxes]string{"tp", "cp", "ep", "etp", "pp"}

// layerTimes times the dense and the MoE decoder layer once per plan.
func (c *costModel) layerTimes() (dense, moe layerTime) {
	if c.timed {
		return c.dense, c.moe
	}
	c.dense, c.moe = c.timeLayers(c.cm)
	c.mtpDense, c.mtpMoE = c.dense, c.moe
	if c.cm.fp4 && c.sh.mtp > 0 {
		// Megatron leaves FP4 out of the MTP layers ("currently ignoring
		// FP4 in MTP layers", multi_token_prediction.py at d98e8a64): they
		// run in bf16.
		bf := c.cm
		bf.fp8, bf.fp4 = false, false
		c.mtpDense, c.mtpMoE = c.timeLayers(bf)
	}
	c.timed = true
	return c.dense, c.moe
}

// timeLayers is the dense and the MoE decoder layer timed with cm, with
// the host operations of the combined 1F1B schedule's nodes.
func (c *costModel) timeLayers(cm computeModel) (dense, moe layerTime) {
	dense = cm.layer(c.ls, false)
	if c.sh.experts > 0 {
		moe = cm.layer(c.ls, true)
	}
	if c.combined1F1B() {
		f, b := c.scheduleNodeOps(false)
		dense.fwd.host += f * c.cal.HostOpS
		dense.bwd.host += b * c.cal.HostOpS
		if c.sh.experts > 0 {
			f, b = c.scheduleNodeOps(true)
			moe.fwd.host += f * c.cal.HostOpS
			moe.bwd.host += b * c.cal.HostOpS
		}
	}
	return dense, moe
}

// combined1F1B: parallel.overlap_moe_expert_parallel_comm runs the model
// through Megatron's combined 1F1B schedule (expert parallelism and MoE
// layers are what it needs; Megatron's TransformerConfig asserts both).
func (c *costModel) combined1F1B() bool {
	return c.set.epOverlap && c.ep > 1 && c.sh.experts > 0
}

// scheduleNodeOps is the host operations the combined 1F1B schedule adds to
// one decoder layer's forward and backward of one microbatch, beside the
// layer's own kernels. Megatron-LM at d98e8a64 runs every layer as separate
// schedule nodes (models/common/model_chunk_schedule_plan.py,
// TransformerLayerSchedulePlan: pre_dispatch_computation, moe_dispatch, mlp
// and moe_combine; a dense layer's moe_dispatch and moe_combine are no-ops),
// each called on its own for the forward and again for the backward, paired
// with another microbatch's node or not (TransformerLayerSchedulePlan.run),
// and with delay_wgrad_compute (which the recipes set with the overlap) a
// third time for the weight gradients of pre_dispatch_computation and mlp
// (TransformerLayerNode.backward_dw). Each call is counted from that source
// (pipeline_parallel/utils.py, ScheduleNode.stream_acquire_context and
// _backward), every one an operation the host issues like a kernel (HostOpS
// each; no source times them apart):
//
//   - a stream switch into the node's stream (torch.cuda.stream: the
//     compute stream, or the communication stream of dispatch and combine),
//     every call, the weight-gradient ones included;
//   - the wait on the model chunk's CUDA event and the event's record after
//     the node's work, forward and backward calls;
//   - one autograd engine call per backward call
//     (Variable._execution_engine.run_backward on the node's outputs: the
//     layer's backward is as many graph tasks as nodes instead of one).
//
// The nodes' tensor bookkeeping (viewless copies and detaches of inputs and
// outputs, record_stream, freed storage) and the model chunk's pre- and
// post-process nodes are not counted.
func (c *costModel) scheduleNodeOps(moe bool) (fwd, bwd float64) {
	nodes := 2.0 // pre_dispatch_computation, mlp
	if moe {
		nodes = 4 // and moe_dispatch, moe_combine
	}
	const switchAndEvents = 1 + 2
	fwd = nodes * switchAndEvents
	bwd = nodes * (switchAndEvents + 1)
	if c.s.Parallel.DelayWgradCompute {
		bwd += 2 // backward_dw of pre_dispatch_computation and mlp: a stream switch each
	}
	return fwd, bwd
}

// stageClock times rank r's microbatch: compute by operation, then each
// axis's transfers and the part of them compute does not hide.
func (c *costModel) stageClock(r int, w stageWork, link func(string) string) stageClock {
	dense, moe := c.layerTimes()
	var st stageClock
	var gemm, attn, colBwd, shared float64
	// GPU time and host issue time of the forward and the backward; a
	// synchronised MoE layer's forward is timed on its own (syncF).
	var gpuF, gpuB, hostF, hostB, syncF, syncS float64
	synced := c.moeHostSync()
	add := func(lt layerTime, n float64, moe bool) {
		if n == 0 {
			return
		}
		rc := lt.recompute
		st.compute = st.compute.plus(lt.fwd.plus(lt.bwd).plus(rc).times(n))
		gemm += (lt.gemmFwd + lt.gemmBwd) * n
		colBwd += lt.colBwd * n
		attn += (lt.attnFwd + lt.attnBwd + rc.attn) * n
		gpuB += (lt.bwd.total() + rc.total()) * n
		hostB += (lt.bwd.host + rc.host) * n
		if moe {
			shared += lt.shared * n
		}
		if moe && synced {
			// The host cannot run ahead past the token-count copy: the
			// layer's forward takes the longer of its GPU and host time,
			// then the GPU idles for the synchronisation. Recomputing the
			// MoE block repeats it.
			syncF += (math.Max(lt.fwd.total(), lt.fwd.host) + c.cal.HostSyncS) * n
			syncS += c.cal.HostSyncS * n
			st.host += lt.fwd.host * n
			if c.recomputesMoE() && rc.total() > 0 {
				gpuB += c.cal.HostSyncS * n
				syncS += c.cal.HostSyncS * n
			}
			return
		}
		gpuF += lt.fwd.total() * n
		hostF += lt.fwd.host * n
	}
	// Full recomputation with the block method reruns only the first
	// layers of each chunk (recomputedLayers): the others keep their
	// activations and are not run again.
	denseKept, moeKept := dense, moe
	denseKept.recompute, moeKept.recompute = op{}, op{}
	for _, ch := range c.stages[r] {
		var nMoE, rerunMoE float64
		n := recomputedLayers(&c.s.Train, ch.Count)
		if c.s.Train.Recompute != "full" {
			n = ch.Count // selective and none: the layer times say it
		}
		for l := ch.First; l < ch.First+ch.Count; l++ {
			nMoE += boolF(c.sh.isMoE(l))
			rerunMoE += boolF(c.sh.isMoE(l) && l-ch.First < n)
		}
		rerunDense := float64(n) - rerunMoE
		add(dense, rerunDense, false)
		add(denseKept, float64(ch.Count)-nMoE-rerunDense, false)
		add(moe, rerunMoE, true)
		add(moeKept, nMoE-rerunMoE, true)
	}
	ls := c.ls
	if r == 0 {
		e := c.cm.elementwise(ls.Tsp*ls.h*c.cm.ab*2, 1) // embedding lookup and its gradient
		st.compute = st.compute.plus(e.times(2))
		gpuF += e.total()
		gpuB += e.total()
		hostF += e.host
		hostB += e.host
	}
	if r == c.pp-1 {
		f, b := c.cm.outputLayer(ls.T, ls.Tsp, ls.h, float64(c.sh.vocab), ls.tp)
		n := 1 + float64(c.sh.mtp)
		if c.cm.graphs.full {
			f, b = c.cm.captured(f), c.cm.captured(b)
		}
		st.compute = st.compute.plus(f.plus(b).times(n))
		gpuF += f.total() * n
		gpuB += b.total() * n
		hostF += f.host * n
		hostB += b.host * n
		if c.sh.mtp > 0 {
			// MTP layers: a decoder layer each (no recompute).
			lt := c.mtpDense
			isMoE := c.sh.isMoE(int(c.sh.layers) - 1)
			if isMoE {
				lt = c.mtpMoE
			}
			lt.recompute = op{}
			add(lt, float64(c.sh.mtp), isMoE)
		}
	}
	// Eager execution is asynchronous: between synchronisations the host
	// issues kernels ahead of the GPU, so a stretch of work takes the
	// longer of its GPU time and its host issue time. The difference is
	// GPU's wait for the host (idle). The synchronisations are a fixed
	// cost of every microbatch, whatever its size (fixed).
	st.fwd = math.Max(gpuF, hostF) + syncF
	st.bwd = math.Max(gpuB, hostB)
	// The schedule's own synchronisations every microbatch (the loss
	// check, batched point-to-point transfers): the GPU drains, then
	// idles while the host issues the next kernel (scheduleSyncS each).
	if nf, nb := c.microbatchSyncs(r); nf+nb > 0 {
		st.fwd += nf * c.scheduleSyncS()
		st.bwd += nb * c.scheduleSyncS()
		syncS += (nf + nb) * c.scheduleSyncS()
	}
	st.host += hostF + hostB + syncS
	st.compute.fixed += syncS
	st.compute.idle = math.Max(0, st.fwd+st.bwd-st.compute.total())

	par := &c.s.Parallel
	// TP: each all-reduce equivalent of the s·b·h activation.
	if c.tp > 1 {
		size := c.elemBytes() * ls.T * ls.h
		l := link("tp")
		unit, bw := c.allReduceTime(size, c.tp, l), c.allReduceBW(size, c.tp, l)
		if c.d.SP {
			unit, bw = 2*c.gatherTime(size, c.tp, l), 2*GatherBytes(size, c.tp)/c.linkRate(l)
		}
		t := w.tpUnits * unit
		lower := w.tpUnits * bw
		st.comm[axTP], st.exposed[axTP] = t, t
		// The asynchronous backward collectives hide under the
		// column-parallel layers' backward GEMMs but for a residual share
		// (the NCCL kernels take SMs from the GEMM they run beside).
		if async := w.tpAsync * unit; async > 0 {
			st.exposed[axTP] = t - async + overlapped(async, colBwd)
			lower = (w.tpUnits - (1-OverlapResidual)*w.tpAsync) * bw
		}
		if c.set.tpCommOverlap {
			// Userbuffers split each GEMM and its all-gather/reduce-scatter
			// into chunks that pipeline; what is left is the part longer
			// than the GEMMs and a share the chunks do not hide.
			st.exposed[axTP] = overlapped(t, gemm)
			lower = w.tpUnits * bw * OverlapResidual
		}
		st.commBound += lower
	}
	if c.cp > 1 && w.bytes[axCP] > 0 {
		l := link("cp")
		t := c.latency(l, 1)*w.cpColls + w.bytes[axCP]/c.linkRate(l)
		st.comm[axCP] = t
		switch par.CPCommType {
		case "a2a":
			st.exposed[axCP] = t
		case "all_gather":
			// Transformer Engine's all-gather CP (AttnFuncWithCPAndKVAllGather,
			// the scheme of the Llama 3 paper §3.3.2) gathers the whole K/V
			// before the attention and reduce-scatters dK/dV after it: the
			// gathers are exposed, not overlapped ("KV all-gather between CP
			// ranks is exposed", its docstring).
			st.exposed[axCP] = t
		default:
			// The ring's K/V exchange of each step overlaps the attention of
			// the previous one.
			st.exposed[axCP] = math.Max(c.latency(l, 1)*w.cpColls, t-attn)
		}
	}
	if w.bytes[axEP] > 0 {
		t, lower := c.allToAllTime(w.bytes[axEP], w.epColls, link("ep"))
		st.comm[axEP] = t
		st.exposed[axEP], lower = c.exposedAllToAll(t, lower, shared, st.compute.total())
		st.commBound += lower
	}
	if w.bytes[axETP] > 0 {
		l := link("etp")
		t := c.latency(l, float64(c.etp-1))*w.etpColls + w.bytes[axETP]/c.linkRate(l)
		st.comm[axETP], st.exposed[axETP] = t, t
		st.commBound += w.bytes[axETP] / c.linkRate(l)
	}
	if w.bytes[axPP] > 0 {
		l := link("pp")
		t := c.latency(l, 1)*w.ppSends + w.bytes[axPP]/c.linkRate(l)
		st.comm[axPP], st.exposed[axPP] = t, t
		if par.OverlapsP2P() {
			// The steady state runs a transfer, latency and all, beside
			// the chunk's forward the warm-up put ahead of it
			// (interleavedFill); it waits only for a transfer longer than
			// that forward, here the excess of each (an upper bound: the
			// schedule's simulation waits about half of it). The first
			// and last microbatches' crossings are time's pipeline fill.
			hop := t / w.ppSends
			st.exposed[axPP] = w.ppSends * math.Max(0, hop-st.fwd/float64(c.vpp))
		} else {
			st.commBound += w.bytes[axPP] / c.linkRate(l)
		}
	}
	// Where the host is the bottleneck the GPU idles between kernels, and
	// the collectives' kernels run in that idle time: they are GPU work
	// the host has already issued. The point-to-point transfers are not:
	// the schedule waits for them (batch_p2p_sync).
	var gpuComm float64
	for ax, x := range st.exposed {
		if ax != axPP {
			gpuComm += x
		}
	}
	st.compute.idle = math.Max(0, st.compute.idle-gpuComm)
	return st
}

// exposedAllToAll is the part of a microbatch's expert-parallel all-to-all
// time t the GPU waits for, and its bandwidth lower bound (lower), given
// what can run beside it: the shared expert's forward and backward (shared,
// GPU time) with model.moe.shared_expert_overlap, and another microbatch's
// compute (compute is this microbatch's) with
// parallel.overlap_moe_expert_parallel_comm. Each is a window the
// all-to-all hides under; the all-to-all waits for what the largest window
// does not cover, and a residual share (OverlapResidual) stays exposed
// either way.
//
//   - moe_shared_expert_overlap: the shared expert runs on a second stream
//     beside the dispatch and combine all-to-alls (Megatron-LM d98e8a64
//     moe_layer.py / shared_experts.py: the shared expert's FC1 and
//     activation overlap the dispatch, its FC2 the combine; autograd runs
//     their backward on the same stream, beside the backward all-to-alls).
//   - overlap_moe_expert_parallel_comm: the combined 1F1B schedule runs one
//     microbatch's dispatch and combine under another's compute
//     (combined_1f1b.py, TransformerLayerSchedulePlan.run): the forward's
//     all-to-alls under the other microbatch's backward and the other way
//     round, half the pair's compute for each.
func (c *costModel) exposedAllToAll(t, lower, shared, compute float64) (exposed, bound float64) {
	var windows []float64
	if c.s.Model.MoE != nil && c.s.Model.MoE.SharedExpertOverlap && shared > 0 {
		windows = append(windows, shared)
	}
	if c.combined1F1B() {
		windows = append(windows, compute/2)
	}
	if len(windows) == 0 {
		return t, lower
	}
	return overlapped(t, slices.Max(windows)), lower * OverlapResidual
}

// moeHostSync reports that every MoE layer's forward synchronises with the
// host: the grouped expert GEMM takes its per-expert token counts as a host
// list (Transformer Engine's GroupedLinear m_splits), copied from the GPU
// after routing. A graph that captures the MoE block (moe module, or the
// full iteration) avoids it, and so does a dispatch whose sizes the host
// knows (spec.MoE.StaticDispatch: padded to capacity, or a rank budget).
func (c *costModel) moeHostSync() bool {
	return c.sh.experts > 0 && !c.cm.graphs.moe && !c.cm.graphs.full && !c.s.Model.MoE.StaticDispatch()
}

// scheduleSyncS is the GPU's idle time at one of the training loop's own
// host synchronisations (microbatchSyncs): the queue drains, and
// the GPU waits for the host to issue the next kernel, HostOpS. (After the
// MoE layers' token-count copy the host has the dispatcher's work to do
// before the next kernel, HostSyncS.)
func (c *costModel) scheduleSyncS() float64 { return c.cal.HostOpS }

// microbatchSyncs counts the host synchronisations rank r's schedule makes
// every microbatch beside the MoE layers' (moeHostSync), in its forward and
// in its backward. Each drains the GPU's queue, so the GPU then idles while
// the host issues the next kernel (scheduleSyncS). Megatron-LM at d98e8a64:
//
//   - the loss check, two synchronisations: pretrain_gpt.py's loss_func
//     validates each microbatch's loss with rerun_state_machine.validate_result
//     (rejection_func torch.isnan, then torch.isinf) when
//     check_for_nan_in_loss_and_grad is on (the default;
//     --no-check-for-nan-in-loss-and-grad turns it off, and a full-iteration
//     CUDA graph needs it off); the check reads the CUDA result on the host
//     (rerun_state_machine.py: "if result_rejected"), on the last stage,
//     at the end of the forward. Megatron-Bridge's loss function does the
//     same (rerun_state_machine.check_for_nan_in_loss, default on).
//   - batched point-to-point transfers: without overlap_p2p_comm (forced
//     off without the interleaved schedule, arguments.py) batch_p2p_comm is
//     on, and with batch_p2p_sync (default on) every _communicate call ends
//     in torch.cuda.synchronize() (p2p_communication.py). A rank receives
//     before its forward unless it is the first stage and sends and
//     receives before its backward unless it is the last; the interleaved
//     schedule without the overlap does so for each of its vpp chunks.
func (c *costModel) microbatchSyncs(r int) (fwd, bwd float64) {
	if c.cm.graphs.full {
		return 0, 0
	}
	if r == c.pp-1 && c.s.Train.CheckForNaNInLossAndGrad {
		fwd += 2
	}
	if c.pp > 1 && !c.s.Parallel.OverlapsP2P() {
		v := float64(c.vpp)
		if c.vpp > 1 {
			return fwd + v, bwd + v
		}
		fwd += boolF(r > 0)
		bwd += boolF(r < c.pp-1)
	}
	return fwd, bwd
}

// rerunShare is the share of rank r's layers full recomputation reruns.
func (c *costModel) rerunShare(r int) float64 {
	var n, all int
	for _, ch := range c.stages[r] {
		n += recomputedLayers(&c.s.Train, ch.Count)
		all += ch.Count
	}
	if all == 0 {
		return 0
	}
	return float64(n) / float64(all)
}

// recomputesMoE: the backward repeats the MoE block's forward.
func (c *costModel) recomputesMoE() bool {
	tr := c.s.Train
	return tr.Recompute == "full" || tr.Recompute == "selective" && c.set.recomputeModules["moe"]
}

// OverlapResidual is the share of overlapped communication that stays
// exposed (chunk pipeline fill, SMs the communication kernels take).
const OverlapResidual = 0.15

// overlapped is the exposed part of a collective t long that overlaps
// window seconds of compute: what the window does not cover, and at least
// the residual share OverlapResidual. Every overlapped collective of the
// step (tensor-parallel, expert all-to-all, data-parallel) is charged so.
func overlapped(t, window float64) float64 {
	return math.Max(OverlapResidual*t, t-window)
}

// Collective latency: a fixed cost per collective and one per ring step
// (NCCL's ring algorithms take n−1 steps per all-gather / reduce-scatter).
// Orders of magnitude from nccl-tests on DGX H100 (small-message latency).
const (
	nvlinkBaseS  = 10e-6
	nvlinkStepS  = 1e-6
	networkBaseS = 20e-6
	networkStepS = 4e-6
)

// NCCL's tuning model for a ring all-gather or reduce-scatter in its Simple
// protocol, the one it runs large messages in (the data-parallel buckets:
// tens to hundreds of MB): a base latency and one per ring step, the steps
// that cross nodes at the network's (NVIDIA/nccl 5067397c
// src/graph/tuning.cc, ncclTunerConstantsDefaults: baseLatencies Ring
// Simple 8.4 µs, hwLatencies NET Simple 14 µs for Ring and for Tree, which
// the ring's inter-node steps take with one rank per node, NVLink Ring
// Simple 3.4 µs; ncclTopoTuneModel: latency = base + (nsteps −
// nInterSteps)·intraLat + nInterSteps·interLat, nInterSteps = nNodes − 1,
// intraLat at least three times the network overhead per step of an
// inter-node ring, 1 µs on x86 (getNetOverhead)).
const (
	ncclSimpleBaseS      = 8.4e-6
	ncclSimpleNetStepS   = 14e-6
	ncclSimpleIntraStepS = 3.4e-6
)

// bucketLatency is the latency NCCL's tuning model gives one data-parallel
// bucket's all-gather or reduce-scatter over n GPUs, k of them in each
// NVLink domain, on link (ncclSimpleBaseS).
func (c *costModel) bucketLatency(n, k int, link string) float64 {
	if n <= 1 {
		return 0
	}
	if link != LinkNetwork {
		return ncclSimpleBaseS + float64(n-1)*ncclSimpleIntraStepS
	}
	nodes := (n + max(k, 1) - 1) / max(k, 1)
	inter := max(nodes-1, 0)
	return ncclSimpleBaseS + float64(inter)*ncclSimpleNetStepS + float64(n-1-inter)*ncclSimpleIntraStepS
}

func (c *costModel) latency(link string, steps float64) float64 {
	if link == LinkNVLink {
		return nvlinkBaseS + steps*nvlinkStepS
	}
	return networkBaseS + steps*networkStepS
}

// bandwidth is the link's one-direction bandwidth per GPU, GB/s.
func (c *costModel) bandwidth(link string) float64 {
	if link == LinkNVLink {
		return c.s.Cluster.NVLinkGBps
	}
	return c.s.Cluster.NetworkGBps
}

// linkRate is the bytes per second one GPU moves in a large collective on
// link (NCCL bus bandwidth): the line rate at its measured share
// (nvlinkRates, networkBus).
func (c *costModel) linkRate(link string) float64 {
	if link == LinkNVLink {
		return c.s.Cluster.NVLinkGBps * 1e9 * c.cm.r.nvlinkBus * c.cal.NVLinkEff
	}
	return c.s.Cluster.NetworkGBps * 1e9 * networkBus * c.cal.NetworkEff
}

// nvlsRate is the algorithm bandwidth (bytes reduced per second) of an NVLink
// SHARP all-reduce over n GPUs of one NVLink domain, 0 where NCCL would run a
// ring instead: NVLink SHARP needs compute capability ≥ 9.0 and beats the
// ring only from 5 GPUs on (ring and NVLS reach the same 370 GB/s bus
// bandwidth on 2 to 4 H100, NVIDIA/nccl#1455).
func (c *costModel) nvlsRate(n int, link string) float64 {
	if link != LinkNVLink || !c.cm.r.nvls || n <= 2 {
		return 0
	}
	nv := c.s.Cluster.NVLinkGBps * 1e9 * c.cm.r.nvlsAlg * c.cal.NVLinkEff
	if ring := c.linkRate(link) / (2 * float64(n-1) / float64(n)); ring >= nv {
		return 0
	}
	return nv
}

// gatherTime is a ring all-gather or reduce-scatter of a size-byte tensor over n.
func (c *costModel) gatherTime(size float64, n int, link string) float64 {
	if n <= 1 {
		return 0
	}
	return c.latency(link, float64(n-1)) + GatherBytes(size, n)/c.linkRate(link)
}

// allReduceTime is an all-reduce of size bytes over n: NVLink SHARP (each GPU
// sends and receives the tensor once through the NVSwitch) inside an NVLink
// domain of compute capability ≥ 9.0, a ring elsewhere.
func (c *costModel) allReduceTime(size float64, n int, link string) float64 {
	if n <= 1 {
		return 0
	}
	if c.nvlsRate(n, link) > 0 {
		return c.latency(link, 2) + c.allReduceBW(size, n, link)
	}
	return c.latency(link, float64(2*(n-1))) + c.allReduceBW(size, n, link)
}

// allReduceBW is the bandwidth part of an all-reduce of size bytes over n.
func (c *costModel) allReduceBW(size float64, n int, link string) float64 {
	if nv := c.nvlsRate(n, link); nv > 0 {
		return size / nv
	}
	return AllReduceBytes(size, n) / c.linkRate(link)
}

// allReduceTraffic is what one GPU sends in an all-reduce of size bytes over n.
func (c *costModel) allReduceTraffic(size float64, n int, link string) float64 {
	if c.nvlsRate(n, link) > 0 {
		return size
	}
	return AllReduceBytes(size, n)
}

// DeepEP's algorithm bandwidth over a multi-node NVLink domain, as shares of
// the NVLink line rate (one direction): Megatron-LM's DeepSeek-V3 GB200 guide
// (docs/discussions/deepseek-v3-gb200-optimization at eb0783b6, §2.2.1)
// measured DeepEP at EP 32 on GB200 NVL72, where "DeepEP still does not
// officially support scenarios where the NVLink domain is larger than 8" (a
// community patch, "not well-optimized"): "the dispatch can only reach about
// 400 GB/s and the combine can only reach about 190 GB/s algorithm bandwidth
// with 24 SMs", against 900 GB/s one way. HybridEP, which replaced it there
// (§2.5: TMA copies, "able to achieve higher bandwidth with fewer SMs, and
// fully supporting MNNVL"), and NCCL's all-to-all run at NCCL's NVLink rate.
// The guide's timeline with DeepEP (images/image4.png, the same plan: 4,096
// tokens, 6.9 remote copies of 14 KiB each, about 403 MB per call) shows a
// dispatch of about 0.9 ms and a combine of at least 2.4 ms; these rates give
// 1.0 and 2.1 ms.
const (
	deepEPMNNVLDispatch = 400.0 / 900
	deepEPMNNVLCombine  = 190.0 / 900
)

// deepEPMNNVLRates are the dispatch and combine rates (bytes/s) of the flex
// dispatcher's DeepEP backend when more than 8 ranks of an expert-parallel
// group share an NVLink domain (DeepEP's NVLink kernels are built for at
// most 8 peers; beyond that only the guide's patched MNNVL path reaches
// them), 0 otherwise.
func (c *costModel) deepEPMNNVLRates() (dispatch, combine float64) {
	mo := c.s.Model.MoE
	if !c.flexDispatch() || mo.FlexBackend() != "deepep" || c.epDomainRanks() <= 8 {
		return 0, 0
	}
	line := c.s.Cluster.NVLinkGBps * 1e9 * c.cal.NVLinkEff
	return line * deepEPMNNVLDispatch, line * deepEPMNNVLCombine
}

// allToAllTime is colls expert-parallel all-to-alls in which one GPU sends
// sent bytes in all: the part to peers in its NVLink domain (and forwarded
// there, epCopies) goes over NVLink, the rest over the network, both at
// once. It also returns the bandwidth part.
func (c *costModel) allToAllTime(sent, colls float64, link string) (t, bw float64) {
	if c.ep <= 1 || sent <= 0 {
		return 0, 0
	}
	onNV := 1.0
	if link != LinkNVLink {
		if nvc, netc := c.epCopies(); nvc+netc > 0 {
			onNV = nvc / (nvc + netc)
		}
	}
	nv := sent * onNV / c.linkRate(LinkNVLink)
	if disp, comb := c.deepEPMNNVLRates(); disp > 0 {
		// Half the bytes are dispatches (forward dispatch, backward of
		// the combine), half combines.
		nv = sent * onNV / 2 * (1/disp + 1/comb)
	}
	net := sent * (1 - onNV) / c.linkRate(LinkNetwork)
	l := LinkNVLink
	if onNV < 1 {
		l = LinkNetwork
	}
	return colls*c.latency(l, 1) + math.Max(nv, net), math.Max(nv, net)
}

// peakFLOPs is the dense peak of the precision the model's GEMMs run in.
func (c *costModel) peakFLOPs() float64 { return c.cm.peak(c.cm.fp8) }

// time fills comms, compute, step time, tokens/s and MFU.
func (c *costModel) time(e *Estimate, link func(string) string) {
	e.FLOPsPerStep, e.ModelFLOPsPerStep = flopCounts(c.s, c.d)
	peak := c.peakFLOPs()
	e.Compute.PeakTFLOPs = peak / 1e12

	m := float64(c.m)
	works := make([]stageWork, c.pp)
	clocks := make([]stageClock, c.pp)
	mbTime := make([]float64, c.pp)
	slow := 0
	for r := range c.pp {
		works[r] = c.stageCost(r)
		clocks[r] = c.stageClock(r, works[r], link)
		off := c.offloadExposed() + c.fineOffloadExposed(r, clocks[r]) // offload.go: 0 unless offloading runs
		mbTime[r] = c.total(clocks[r]) + off
		if r == c.pp-1 {
			deferredMB, _ := c.deferredWgrad(0) // offload.go: 0 unless the output layer's wgrad is deferred
			mbTime[r] -= deferredMB
		}
		e.Compute.OffloadExposedS += m * off
		c.computeS = append(c.computeS, m*clocks[r].compute.total())
		if mbTime[r] > mbTime[slow] {
			slow = r
		}
	}
	// The slowest stage runs all m microbatches back to back, and the fill
	// and drain take each other stage's own time once (per virtual stage,
	// 1/v of it): m·max T + (Σ T − max T)/v. With equal stages this is
	// (m + (p−1)/v)·T; with unequal ones it is not (p−1)/v·max T: Megatron's
	// schedules simulated chunk by chunk (TestUnequalStagesSimulated) take
	// exactly this when the last stage (the loss) is the slower one.
	pipeTime := m * mbTime[slow]
	for r, t := range mbTime {
		if r != slow {
			pipeTime += t / float64(c.vpp)
		}
	}
	if w := works[slow]; c.s.Parallel.OverlapsP2P() && w.ppSends > 0 {
		l := link("pp")
		pipeTime += interleavedFill(c.pp, c.vpp, c.g, c.latency(l, 1)+w.bytes[axPP]/w.ppSends/c.linkRate(l), clocks[slow].fwd/float64(c.vpp))
	}
	deferredMB, flush := c.deferredWgrad(clocks[slow].bwd) // offload.go: the deferred wgrad GEMMs the cooldown does not hide
	pipeTime += flush
	e.Compute.DeferredWgradS, e.Compute.DeferredWgradExposedS = m*deferredMB, flush
	e.Pipeline.BubbleTimeS = pipeTime - m*mbTime[slow]
	sc := clocks[slow].compute
	e.Compute.SlowestStage = slow
	e.Compute.MicrobatchTimeS = mbTime[slow]
	e.Compute.ForwardMicrobatchS = clocks[slow].fwd
	e.Compute.TimeS = m * sc.total()
	e.Compute.GEMMS, e.Compute.AttentionS, e.Compute.MemoryBoundS, e.Compute.KernelOverheadS, e.Compute.HostBoundS =
		m*sc.gemm, m*sc.attn, m*sc.mem, m*sc.fixed, m*sc.idle
	perGPU := float64(c.tp * c.cp)
	e.Compute.IdealTimeS = m * sc.ideal
	// Memory-bound work is proportional to the tokens too (at the same tp
	// and cp), so it belongs to the microbatch bound, not to IdealTimeS.
	e.Compute.MicrobatchBoundS = sc.ideal + sc.mem + clocks[slow].commBound
	e.Compute.FLOPsPerGPU = m * (works[slow].flops + works[slow].recompute) / perGPU
	if e.Compute.TimeS > 0 && peak > 0 {
		e.Compute.Efficiency = e.Compute.FLOPsPerGPU / (e.Compute.TimeS * peak)
	}

	sizes := [numAxes]int{c.tp, c.cp, c.ep, c.etp, c.pp}
	for ax, name := range axisNames {
		if sizes[ax] <= 1 || c.axisIdle(name) {
			continue
		}
		best := 0
		for r := range c.pp {
			if works[r].bytes[ax] > works[best].bytes[ax] {
				best = r
			}
		}
		if works[best].bytes[ax] == 0 && ax != axTP {
			continue
		}
		l := link(name)
		ac := AxisComm{
			Group: name, Size: sizes[ax], Collective: c.collective(name),
			BytesPerStep: round(works[best].bytes[ax] * m), Link: l, BandwidthGBps: c.bandwidth(l),
			TimeS: clocks[best].comm[ax] * m, ExposedS: clocks[best].exposed[ax] * m, Stage: best,
		}
		if pl := works[best].perLayer[ax]; pl > 0 {
			ac.BytesPerLayer = round(pl)
		}
		e.Comms[name] = ac
	}

	step := pipeTime + c.dataParallelTime(e, clocks, link)
	// The optimizer step on the stage with the most parameters.
	denseShards, expertShards := c.dataParallelShards()
	var opt float64
	for r := range c.pp {
		dense, expert := c.stageParams[r].denseExpertPerGPU(int64(c.tp), int64(c.etp), int64(c.ep))
		shard := float64(dense) + float64(expert)
		if c.sharding != ShardNone {
			shard = float64(dense)/float64(denseShards) + float64(expert)/float64(expertShards)
		}
		host := c.hostOptimizerStep(shard)
		if t := c.cm.optimizerStep(shard, float64(dense+expert), c.state).total() + host + c.muonStepS(r, link) + c.soapStepS(r); t > opt {
			opt, e.Compute.OptimizerHostS = t, host
		}
	}
	e.Compute.OptimizerS = opt
	step += opt
	e.Compute.SlowestNodeWaitS = c.slowestNodeWaitS()
	step += e.Compute.SlowestNodeWaitS
	e.StepTimeS = step
	if step > 0 {
		e.TokensPerS = float64(c.s.Train.GlobalBatch) * float64(c.s.Train.SeqLength) / step
		e.ModelTFLOPsPerGPU = e.ModelFLOPsPerStep / step / float64(c.world) / 1e12
		if peak > 0 {
			e.MFU = e.ModelFLOPsPerStep / (step * float64(c.world) * peak)
		}
	}
}

// slowestNodeWaitS is what a step waits for its slowest node: the step
// ends at a synchronisation of every rank (the gradient reduction and the
// optimizer's gradient norm), and the expected largest of n normal samples
// lies about √(2 ln n) standard deviations above their mean, so n nodes
// whose step times spread by StepJitterS wait StepJitterS·√(2 ln n). One
// node waits for none. The spread is taken per node, not per GPU, because
// the runs measured show it there: before this term, MLPerf Training v5.1's
// Llama 3.1 8B (one microbatch a step, the same work per GPU) was rated 15
// ms slower than measured on one node of 8 B200 and 18-20 ms faster on 2 and
// 4 (Nebius), 53 and 26 ms slower on 1 and 2 nodes and 18-22 ms faster on 4
// to 16 (University of Florida).
func (c *costModel) slowestNodeWaitS() float64 {
	nodes := c.s.Cluster.Nodes
	if nodes <= 1 || c.cal.StepJitterS <= 0 {
		return 0
	}
	return c.cal.StepJitterS * math.Sqrt(2*math.Log(float64(nodes)))
}

// dataParallelTime fills the dp, edp and embd comms and returns the time the
// step waits for them.
func (c *costModel) dataParallelTime(e *Estimate, clocks []stageClock, link func(string) string) float64 {
	var wait float64
	dpFam := "dp"
	if c.cp > 1 {
		dpFam = "dp-cp"
	}
	for _, x := range []struct {
		axis, fam string
		size      int
		expert    bool
	}{
		{"dp", dpFam, c.dp * c.cp, false},
		{"edp", "edp", c.edp, true},
	} {
		if x.size <= 1 || (x.expert && c.sh.experts == 0) {
			continue
		}
		best, bestBytes := 0, -1.0
		var bestExposed, bestTime, bestBuckets, bestParams float64
		l := link(x.fam)
		k := c.fewestPerDomain(x.fam, x.size)
		for r := range c.pp {
			dense, expert := c.stageParams[r].denseExpertPerGPU(int64(c.tp), int64(c.etp), int64(c.ep))
			n := float64(dense)
			if x.expert {
				n = float64(expert)
			}
			grad, gather := c.dataParallelBytes(n, x.size)
			nb := c.dataParallelBuckets(n, r, x.expert)
			gt, pt := c.dataParallelTimes(n, x.size, k, l, nb)
			exposed := c.exposedDataParallel(gt, pt, nb, clocks[r])
			if b := grad + gather; b > bestBytes {
				best, bestBytes, bestExposed, bestTime, bestBuckets, bestParams = r, b, exposed, gt+pt, nb, n
			}
		}
		var bucketParams int64
		if c.ddpBuckets() {
			// A buffer within the size (or an unbounded one, without
			// overlap_grad_reduce) is one bucket holding all of it.
			bucketParams = int64(math.Min(c.ddpBucketParams(best), bestParams))
		}
		e.Comms[x.axis] = AxisComm{
			Group: x.fam, Size: x.size, Collective: c.dataParallelCollective(),
			BytesPerStep: round(bestBytes), Link: l, BandwidthGBps: c.bandwidth(l),
			TimeS: bestTime, ExposedS: bestExposed, Stage: best,
			Buckets: bestBuckets, BucketParams: bucketParams,
		}
		wait += bestExposed
	}
	// Tied embeddings across the pipeline: the first and last stage all-reduce
	// the word-embedding gradient (fp32).
	if c.sh.tied && c.pp > 1 {
		l := link("embd")
		size := 4 * float64(c.sh.wordEmbeddings()) / float64(c.tp)
		b := AllReduceBytes(size, 2)
		t := c.allReduceTime(size, 2, l)
		e.Comms["embd"] = AxisComm{
			Group: "embd", Size: 2, Collective: CollectiveAllReduce,
			BytesPerStep: round(b), Link: l, BandwidthGBps: c.bandwidth(l), TimeS: t, ExposedS: t,
		}
		wait += t
	}
	return wait
}
func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Collectives an axis uses (AxisComm.Collective); the report words them.
const (
	CollectiveAllReduce     = "all-reduce"
	CollectiveGatherScatter = "all-gather+reduce-scatter"
	CollectiveAllToAll      = "all-to-all"
	CollectiveRing          = "ring-exchange"
	CollectiveSendRecv      = "send-recv"
	// CollectiveShardedDP is the distributed optimizer's reduce-scatter of
	// gradients and all-gather of parameters once per step.
	CollectiveShardedDP = "reduce-scatter+all-gather"
	// CollectiveGradShardedDP is Megatron-FSDP's optim_grads: the gradients
	// reduce-scattered after every microbatch, the parameters gathered once
	// per step.
	CollectiveGradShardedDP = "microbatch-reduce-scatter+all-gather"
	// CollectiveFSDP is full sharding's gathers and reduce-scatter every microbatch.
	CollectiveFSDP = "fsdp"
)

// collective is the collective an axis uses in this plan.
func (c *costModel) collective(ax string) string {
	switch ax {
	case "tp":
		if c.d.SP {
			return CollectiveGatherScatter
		}
		return CollectiveAllReduce
	case "cp":
		switch c.s.Parallel.CPCommType {
		case "a2a":
			return CollectiveAllToAll
		case "all_gather":
			return CollectiveGatherScatter
		}
		return CollectiveRing
	case "ep":
		if c.s.Model.MoE != nil && c.s.Model.MoE.Dispatcher == "allgather" {
			return CollectiveGatherScatter
		}
		return CollectiveAllToAll
	case "etp":
		return CollectiveGatherScatter
	}
	return CollectiveSendRecv
}

func (c *costModel) dataParallelCollective() string {
	switch c.sharding {
	case ShardOptimizer:
		return CollectiveShardedDP
	case ShardGrads:
		return CollectiveGradShardedDP
	case ShardFull:
		return CollectiveFSDP
	}
	return CollectiveAllReduce
}

// gradBytes is the width gradients are reduced in: fp32 (Megatron sets
// accumulate_allreduce_grads_in_fp32 for bf16) unless grad_reduce_in_bf16.
func (c *costModel) gradBytes() float64 {
	if c.set.gradReduceBF16 && c.s.Train.Precision != "fp32" {
		return 2
	}
	return 4
}

// gatherBytes is the width parameters are gathered in: their own (fp8 with
// fp8_param_gather, NVFP4 with fp4_param_gather: stateBytes).
func (c *costModel) gatherBytes() float64 {
	return c.state.Weights
}

// dataParallelBytes is what one GPU sends per step to reduce the gradients of
// n parameters and gather the parameters back over a data-parallel group.
func (c *costModel) dataParallelBytes(n float64, size int) (grad, gather float64) {
	gb, wb := c.gradBytes(), c.gatherBytes()
	switch c.sharding {
	case ShardOptimizer:
		return GatherBytes(n*gb, size), GatherBytes(n*wb, size)
	case ShardGrads:
		// Megatron-FSDP's optim_grads reduce-scatters the gradients after
		// every microbatch's backward (megatron_fsdp.py,
		// grad_reduce_every_bprop), and gathers the parameters once.
		return float64(c.m) * GatherBytes(n*gb, size), GatherBytes(n*wb, size)
	case ShardFull:
		// Parameters gathered before every forward and backward, gradients
		// reduce-scattered after every backward, each microbatch.
		m := float64(c.m)
		return m * GatherBytes(n*gb, size), 2 * m * GatherBytes(n*wb, size)
	}
	return AllReduceBytes(n*gb, size), 0
}

// ddpBucketParams is the DDP bucket size Megatron resolves once for every
// buffer of a rank (resolve_ddp_bucket_size, training.py at d98e8a64):
// train.ddp_num_buckets gives the rank's parameters (all its model chunks,
// dense and expert) over that count, train.ddp_bucket_size itself, and
// neither max(40M, 1M·(dp·cp)) parameters (distributed_data_parallel_config.py).
// Without overlap_grad_reduce DistributedDataParallel sets it to infinity
// ("Set bucket_size to infinity if overlap_grad_reduce is False",
// distributed_data_parallel.py at d98e8a64): each buffer (dense, expert) is
// one bucket, reduced in one synchronous collective after the last
// backward, and gathered in one.
func (c *costModel) ddpBucketParams(r int) float64 {
	tr := c.s.Train
	switch {
	case !tr.OverlapGradReduce:
		return math.Inf(1)
	case tr.DDPNumBuckets != nil && *tr.DDPNumBuckets > 0:
		dense, expert := c.stageParams[r].denseExpertPerGPU(int64(c.tp), int64(c.etp), int64(c.ep))
		return math.Max(1, math.Floor(float64(dense+expert)/float64(*tr.DDPNumBuckets)))
	case tr.DDPBucketSize != nil && *tr.DDPBucketSize > 0:
		return float64(*tr.DDPBucketSize)
	}
	return defaultDDPBucketParams(c.dp * c.cp)
}

// ddpBuckets reports whether the data-parallel parameters are in Megatron
// DDP's buckets (the distributed optimizer or plain DDP, Megatron-FSDP
// without sharding), not in Megatron-FSDP's units.
func (c *costModel) ddpBuckets() bool { return !c.s.Train.FSDP || c.sharding == ShardNone }

// defaultDDPBucketParams is Megatron's default DDP bucket size over a dp·cp
// group of dpcp ranks: max(40M, 1M·dpcp) parameters.
func defaultDDPBucketParams(dpcp int) float64 { return math.Max(40e6, 1e6*float64(dpcp)) }

// dataParallelBuckets is how many collectives each reduction or gather of the n
// data-parallel parameters pipeline rank r holds (its expert ones where
// expert) takes. Megatron's DDP and distributed optimizer pack the
// parameters into buckets of ddpBucketParams. Megatron-FSDP
// (train.fsdp, any sharding strategy but no_shard) groups them by FSDP unit
// instead: every decoder layer (TransformerLayer, MoETransformerLayer) is a
// unit whose parameters one collective gathers and one reduces, the expert
// parameters in a bucket of their own, and the parameters outside the units
// (embedding, output layer, final norm) in one more (FullyShardedDataParallel
// sets fsdp_unit_modules to the layer classes, mcore_fsdp_adapter.py, and
// _get_parameter_groups buckets by unit and by expert, dtype and
// requires_grad, param_and_grad_buffer.py, at d98e8a64). So full sharding
// pays a collective's latency per layer and microbatch, which at a large
// data-parallel group (a ring step per rank) is what bounds it.
//
// Megatron's DDP cuts buckets only on the first pipeline rank, and there only
// in the first model chunk (distributed_data_parallel.py "Turn off bucketing
// if we are on a pipeline stage that is not the first", training.py
// per_chunk_disable_bucketing, at d98e8a64); the other ranks and chunks
// reduce each chunk in one collective after its last backward, hidden by
// the pipeline's drain. Timed so (session 48: fewer collectives, the later
// ranks' slack), the model no longer follows the measured growth of DGX
// Cloud's Nemotron-4 340B step from dp 2 to dp 32 (TestP2PSyncMatchesMeasuredScaling:
// fp8 0.18 s estimated against 0.33 s measured, where every rank in buckets
// gives 0.26 s), so it keeps every rank's parameters in buckets: the
// per-bucket latency stands in for data-parallel cost the model lacks.
func (c *costModel) dataParallelBuckets(n float64, r int, expert bool) float64 {
	if c.ddpBuckets() {
		// A bucket closes at the first parameter that takes it to the
		// bucket size (parameters are never split), so there are never
		// more buckets than parameter tensors
		// (_compute_default_per_buffer_param_layout in
		// param_and_grad_buffer.py, and the distributed optimizer's
		// _compute_per_buffer_param_layout in distrib_optimizer.py, at
		// d98e8a64).
		return math.Max(1, math.Min(math.Ceil(n/c.ddpBucketParams(r)), float64(c.stageTensors[r].of(expert))))
	}
	units := 0.0
	for _, chunk := range c.stages[r] {
		for l := chunk.First; l < chunk.First+chunk.Count; l++ {
			if !expert || c.sh.isMoE(l) {
				units++
			}
		}
	}
	if r == c.pp-1 && c.sh.mtp > 0 && (!expert || c.sh.isMoE(int(c.sh.layers)-1)) {
		units += float64(c.sh.mtp) // each MTP layer's decoder layer
	}
	if !expert && (r == 0 || r == c.pp-1) {
		units++ // embedding, output layer, final norm
	}
	return math.Max(1, units)
}

// dataParallelTimes is the time of the gradient reduction and of the
// parameter gather of n parameters over size GPUs, k of them on each node,
// in buckets collectives each (dataParallelBuckets).
func (c *costModel) dataParallelTimes(n float64, size, k int, link string, buckets float64) (grad, gather float64) {
	if n <= 0 || size <= 1 {
		return 0, 0
	}
	gb, wb := c.gradBytes(), c.gatherBytes()
	lat := c.bucketLatency(size, k, link) * buckets
	gather1 := func(bytes float64) float64 { return lat + c.gatherTransfer(bytes, size, k, link) }
	switch c.sharding {
	case ShardOptimizer:
		return gather1(n * gb), gather1(n * wb)
	case ShardGrads:
		return float64(c.m) * gather1(n*gb), gather1(n * wb)
	case ShardFull:
		m := float64(c.m)
		return m * gather1(n*gb), 2 * m * gather1(n*wb)
	}
	return lat + 2*c.gatherTransfer(n*gb, size, k, link), 0
}

// gatherTransfer is the bandwidth time of an all-gather or reduce-scatter of
// a size-byte tensor over n GPUs whose ring crosses the network with k of
// them, at the fewest, in one NVLink domain (fewestPerDomain). NCCL runs
// these collectives as one flat ring over all n ranks (Ring is the only
// algorithm for them beside PAT, NVLS and CollNet), each rank sending
// (n−1)/n of the tensor over its next hop, and its tuning model rates the
// ring at the bus bandwidth of its bottleneck link: busBw = nChannels ·
// bwInter across nodes, algorithm time (n−1)/n · size / busBw for an
// all-gather or reduce-scatter (NVIDIA/nccl 5067397c src/graph/tuning.cc,
// ncclTopoTuneModel). The channels' rings leave a domain through
// different GPUs, each through its own NIC, so the k members in a domain
// share the crossing: every NIC carries 1/k of each rank's (n−1)/n, while
// the other (k−1)/k of it goes over NVLink at the same time (the ring's
// hops are pipelined, so the slower of the two sets the time). A group
// whose members are one per domain (k 1) sends everything over the
// network.
func (c *costModel) gatherTransfer(size float64, n, k int, link string) float64 {
	b := GatherBytes(size, n)
	if link != LinkNetwork {
		return b / c.linkRate(link)
	}
	if k >= n {
		k = 1 // the links say the group crosses; its split is unknown
	}
	kf := float64(max(k, 1))
	return math.Max(b*(kf-1)/kf/c.linkRate(LinkNVLink), b/kf/c.linkRate(LinkNetwork))
}

// fewestPerDomain is the fewest members a group of the family (size GPUs)
// has in one NVLink domain, over the groups that leave their domain: the
// domain whose NICs carry the most of the group's crossing traffic
// (gatherTransfer). Megatron's rank order puts tp, cp, ep/etp before dp
// (with tp-cp-ep-pp-dp, pp too), so a group's members are stride ranks
// apart from a base whose lower digits run over [0, stride) and whose
// higher ones step by stride·size. Domains are blocks of nvlink_domain
// consecutive ranks (layout.Build's placement); where the NVLink domain is
// smaller than a node, the node. With multi-node NVLink (GB200/GB300
// NVL72), NCCL's topology fuses the GPUs of the NVLink clique, not of the
// host, as its local level (src/graph/topo.cc, ncclTopoGetSystem: "MNNVL
// clique support", nLocalRanks = comm->clique.size; NVIDIA/nccl 5067397c),
// so the members in one domain share its NVLink and its NICs. Only the
// first and the last domain a group touches can hold fewer members than
// the floor(domain/stride) each domain between them holds.
func (c *costModel) fewestPerDomain(fam string, size int) int {
	stride := c.tp
	switch fam {
	case "dp":
		stride = c.tp * c.cp
	case "edp":
		stride = c.etp * c.ep
	}
	if fam != "edp" && c.s.Parallel.Order == "tp-cp-ep-pp-dp" {
		stride *= c.pp
	}
	return fewestInBlock(stride, size, max(c.s.Cluster.GPUsPerNode, c.s.Cluster.NVLinkDomain, 1), c.world)
}

// fewestInBlock is the fewest members a group has in one block of block
// consecutive ranks, over the groups of size members stride ranks apart
// that span two blocks or more, in a world of world ranks whose group bases
// run over [0, stride) plus multiples of stride·size; size when no group
// spans two blocks.
func fewestInBlock(stride, size, block, world int) int {
	if stride >= block || size <= 1 {
		return 1
	}
	span := (size - 1) * stride
	fewest := size
	period := block / gcdInt(stride*size%block, block) // the bases repeat mod block
	steps := min(max(world/(stride*size), 1), period)
	for y := range steps {
		for x := range min(stride, block) {
			r := (x + y*stride*size) % block
			if r+span < block {
				continue // inside one block
			}
			first := (block - r + stride - 1) / stride
			lastStart := (r + span) / block * block
			last := size - (lastStart-r+stride-1)/stride
			k := min(first, last)
			if (r+span)/block >= 2 {
				k = min(k, block/stride) // a block between the first and the last
			}
			fewest = min(fewest, k)
		}
	}
	return max(fewest, 1)
}

// gcdInt is the greatest common divisor of a ≥ 0 and b > 0.
func gcdInt(a, b int) int {
	for a != 0 {
		a, b = b%a, a
	}
	return b
}

// exposedDataParallel is the part of the data-parallel traffic the step waits
// for, in buckets collectives each way (dataParallelBuckets). With
// overlap_grad_reduce Megatron reduces each bucket as soon as the last
// microbatch's backward has produced all of it (the backward post-hook), the
// collectives one after another: bucket j is ready j/n of the way through
// that backward, so the last bucket's reduction always waits, and a
// reduction slower than the backward ends R + B/n − B after it,
// max(R/n, R − B + B/n). With overlap_param_gather the forward pre-hook of a
// bucket's first module waits for its gather and only then dispatches the
// next bucket's (param_and_grad_buffer.py finish_param_sync,
// next_param_gather_bucket_group; the first bucket's is dispatched there
// too unless align_param_gather or overlap_param_gather_with_optimizer_step,
// distributed_data_parallel.py at d98e8a64): the first gather waits whole,
// each later one behind its predecessor's compute, max(A/n, A − F + F/n).
// With full sharding the traffic of every microbatch overlaps that
// microbatch's compute when overlap_grad_reduce is on, and each of those
// collectives keeps the residual share (OverlapResidual: the SMs its
// kernels take from the compute beside it) of its own time exposed, as each
// microbatch's tensor- and expert-parallel collectives do: the step pays the
// share of all of them, not of one microbatch's (the Llama 3 paper's 405B
// runs, which reduce-scatter every microbatch's gradients,
// TestShardedGradsEveryMicrobatch).
func (c *costModel) exposedDataParallel(grad, gather, buckets float64, st stageClock) float64 {
	tr := c.s.Train
	if c.sharding == ShardFull {
		m := float64(c.m)
		if tr.OverlapGradReduce {
			return overlapped(grad+gather, m*(st.fwd+st.bwd))
		}
		return grad + gather
	}
	if c.sharding == ShardGrads {
		// Every microbatch's reduce-scatter overlaps the compute after it
		// (Megatron-FSDP needs overlap_grad_reduce with optim_grads:
		// "Cannot sync-reduce gradients for optim_grads"; its no_sync:
		// "For grads shard mode there will actually always be gradient
		// sync happening", megatron_fsdp.py at d98e8a64), the last
		// microbatch's only its own backward; each keeps its residual
		// share exposed.
		m := float64(c.m)
		grad = overlapped(grad, m*(st.fwd+st.bwd)-st.fwd)
		if tr.OverlapParamGather {
			gather = overlapped(gather, st.fwd)
		}
		return grad + gather
	}
	// With the interleaved schedule Megatron syncs each model chunk's
	// gradients as soon as that chunk's last microbatch is through its
	// backward (schedules.py, grad_sync_func per chunk): the chunks finish
	// one after another, each after a group of microbatches, so all but the
	// last chunk's reduction hide under the backward of the chunks after it
	// — a window of (vpp−1)/vpp of a group's backward beyond the last
	// microbatch's. The parameter gathers run ahead of each chunk's first
	// forward the same way (param_sync_func).
	//
	// Without overlap_p2p_comm every point-to-point transfer of the
	// pipeline ends in torch.cuda.synchronize() (batch_p2p_comm with
	// batch_p2p_sync, p2p_communication.py at d98e8a64; microbatchSyncs),
	// which waits for every stream of the device, the data-parallel
	// collectives' included. A chunk's reduction, launched bucket by bucket
	// in its last backward pass, must then be done by the transfer that
	// follows that pass, and a chunk's parameter gather by the one after
	// the forward pass it is issued ahead of: each hides under one pass of
	// its own chunk, and the step waits for the rest, v·(R/v − bwd/v) =
	// R − bwd, as without interleaving.
	win := 1.0
	if c.s.Parallel.OverlapsP2P() {
		win += float64(min(c.m, c.g)) * float64(c.vpp-1) / float64(c.vpp)
	}
	// The collectives of n buckets t long in all behind a pass of compute
	// that readies (or consumes) the buckets one after another.
	nb := math.Max(buckets, 1)
	behind := func(t, pass float64) float64 {
		return math.Max(t/nb, overlapped(t, win*pass-pass/nb))
	}
	if tr.OverlapGradReduce {
		grad = behind(grad, st.bwd)
	}
	if tr.OverlapParamGather {
		gather = behind(gather, st.fwd)
	}
	return grad + gather
}

// sortedAxes lists the axes of comms in a fixed order.
func sortedAxes(comms map[string]AxisComm) []string {
	rank := map[string]int{"tp": 0, "cp": 1, "pp": 2, "dp": 3, "ep": 4, "etp": 5, "edp": 6, "embd": 7}
	var out []string
	for k := range comms {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, oki := rank[out[i]]
		rj, okj := rank[out[j]]
		if oki != okj {
			return oki
		}
		if ri != rj {
			return ri < rj
		}
		return out[i] < out[j]
	})
	return out
}

// Axes lists the axes of an estimate's comms in a fixed, readable order.
func (e *Estimate) Axes() []string { return sortedAxes(e.Comms) }

// axisIdle reports an axis of size > 1 that moves nothing in this model
// (ep and etp on a dense model).
func (c *costModel) axisIdle(ax string) bool {
	return (ax == "ep" || ax == "etp") && c.sh.experts == 0
}
