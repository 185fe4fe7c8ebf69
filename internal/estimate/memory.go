package estimate

import (
	"fmt"
	"math"

	"parc.dev/parc/internal/spec"
)

// Sharding says how much of the model state the data-parallel ranks split.
type Sharding string

const (
	// ShardNone replicates weights, gradients and optimizer state (plain DDP).
	ShardNone Sharding = "none"
	// ShardOptimizer splits the optimizer state over the data-parallel ranks
	// (Megatron's distributed optimizer, ZeRO-1).
	ShardOptimizer Sharding = "optimizer"
	// ShardGrads splits gradients and optimizer state (ZeRO-2; Megatron-FSDP's
	// optim_grads, the Llama 3 paper's FSDP without resharding parameters).
	ShardGrads Sharding = "grads"
	// ShardFull splits weights, gradients and optimizer state (ZeRO-3 / FSDP;
	// Megatron-FSDP's optim_grads_params).
	ShardFull Sharding = "full"
)

// BytesPerParam is what mixed-precision Adam keeps per parameter.
type BytesPerParam struct {
	Weights   float64 `json:"weights"`
	Gradients float64 `json:"gradients"`
	Optimizer float64 `json:"optimizer"`
}

// Total is the bytes per parameter of the whole model state.
func (b BytesPerParam) Total() float64 { return b.Weights + b.Gradients + b.Optimizer }

// AdamBytes is Megatron's state per parameter for a precision: bf16/fp16/fp8
// training keeps 16-bit weights, fp32 main gradients, and fp32 master weights
// plus the two Adam moments (2 + 4 + 12 = 18 bytes, the β of
// theoretical_memory_usage.py); fp32 training keeps fp32 weights and
// gradients and the two moments (4 + 4 + 8).
func AdamBytes(precision string) BytesPerParam {
	if precision == "fp32" {
		return BytesPerParam{Weights: 4, Gradients: 4, Optimizer: 8}
	}
	return BytesPerParam{Weights: 2, Gradients: 4, Optimizer: 12}
}

// State is model state in bytes.
type State struct {
	Weights   float64 `json:"weights"`
	Gradients float64 `json:"gradients"`
	Optimizer float64 `json:"optimizer"`
}

// Total is the sum of the three.
func (s State) Total() float64 { return s.Weights + s.Gradients + s.Optimizer }

// StateBytes is the model state one GPU keeps for params parameters when the
// data-parallel group of the given size shards it as sh says.
func StateBytes(params float64, b BytesPerParam, sh Sharding, shards int) State {
	n := float64(max(shards, 1))
	st := State{Weights: params * b.Weights, Gradients: params * b.Gradients, Optimizer: params * b.Optimizer}
	switch sh {
	case ShardOptimizer:
		st.Optimizer /= n
	case ShardGrads:
		st.Gradients /= n
		st.Optimizer /= n
	case ShardFull:
		st.Weights /= n
		st.Gradients /= n
		st.Optimizer /= n
	}
	return st
}

// StateFloor is the least model state the GPUs of any plan of a spec keep
// together, whatever its degrees and pipeline split: every parameter once
// (the vocabulary unpadded, a tied output layer counted once), at the bytes
// per parameter the spec's settings keep (weights, gradients and the
// optimizer's share on the GPU: stateBytes). Each pipeline stage's GPUs
// keep the state of its parameters, split over tp, ep and the data-parallel
// group or replicated, never less than their share (memory), so the GPUs of
// a plan keep at least Bytes between them and its most loaded GPU at least
// Bytes over the world size (TestStateFloorBelowPlans).
type StateFloor struct {
	Params   float64
	PerParam float64 // bytes per parameter: weights, gradients, optimizer
}

// StateFloorOf is s's StateFloor. Megatron-FSDP changes the bytes
// (readSettings): the floor is of s's train.fsdp.
func StateFloorOf(s *spec.Spec) StateFloor {
	d := spec.Derive(s)
	d.PaddedVocab = s.Model.Vocab
	sh := newModelShape(s, d)
	return StateFloor{float64(sh.totalParams().Total()), readSettings(s).stateBytes(s.Train.Precision).Total()}
}

// Bytes is the floor's state in bytes.
func (f StateFloor) Bytes() float64 { return f.Params * f.PerParam }

// Nodes is the fewest nodes of gpusPerNode GPUs that can hold the floor
// with at most limit bytes on each GPU: on fewer no plan fits. ok is false
// when no cluster parc accepts (spec.MaxWorld GPUs) can.
func (f StateFloor) Nodes(gpusPerNode int, limit float64) (nodes int, ok bool) {
	per := limit * float64(gpusPerNode)
	if per <= 0 {
		return 1, true
	}
	n := math.Ceil(f.Bytes() / per)
	if n*float64(gpusPerNode) > spec.MaxWorld {
		return 0, false
	}
	return int(n), true
}

// Fits reports whether nodes nodes of gpusPerNode GPUs can hold the floor
// within limit bytes per GPU (Nodes).
func (f StateFloor) Fits(nodes, gpusPerNode int, limit float64) bool {
	need, ok := f.Nodes(gpusPerNode, limit)
	return ok && nodes >= need
}

// Note says, when nodes nodes of gpusPerNode GPUs cannot hold the floor
// within limit bytes per GPU (what names that limit: "the 80.00 GiB of
// the GPU"), that no plan fits and from how many nodes one can: "" when
// they can hold it (Fits).
func (f StateFloor) Note(nodes, gpusPerNode int, limit float64, what string) string {
	if f.Fits(nodes, gpusPerNode, limit) {
		return ""
	}
	need, ok := f.Nodes(gpusPerNode, limit)
	fewest := fmt.Sprintf("with these settings no plan fits on fewer than %d nodes (cluster.nodes, now %d)", need, nodes)
	if !ok {
		fewest = fmt.Sprintf("with these settings no plan fits on any cluster of up to %d GPUs (parc's limit)", spec.MaxWorld)
	}
	count := fmt.Sprintf("%.1f million", f.Params/1e6)
	switch {
	case f.Params >= 1e12:
		count = fmt.Sprintf("%.1f trillion", f.Params/1e12)
	case f.Params >= 1e9:
		count = fmt.Sprintf("%.1f billion", f.Params/1e9)
	}
	world := nodes * gpusPerNode
	return fmt.Sprintf("the weights, gradients and optimizer state alone, %s parameters at %g bytes each, need %s per GPU spread over all %d GPUs, more than %s, so %s",
		count, f.PerParam, GiB(int64(min(f.Bytes()/float64(world), math.MaxInt64/2))), world, what, fewest)
}

// activationModel sizes the activations one GPU stores for one microbatch,
// after Korthikanti et al. 2022 (§4, Table 2), generalised to the real shapes.
type activationModel struct {
	tokens                  float64 // s/cp · b: tokens of one microbatch on this GPU's sequence shard
	s                       float64 // s/cp
	h, q, kv, a, f, fe, fs  float64
	experts, topk, gated, v float64
	// budget scales the routed tokens an expert rank keeps for the backward
	// (RoutedBudget): 1, or the rank budget's factor.
	budget             float64
	t, etp, rep        float64 // rep = t with sequence parallelism, else 1
	fused              bool
	ab, gb             float64 // bytes per activation element, per saved GEMM input
	recompute          string
	method             string
	groupLayers        int
	dropout            bool            // hidden dropout > 0: a 1-byte mask per residual
	attnDropout        bool            // attention dropout > 0: unfused attention keeps a mask and the dropped probabilities
	teCrossEntropy     bool            // kernels.cross_entropy_loss_fusion with the "te" implementation
	nativeCrossEntropy bool            // kernels.cross_entropy_loss_fusion with the "native" implementation
	epOverlap          bool            // parallel.overlap_moe_expert_parallel_comm with ep > 1
	mla                bool            // multi-latent attention
	qlora, kvlora, pos float64         // MLA: q and kv down-projection widths, RoPE key width
	out                float64         // core-attention output width (heads·v_head_dim), the output projection's input
	modules            map[string]bool // recompute_modules with selective recompute
	localNorms         bool            // kernels.transformer_impl "local": every norm its own module
	perLayer           [2]float64      // layer(false), layer(true), computed once
	// Fine-grained activation offloading and the deferred output-layer
	// wgrad (offload.go).
	offload                       map[string]bool // train.offload_modules when fine-grained offloading is on
	offloadMin                    float64         // min_offloaded_tensor_size, elements
	offloadFraction, offloadDelta float64
	offPerLayer                   [2]float64 // fineOffloadLayer(false), (true)
	offGroups                     [2]int
	deferred                      float64 // output-layer wgrad buffers held at the last stage's peak
	fc1Original                   bool    // offloading expert_fc1 keeps fc1's 16-bit input, not its fp8 copy
}

func newActivationModel(s *spec.Spec, d spec.Derived, sh modelShape, fused bool, set settings) activationModel {
	p, tr := s.Parallel, s.Train
	cp := float64(max(p.CP, 1))
	am := activationModel{
		s: float64(tr.SeqLength) / cp, h: float64(sh.h), q: float64(sh.q), kv: float64(sh.kv),
		a: float64(sh.a), f: float64(sh.f), fe: float64(sh.fe), fs: float64(sh.fs),
		experts: float64(sh.experts), topk: float64(sh.topk), gated: float64(sh.gated),
		v: float64(sh.vocab), t: float64(max(p.TP, 1)), etp: float64(max(d.ETP, 1)), rep: 1,
		fused: fusedAttention(s, fused), ab: 2, gb: 2, recompute: tr.Recompute, method: tr.RecomputeMethod,
		groupLayers: 1, dropout: tr.HiddenDropout > 0, attnDropout: tr.AttentionDropout > 0, modules: map[string]bool{},
	}
	if tr.Recompute == "selective" {
		am.modules = set.recomputeModules
	}
	am.budget = RoutedBudget(s.Model.MoE)
	am.localNorms = s.Kernels.TransformerImpl == "local"
	am.teCrossEntropy = s.Kernels.CrossEntropyLossFusion && s.Kernels.CrossEntropyFusionImpl == "te"
	am.nativeCrossEntropy = s.Kernels.CrossEntropyLossFusion && !am.teCrossEntropy
	am.epOverlap = set.epOverlap && p.EP > 1
	am.tokens = am.s * float64(tr.MicroBatch)
	if d.SP {
		am.rep = am.t
	}
	switch tr.Precision {
	case "fp32":
		am.ab, am.gb = 4, 4
	case "fp8", "fp4":
		// Transformer Engine saves the quantized copy of a GEMM's input
		// (NVFP4's the columnwise one, for the weight gradient).
		am.gb = quantizedWidth(tr.Precision)
	}
	am.out = am.q
	if sh.mla != nil {
		ml := sh.mla
		am.q = float64(int64(ml.QKHeadDim+ml.QKPosEmbHeadDim) * sh.a)
		am.kv = float64(int64(ml.QKHeadDim+ml.QKPosEmbHeadDim+ml.VHeadDim)*sh.a) / 2
		am.mla, am.out = true, float64(int64(ml.VHeadDim)*sh.a)
		am.kvlora, am.pos = float64(ml.KVLoraRank), float64(ml.QKPosEmbHeadDim)
		if ml.QLoraRank != nil {
			am.qlora = float64(*ml.QLoraRank)
		}
	}
	if tr.RecomputeLayers != nil {
		am.groupLayers = max(*tr.RecomputeLayers, 1)
	}
	am.setOffload(s, d) // offload.go
	am.perLayer = [2]float64{am.layer(false), am.layer(true)}
	return am
}

// layerOf is layer(moe), computed once per plan.
func (am *activationModel) layerOf(moe bool) float64 {
	if moe {
		return am.perLayer[1]
	}
	return am.perLayer[0]
}

// fusedAttention reports whether attention runs in a fused kernel that keeps
// no s² probabilities: the estimate's assumption (Options.FusedAttention)
// unless kernels.attention_backend names an unfused one or the layers are
// Megatron's local implementation ("unfused": TE's
// UnfusedDotProductAttention, "local": Megatron's DotProductAttention;
// AttnBackend in megatron/core/transformer/enums.py); context parallelism
// always runs TE's fused attention.
func fusedAttention(s *spec.Spec, assume bool) bool {
	if s.Parallel.CP > 1 {
		return true
	}
	if s.Kernels.TransformerImpl == "local" {
		// The local layer spec takes core attention from LocalSpecProvider,
		// which is Megatron's DotProductAttention whatever the backend
		// (models/backends.py core_attention; gpt_builders.py
		// _get_transformer_layer_spec, get_gpt_layer_local_spec).
		return false
	}
	if !s.Train.FusedAttentionDtype() {
		return false // fp32: only Transformer Engine's unfused attention, whatever the backend asked for
	}
	switch s.Kernels.AttentionBackend {
	case "unfused", "local":
		return false
	case "flash", "fused":
		return true
	}
	return assume
}

// normOutput is a norm's output, saved by the GEMMs (or the recompute
// checkpoint) that read it, unless "layernorm" is recomputed and the norm is
// a module of its own: then TransformerLayer runs the norm under
// CheckpointWithoutOutput and frees its output after use
// (transformer_layer.py, recompute_input_layernorm /
// recompute_pre_mlp_layernorm, discard_output_and_register_recompute).
// TransformerLayer sets those only when the norm is not an IdentityOp
// (transformer_layer.py at d98e8a64, the "layernorm" branch of __init__);
// Transformer Engine's layer spec fuses the input norm into linear_qkv and
// a dense layer's pre-MLP norm into linear_fc1 (TELayerNormColumnParallelLinear;
// gpt_layer_specs.py: no input_layernorm, pre_mlp_layernorm IdentityOp
// without experts), and TE's LayerNormLinear keeps the normed input for its
// weight gradient. So "layernorm" frees the input norm's output only with
// MLA (its own input_layernorm) or the local implementation, and the
// pre-MLP norm's only in MoE layers or the local implementation.
func (am activationModel) normOutput(width float64, separate bool) float64 {
	if am.modules["layernorm"] && (separate || am.localNorms) {
		return 0
	}
	return width * am.tokens * am.h / am.rep
}

// attention is the self-attention block with its input norm (Korthikanti:
// 11sbh + 5as²b, plus 2sbh for the norm).
func (am activationModel) attention() float64 {
	T := am.tokens
	m := am.ab*T*am.h/am.rep + // norm input (the residual stream)
		am.normOutput(am.gb, am.mla) // QKV (or MLA down-projection) GEMM input
	if am.mla {
		// MultiLatentAttention.get_query_key_value_tensors: the down
		// projections' outputs before and after their norms (q_layernorm,
		// kv_layernorm; the up projections read the normed ones) and the
		// RoPE key, sequence-sharded like the residual stream.
		m += am.ab * T * (2*am.qlora + 2*am.kvlora + am.pos) / am.rep
		if !am.modules["mla_up_proj"] {
			// query, key and value, which core attention saves; with
			// "mla_up_proj" the up projections and RoPE run under
			// CheckpointWithoutOutput and their outputs are freed once core
			// attention has run (qkv_up_checkpoint.discard_output_and_register_recompute).
			m += am.ab * T * (am.q + 2*am.kv) / am.t
		}
	} else {
		m += am.ab * T * (am.q + 2*am.kv) / am.t // Q, K, V
	}
	m += am.gb * T * am.out / am.t // core-attention output, the output projection's input
	if am.dropout {
		m += T * am.h / am.rep // dropout mask (1 byte)
	}
	switch {
	case am.fused:
		m += 4 * T * am.a / am.t // fp32 softmax statistics of fused attention
	case am.recompute == "none" || !am.modules["core_attn"]:
		// The a·s²·b attention probabilities of unfused attention (TE's
		// UnfusedDotProductAttention, Megatron's local DotProductAttention):
		// the softmax output, and with attention dropout its mask and the
		// dropped probabilities (Korthikanti: 5as²b with dropout). Selective
		// recompute of "core_attn" keeps none of it.
		per := am.ab
		if am.attnDropout {
			per += 1 + am.ab
		}
		m += per * am.a / am.t * am.s * am.s * (T / am.s)
	}
	return m
}

// denseMLP is the MLP block with its input norm (Korthikanti: 19sbh + 2sbh).
func (am activationModel) denseMLP() float64 {
	T := am.tokens
	m := am.ab * T * am.h / am.rep // norm input
	if am.dropout {
		m += T * am.h / am.rep // dropout mask
	}
	if am.modules["mlp"] {
		// TransformerLayer wraps the dense MLP in tensor_parallel.checkpoint
		// (recompute_mlp): it keeps only its input. With Transformer
		// Engine's layer spec the pre-MLP norm is fused into linear_fc1
		// (pre_mlp_layernorm is an IdentityOp), so that input is the
		// residual stream counted above; with the local implementation it
		// is the norm's output.
		if am.localNorms {
			m += am.ab * T * am.h / am.rep
		}
		return m
	}
	return m + am.normOutput(am.gb, false) + // fc1 input
		am.ab*T*am.f*am.gated/am.t + // activation-function input
		am.gb*T*am.f/am.t // fc2 input
}

// moeMLP is an MoE block: norm, router, the routed tokens this GPU's experts
// process (T·k·etp/t on average with balanced routing) and the shared expert.
func (am activationModel) moeMLP() float64 {
	T := am.tokens
	routed := T * am.topk * am.etp / am.t * am.budget
	m := am.ab * T * am.h / am.rep // norm input
	if am.dropout {
		m += T * am.h / am.rep // dropout mask
	}
	// The norm's output: the router's, the dispatcher's and the shared
	// expert's input, or the input the "moe" checkpoint keeps.
	m += am.normOutput(am.ab, true)
	if am.modules["moe"] {
		// MoELayer.forward runs route, dispatch, experts and combine under
		// tensor_parallel.checkpoint (moe_layer_recompute).
		return m
	}
	m += 8*T*am.experts/am.rep + // fp32 router logits and probabilities
		routed*(am.fc1InputBytes()*am.h+am.ab*am.fe*am.gated/am.etp+am.ab*am.h) // fc1 input, activation input, unpermute input
	if !am.modules["moe_act"] {
		m += routed * am.gb * am.fe / am.etp // fc2 input (the activation's output)
	}
	if am.fs > 0 && !am.modules["shared_experts"] {
		m += am.ab*T*am.fs*am.gated/am.t + am.gb*T*am.fs/am.t
	}
	return m
}

// RoutedBudget is how many times its balanced share of routed tokens an
// expert rank keeps for the backward. With a rank budget
// (spec.MoE.RankBudget) HybridEP hands the experts num_permuted_tokens =
// tokens · topk · factor rows (_HybridEPManager.setup_metadata at d98e8a64),
// and the experts save their inputs at that size; the paged stash
// (model.moe.paged_stash, megatron/core/transformer/moe/paged_stash.py)
// copies the saved tensors into pages of their real size instead, in
// buffers of the average (a positive paged_stash_buffer_size_factor_cuda) or
// the largest count (a negative one) times the factor's size
// (PagedStashManager.allocate_stash_buffers at d98e8a64); with routing
// balanced the two counts are alike.
func RoutedBudget(e *spec.MoE) float64 {
	switch {
	case !e.RankBudget():
		return 1
	case e.PagedStash:
		return math.Abs(e.PagedStashBufferFactor())
	}
	return *e.ExpertRankCapacityFactor
}

// layer is a decoder layer's activations with nothing recomputed.
func (am activationModel) layer(moe bool) float64 {
	if moe {
		return am.attention() + am.moeMLP()
	}
	return am.attention() + am.denseMLP()
}

// checkpoint is what full recompute keeps of a layer group: its input.
func (am activationModel) checkpoint() float64 { return am.ab * am.tokens * am.h / am.rep }

// embedding is the first stage's input: token ids (8 bytes each, as
// Megatron counts them) and the embedding dropout mask.
func (am activationModel) embedding() float64 {
	m := 8 * am.tokens
	if am.dropout {
		m += am.tokens * am.h / am.rep
	}
	return m
}

// logits is the last stage's output layer at its peak: final-norm input,
// output-layer input and the logits. Megatron's vocab_parallel_cross_entropy
// (tensor_parallel/cross_entropy.py; the "native" fused one alike) copies
// the 16-bit logits to fp32 and keeps the fp32 softmax for the backward,
// which turns it into the gradient in place and casts it back to 16 bits:
// 2 + 4 bytes per logit are alive at once, forward and backward. The
// "native" fused one (fusions/fused_cross_entropy.py) runs the same steps
// under jit_fuser, which is torch.compile (core/jit.py): the compiled
// calculate_gradients cannot update the saved fp32 softmax in place (an
// input mutation), so it writes the fp32 gradient to a new tensor before the
// 16-bit cast: 4 + 4 + 2 bytes per logit in the backward. TE's fused cross
// entropy (cross_entropy_fusion_impl "te") writes the gradient into the
// 16-bit logits themselves.
func (am activationModel) logits() float64 {
	perLogit := am.ab + 4
	switch {
	case am.teCrossEntropy:
		perLogit = am.ab
	case am.nativeCrossEntropy:
		perLogit = am.ab + 8
	}
	return am.ab*am.tokens*am.h/am.rep + am.gb*am.tokens*am.h/am.rep + perLogit*am.tokens*am.v/am.t
}

// savedLogits is what one more output layer and loss keep until their
// backward while another loss's peak is reached: the final-norm and
// output-layer inputs and the softmax the loss saves (fp32 in Megatron's
// cross entropy, fused or not: ctx.save_for_backward(exp_logits, ...); TE's
// fused one saves the 16-bit logits that become the gradient).
func (am activationModel) savedLogits() float64 {
	per := 4.0
	if am.teCrossEntropy {
		per = am.ab
	}
	return am.ab*am.tokens*am.h/am.rep + am.gb*am.tokens*am.h/am.rep + per*am.tokens*am.v/am.t
}

// StageActivations is a stage's activation memory, by part.
type StageActivations struct {
	Layers    float64 `json:"layers"`
	Embedding float64 `json:"embedding"`
	Logits    float64 `json:"logits"`
	Recompute float64 `json:"recompute"` // the group full recompute rematerialises
	// Offloaded is what fine-grained activation offloading holds in host
	// memory at the peak (not part of Total).
	Offloaded float64 `json:"offloaded,omitempty"`
	// DeferredWgrad is the part of Logits the deferred output-layer wgrad
	// buffers take (parallel.defer_embedding_wgrad_compute).
	DeferredWgrad float64 `json:"deferred_wgrad,omitempty"`
}

// Total is the sum of the parts.
func (a StageActivations) Total() float64 { return a.Layers + a.Embedding + a.Logits + a.Recompute }

// chunkStored is what one microbatch of a model chunk keeps between its
// forward and its backward (stored), and the most that full recomputation
// rematerialises of it at once (transient).
func (am *activationModel) chunkStored(sh modelShape, chunk spec.LayerRange) (stored, transient float64) {
	switch am.recompute {
	case "full":
		N := am.groupLayers
		if am.method == "block" {
			k := min(N, chunk.Count)
			for i := range chunk.Count {
				l := chunk.First + i
				if i < k {
					stored += am.checkpoint()
					transient = math.Max(transient, am.layerOf(sh.isMoE(l)))
				} else {
					stored += am.layerOf(sh.isMoE(l))
				}
			}
		} else {
			for g := 0; g < chunk.Count; g += N {
				stored += am.checkpoint()
				var group float64
				for l := chunk.First + g; l < chunk.First+min(g+N, chunk.Count); l++ {
					group += am.layerOf(sh.isMoE(l))
				}
				transient = math.Max(transient, group)
			}
		}
	default:
		for l := chunk.First; l < chunk.First+chunk.Count; l++ {
			stored += am.layerOf(sh.isMoE(l))
		}
		moved, _ := am.chunkFineOffloaded(sh, chunk) // offload.go
		stored -= moved
	}
	return stored, transient
}

// chunkWeights is what one microbatch of each of rank r's model chunks
// keeps alive: its layers' stored activations, and on the first rank's
// first chunk the embedding's.
func (am *activationModel) chunkWeights(sh modelShape, stages [][]spec.LayerRange, r int) []float64 {
	w := make([]float64, len(stages[r]))
	for c, chunk := range stages[r] {
		w[c], _ = am.chunkStored(sh, chunk)
	}
	if r == 0 && len(w) > 0 {
		w[0] += am.embedding()
	}
	if r == len(stages)-1 && len(w) > 1 {
		// The loss runs in the last chunk: its peak is there only while a
		// microbatch of that chunk is alive (stageActivations).
		w[len(w)-1] += am.loss(sh)
	}
	return w
}

// loss is the last stage's output layer and loss at their peak, with the
// MTP layers' (each keeps its inputs, a decoder layer, and its own output
// layer and loss, of which only the saved softmax stays while another loss
// peaks).
func (am *activationModel) loss(sh modelShape) float64 {
	out := am.logits()
	if sh.mtp > 0 {
		// Each MTP layer (multi_token_prediction.py,
		// MultiTokenPredictionLayer): enorm and hnorm keep their inputs
		// (the shifted tokens' embedding and the hidden states), eh_proj
		// its 2h-wide concatenated input; then a decoder layer like the
		// last one and its own output layer and loss, whose saved
		// softmax stays while the main loss (or the next) peaks: one
		// loss at its peak, the others at what they save.
		moe := sh.isMoE(int(sh.layers) - 1)
		out += float64(sh.mtp) * (4*am.ab*am.tokens*am.h/am.rep + am.layerResident(moe) + am.savedLogits())
	}
	return out
}

// stageActivations is rank r's peak activation memory; inFlight[c] is the
// number of microbatches of chunk c alive at the peak.
func (am *activationModel) stageActivations(sh modelShape, stages [][]spec.LayerRange, r int, inFlight []int) StageActivations {
	var out StageActivations
	var epAhead, margin float64
	for c, chunk := range stages[r] {
		n := float64(inFlight[c])
		if n == 0 || chunk.Count == 0 {
			continue
		}
		stored, transient := am.chunkStored(sh, chunk)
		out.Layers += n * stored
		if moved, layerMax := am.chunkFineOffloaded(sh, chunk); moved > 0 {
			// Pipeline rank r keeps r·delta bytes of each chunk on the GPU;
			// one group per module name stays there (the offload margin:
			// about one layer's).
			kept := math.Min(float64(r)*am.offloadDelta, moved)
			out.Layers += n * kept
			out.Offloaded += n * (moved - kept)
			margin = math.Max(margin, math.Min(layerMax, moved-kept))
		}
		out.Recompute = math.Max(out.Recompute, transient)
		if am.epOverlap && chunk.Count > 0 {
			// Expert-parallel overlap runs the forward of one microbatch
			// layer by layer beside the backward of another (combined_1f1b.py;
			// schedules.py adds the one warm-up forward this needs, which
			// takes the place of 1F1B's own steady-state forward): the
			// forward runs a layer ahead of the backward that frees one.
			for l := chunk.First; l < chunk.First+chunk.Count; l++ {
				epAhead = math.Max(epAhead, am.layerResident(sh.isMoE(l))) // offload.go
			}
		}
	}
	out.Layers += epAhead + margin
	out.Offloaded -= margin
	if r == 0 {
		out.Embedding = float64(inFlight[0]) * am.embedding()
	}
	if r == len(stages)-1 && (len(stages[r]) < 2 || inFlight[len(stages[r])-1] > 0) {
		// With virtual stages the loss is in the last chunk, and the
		// interleaved schedule's peak (peakInFlight, which weighs that
		// chunk with the loss) can be where none of its microbatches is
		// alive: then no logits exist. Megatron runs a microbatch's loss
		// backward right after its forward on the last rank, so one loss
		// is at its peak at a time.
		out.DeferredWgrad = am.deferredWgradBuffers() // offload.go
		out.Logits = am.loss(sh) + out.DeferredWgrad
	}
	return out
}
