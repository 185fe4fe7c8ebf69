package spec

// Spec is the typed view of a user's plan after it was unified with #Plan and
// found concrete: every default of the schema is filled in. Optional fields the
// schema leaves without a default are pointers (nil = not given); the values
// Megatron derives from them live in Derived, computed by Resolve.
type Spec struct {
	Model      Model       `json:"model"`
	Cluster    Cluster     `json:"cluster"`
	Parallel   Parallel    `json:"parallel"`
	Train      Train       `json:"train"`
	Data       Data        `json:"data"`
	Kernels    Kernels     `json:"kernels"`
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	Logging    Logging     `json:"logging"`
	Launch     Launch      `json:"launch"`
	Solve      *Solve      `json:"solve,omitempty"`
}

// Solve holds parc solve's settings (schema #Solve).
type Solve struct {
	MemoryHeadroom *float64 `json:"memory_headroom,omitempty"`
}

type Model struct {
	Name                              string   `json:"name"`
	Layers                            int      `json:"layers"`
	Hidden                            int      `json:"hidden"`
	FFNHidden                         *int     `json:"ffn_hidden,omitempty"`
	Heads                             int      `json:"heads"`
	QueryGroups                       *int     `json:"query_groups,omitempty"`
	KVChannels                        *int     `json:"kv_channels,omitempty"`
	Vocab                             int      `json:"vocab"`
	MakeVocabDivisibleBy              int      `json:"make_vocab_divisible_by"`
	MaxPositionEmbeddings             *int     `json:"max_position_embeddings,omitempty"`
	Activation                        string   `json:"activation"`                            // "gelu" | "swiglu" | "squared_relu" | "quick_geglu"
	GLULinearOffset                   float64  `json:"glu_linear_offset"`                     // --glu-linear-offset
	ActivationFuncClampValue          *float64 `json:"activation_func_clamp_value,omitempty"` // --activation-func-clamp-value
	Normalization                     string   `json:"normalization"`                         // "layernorm" | "rmsnorm"
	NormEpsilon                       float64  `json:"norm_epsilon"`
	PositionEmbedding                 string   `json:"position_embedding"` // "learned_absolute" | "rope" | "none"
	RotaryBase                        int      `json:"rotary_base"`
	RotaryPercent                     float64  `json:"rotary_percent"`
	RopeScalingFactor                 *float64 `json:"rope_scaling_factor,omitempty"`
	RopeType                          *string  `json:"rope_type,omitempty"`                             // --rope-type
	RotaryScalingFactor               *float64 `json:"rotary_scaling_factor,omitempty"`                 // --rotary-scaling-factor
	Mscale                            float64  `json:"mscale"`                                          // --mscale
	MscaleAllDim                      float64  `json:"mscale_all_dim"`                                  // --mscale-all-dim
	YarnOriginalMaxPositionEmbeddings *int     `json:"yarn_original_max_position_embeddings,omitempty"` // --yarn-original-max-position-embeddings
	YarnBetaFast                      *float64 `json:"yarn_beta_fast,omitempty"`                        // --yarn-beta-fast
	YarnBetaSlow                      *float64 `json:"yarn_beta_slow,omitempty"`                        // --yarn-beta-slow
	ApplyLayernorm1p                  bool     `json:"apply_layernorm_1p"`                              // --apply-layernorm-1p
	TieEmbeddings                     bool     `json:"tie_embeddings"`
	Bias                              bool     `json:"bias"`
	QKVBias                           bool     `json:"qkv_bias"`
	QKLayernorm                       bool     `json:"qk_layernorm"`
	WindowSize                        []int    `json:"window_size,omitempty"`           // --window-size
	WindowAttnSkipFreq                *int     `json:"window_attn_skip_freq,omitempty"` // --window-attn-skip-freq
	SoftmaxType                       string   `json:"softmax_type"`                    // --softmax-type
	MLA                               *MLA     `json:"mla,omitempty"`
	MoE                               *MoE     `json:"moe,omitempty"`
	MTPLayers                         int      `json:"mtp_layers"`
}

// GatedMLP reports whether the MLP is a gated linear unit (swiglu,
// quick_geglu): FC1 projects to two ffn_hidden-wide halves, one gating the
// other (Megatron's gated_linear_unit; argument_utils.py
// core_transformer_config_from_args at d98e8a64 sets it for --swiglu and
// --quick-geglu).
func (m *Model) GatedMLP() bool { return m.Activation == "swiglu" || m.Activation == "quick_geglu" }

// WindowedLayer reports whether decoder layer l (0-based) uses sliding-window
// attention: Megatron's is_layer_window_attention (megatron/core/transformer/
// utils.py at d98e8a64) with 1-based layer numbers, windowed unless
// window_attn_skip_freq divides the number.
func (m *Model) WindowedLayer(l int) bool {
	if len(m.WindowSize) == 0 {
		return false
	}
	if m.WindowAttnSkipFreq == nil {
		return true
	}
	return (l+1)%*m.WindowAttnSkipFreq != 0
}

// WindowedLayers is the number of decoder layers with sliding-window
// attention (WindowedLayer).
func (m *Model) WindowedLayers() int {
	n := 0
	for l := range m.Layers {
		if m.WindowedLayer(l) {
			n++
		}
	}
	return n
}

// RopeFusionApplies reports whether Megatron applies rotary embeddings with
// Transformer Engine's fused kernel when kernels.apply_rope_fusion asks for
// it. It does not for YaRN with a concentration factor (attention factor,
// "mscale") other than 1 outside multi-latent attention: the factor scales
// the cosines and sines, which TE's fused RoPE cannot, so apply_rotary_pos_emb
// warns "mscale=... is not supported by TE's fused RoPE. Using unfused
// implementation." (models/common/embeddings/rope_utils.py at d98e8a64, since
// Megatron-LM 987395813b "Fixes for gpt-oss", core_v0.16.0). The factor is
// _yarn_get_concentration_factor of --rotary-scaling-factor, --mscale and
// --mscale-all-dim (yarn_rotary_pos_embedding.py; argument_utils.py copies the
// three into yarn_rotary_scaling_factor, yarn_mscale, yarn_mscale_all_dim):
// g(s, mscale)/g(s, mscale_all_dim) with g(s, m) = 0.1·m·ln(s) + 1 for s > 1,
// else 1: 1 exactly where the factor s is at most 1 or the two mscales are
// equal. GPT-OSS (factor 32, mscale 1, mscale_all_dim 0) has 1.347 and so
// runs unfused RoPE; DeepSeek-V3's and Kimi K2's equal mscales give 1, and
// their multi-latent attention rotates through its own kernels anyway.
func (m *Model) RopeFusionApplies() bool {
	if m.PositionEmbedding != "yarn" || m.MLA != nil || m.RotaryScalingFactor == nil {
		return true
	}
	return *m.RotaryScalingFactor <= 1 || m.Mscale == m.MscaleAllDim
}

// MLA is multi-latent attention (DeepSeek-V2/V3).
type MLA struct {
	QLoraRank       *int `json:"q_lora_rank,omitempty"`
	KVLoraRank      int  `json:"kv_lora_rank"`
	QKHeadDim       int  `json:"qk_head_dim"`
	QKPosEmbHeadDim int  `json:"qk_pos_emb_head_dim"`
	VHeadDim        int  `json:"v_head_dim"`
}

// UnboundedRouting reports an MoE whose experts' loads nothing keeps even:
// no load-balancing loss (router_load_balancing "none"), no aux-loss-free
// expert bias, no forced balancing, and no per-expert capacity that drops
// the excess (capacity_factor). Routing then drifts to a few experts and the
// GPU holding the busiest ones sets every step's pace (Megatron's MoE
// layers wait for the slowest rank of the expert-parallel all-to-all), which
// a step time of balanced experts does not show. A per-rank budget
// (expert_rank_capacity_factor) balances nothing: it only caps the busiest
// rank at that many times its share (MLPerf Training v6.0's GPT-OSS 20B
// runs, no balancing loss and a budget of 5 and 7).
func (e *MoE) UnboundedRouting() bool {
	return e != nil && e.RouterLoadBalancing == "none" && !e.ExpertBias && !e.RouterForceLoadBalancing &&
		e.CapacityFactor == nil
}

type MoE struct {
	Experts                  int      `json:"experts"`
	TopK                     int      `json:"topk"`
	FFNHidden                *int     `json:"ffn_hidden,omitempty"`
	SharedFFNHidden          int      `json:"shared_ffn_hidden"`
	LayerFreq                int      `json:"layer_freq"`
	DenseLayers              int      `json:"dense_layers"`
	Dispatcher               string   `json:"dispatcher"`
	GroupedGEMM              bool     `json:"grouped_gemm"`
	RouterLoadBalancing      string   `json:"router_load_balancing"`
	AuxLossCoeff             float64  `json:"aux_loss_coeff"`
	ScoreFunction            string   `json:"score_function"`
	RouterPreSoftmax         bool     `json:"router_pre_softmax"`
	ExpertBias               bool     `json:"expert_bias"`
	CapacityFactor           *float64 `json:"capacity_factor,omitempty"`
	PadExpertInputToCapacity bool     `json:"pad_expert_input_to_capacity"` // --moe-pad-expert-input-to-capacity
	RouterDtype              *string  `json:"router_dtype,omitempty"`
	RouterNumGroups          *int     `json:"router_num_groups,omitempty"`          // --moe-router-num-groups
	RouterGroupTopK          *int     `json:"router_group_topk,omitempty"`          // --moe-router-group-topk
	RouterTopKScalingFactor  *float64 `json:"router_topk_scaling_factor,omitempty"` // --moe-router-topk-scaling-factor
	RouterBiasUpdateRate     float64  `json:"router_bias_update_rate"`              // --moe-router-bias-update-rate
	RouterForceLoadBalancing bool     `json:"router_force_load_balancing"`          // --moe-router-force-load-balancing
	// RouterPaddingForQuantization is --moe-router-padding-for-quantization:
	// the routing map padded to the quantized recipe's alignment per expert.
	RouterPaddingForQuantization bool   `json:"router_padding_for_quantization"`
	FlexDispatcherBackend        string `json:"flex_dispatcher_backend"` // --moe-flex-dispatcher-backend
	SharedExpertOverlap          bool   `json:"shared_expert_overlap"`   // --moe-shared-expert-overlap
	// ExpertRankCapacityFactor is --moe-expert-rank-capacity-factor: the
	// HybridEP/NCCL-EP receive budget per expert rank, in units of its
	// balanced share (static dispatch shapes, no host synchronisation).
	ExpertRankCapacityFactor *float64 `json:"expert_rank_capacity_factor,omitempty"`
	PagedStash               bool     `json:"paged_stash"` // --moe-paged-stash
	// PagedStashBufferSizeFactorCUDA is
	// --moe-paged-stash-buffer-size-factor-cuda: the stash's GPU buffers
	// hold this many times the average routed tokens (negative: times the
	// largest count seen; Megatron's default 1.10).
	PagedStashBufferSizeFactorCUDA float64 `json:"paged_stash_buffer_size_factor_cuda"`
}

// MegatronPagedStashBufferFactor is Megatron's default
// --moe-paged-stash-buffer-size-factor-cuda (1.1 at d98e8a64; the schema's
// default too).
const MegatronPagedStashBufferFactor = 1.1

// PagedStashBufferFactor is the paged stash's GPU buffer factor, Megatron's
// default where the spec leaves it 0 (a spec built in Go without the
// schema's defaults).
func (e *MoE) PagedStashBufferFactor() float64 {
	if e.PagedStashBufferSizeFactorCUDA == 0 {
		return MegatronPagedStashBufferFactor
	}
	return e.PagedStashBufferSizeFactorCUDA
}

// FlexBackend is the flex dispatcher's backend, Megatron's default
// (--moe-flex-dispatcher-backend deepep) where the spec leaves it empty (a
// spec built in Go without the schema's defaults).
func (e *MoE) FlexBackend() string {
	if e.FlexDispatcherBackend == "" {
		return "deepep"
	}
	return e.FlexDispatcherBackend
}

// FlexWith reports that the MoE layers dispatch through the flex
// dispatcher with the given backend.
func (e *MoE) FlexWith(backend string) bool {
	return e != nil && e.Dispatcher == "flex" && e.FlexBackend() == backend
}

// BudgetBackend reports that the flex dispatcher's backend takes a rank
// budget: TransformerConfig at d98e8a64 asserts
// "moe_expert_rank_capacity_factor requires moe_flex_dispatcher_backend to
// be 'hybridep' or 'ncclep'", whatever the dispatcher type.
func (e *MoE) BudgetBackend() bool {
	b := e.FlexBackend()
	return b == "hybridep" || b == "ncclep"
}

// RankBudget reports that every expert rank receives a fixed budget of
// routed tokens (expert_rank_capacity_factor with the flex dispatcher's
// hybridep or ncclep backend): Megatron-LM at d98e8a64, token_dispatcher.py,
// _HybridEPManager.setup_metadata sizes num_permuted_tokens as tokens ·
// topk · factor (else "HybridEP sizes buffers dynamically (CPU sync in
// dispatch)"), and the NCCL-EP manager's static mode ("set for static
// shapes (fixed receive buffer, CUDA-graph capturable)").
func (e *MoE) RankBudget() bool {
	return e != nil && e.ExpertRankCapacityFactor != nil && e.Dispatcher == "flex" && e.BudgetBackend()
}

// StaticDispatch reports that the MoE layers' token dispatch has sizes the
// host knows without copying counts from the GPU, so the forward makes no
// device-to-host synchronisation and a CUDA graph can capture it: a rank
// budget (RankBudget), or expert inputs padded to capacity (a capacity
// factor with pad_expert_input_to_capacity) with a dispatcher whose padded
// path knows every size on the host. Megatron-LM at d98e8a64,
// token_dispatcher.py:
//
//   - alltoall (MoEAlltoAllTokenDispatcher): preprocess returns the capacity
//     (get_capacity of the tokens, topk and experts, a host number) before
//     any sync point is set, so cuda_sync_point stays "no_sync", and
//     _maybe_dtoh_and_synchronize copies and synchronises only
//     "if not self.drop_and_pad";
//   - flex with hybridep (_HybridEPManager.setup_metadata): "In drop_and_pad
//     mode, the number of tokens after the permute op can be computed on the
//     CPU" (num_permuted_tokens and tokens_per_expert from the capacity), so
//     dispatch skips the tokens_per_expert.sum() sync.
//
// The allgather dispatcher copies its local token counts to the host
// (dispatch_postprocess: .cpu(), then .item()) padded or not; the flex
// dispatcher's deepep backend rejects padding and ncclep a capacity factor
// (TransformerConfig, _NCCLEPManager).
func (e *MoE) StaticDispatch() bool {
	if e == nil {
		return false
	}
	padded := e.PadExpertInputToCapacity && e.CapacityFactor != nil &&
		(e.Dispatcher == "alltoall" || e.FlexWith("hybridep"))
	return padded || e.RankBudget()
}

type Cluster struct {
	Name         string            `json:"name"`
	Nodes        int               `json:"nodes"`
	GPUsPerNode  int               `json:"gpus_per_node"`
	NVLinkDomain int               `json:"nvlink_domain"`
	GPU          GPU               `json:"gpu"`
	NVLinkGBps   float64           `json:"nvlink_gbps"`
	NetworkGBps  float64           `json:"network_gbps"`
	HostLinkGBps *float64          `json:"host_link_gbps,omitempty"` // GPU ↔ host memory, one direction
	CPUsPerNode  *int              `json:"cpus_per_node,omitempty"`
	Env          map[string]string `json:"env"`
	Slurm        *Slurm            `json:"slurm,omitempty"`
}

type GPU struct {
	Name              string  `json:"name"`
	MemoryGiB         float64 `json:"memory_gib"`
	BF16TFLOPs        float64 `json:"bf16_tflops"`
	FP8TFLOPs         float64 `json:"fp8_tflops,omitempty"` // 0 = not given
	FP4TFLOPs         float64 `json:"fp4_tflops,omitempty"` // 0 = not given
	HBMGBps           float64 `json:"hbm_gbps,omitempty"`   // 0 = not given
	SMCount           int     `json:"sm_count,omitempty"`   // 0 = not given
	ExpTOPS           float64 `json:"exp_tops,omitempty"`   // 0 = not given
	TDPWatts          float64 `json:"tdp_watts,omitempty"`  // 0 = not given
	ComputeCapability float64 `json:"compute_capability"`
}

// Bytes is the GPU's memory in bytes (memory_gib GiB).
func (g GPU) Bytes() int64 { return int64(g.MemoryGiB * (1 << 30)) }

type Slurm struct {
	JobName              *string  `json:"job_name,omitempty"`
	Partition            *string  `json:"partition,omitempty"`
	Account              *string  `json:"account,omitempty"`
	QOS                  *string  `json:"qos,omitempty"`
	Time                 *string  `json:"time,omitempty"`
	Constraint           *string  `json:"constraint,omitempty"`
	Reservation          *string  `json:"reservation,omitempty"`
	Exclusive            bool     `json:"exclusive"`
	CPUsPerTask          *int     `json:"cpus_per_task,omitempty"`
	Mem                  *string  `json:"mem,omitempty"`
	Output               *string  `json:"output,omitempty"`
	Error                *string  `json:"error,omitempty"`
	Requeue              bool     `json:"requeue"`
	Dependency           *string  `json:"dependency,omitempty"`
	PreemptSignalSeconds *int     `json:"preempt_signal_seconds,omitempty"`
	Segment              *int     `json:"segment,omitempty"`
	Extra                []string `json:"extra"`
}

type Parallel struct {
	TP                            int     `json:"tp"`
	PP                            int     `json:"pp"`
	VPP                           int     `json:"vpp"`
	CP                            int     `json:"cp"`
	EP                            int     `json:"ep"`
	ETP                           *int    `json:"etp,omitempty"`
	DP                            *int    `json:"dp,omitempty"`
	SP                            *bool   `json:"sp,omitempty"`
	Order                         string  `json:"order"`
	FirstStageLayers              *int    `json:"first_stage_layers,omitempty"`
	LastStageLayers               *int    `json:"last_stage_layers,omitempty"`
	Layout                        *string `json:"layout,omitempty"` // --pipeline-model-parallel-layout
	AccountForEmbedding           bool    `json:"account_for_embedding"`
	AccountForLoss                bool    `json:"account_for_loss"`
	MicrobatchGroupSize           *int    `json:"microbatch_group_size,omitempty"`
	TPCommOverlap                 *bool   `json:"tp_comm_overlap,omitempty"`        // --tp-comm-overlap; nil: TPCommOverlapOn's default
	TPCommOverlapCfg              *string `json:"tp_comm_overlap_cfg,omitempty"`    // --tp-comm-overlap-cfg
	OverlapMoEExpertParallelComm  bool    `json:"overlap_moe_expert_parallel_comm"` // --overlap-moe-expert-parallel-comm
	DelayWgradCompute             bool    `json:"delay_wgrad_compute"`              // --delay-wgrad-compute
	DeferEmbeddingWgradCompute    bool    `json:"defer_embedding_wgrad_compute"`    // --defer-embedding-wgrad-compute
	WgradDeferralLimit            int     `json:"wgrad_deferral_limit"`             // --wgrad-deferral-limit (0: every microbatch)
	OverlapP2P                    bool    `json:"overlap_p2p"`
	CPCommType                    string  `json:"cp_comm_type"`
	HierarchicalCP                []int   `json:"hierarchical_cp,omitempty"`
	DistributedOptimizerInstances int     `json:"distributed_optimizer_instances"`
}

type Train struct {
	SeqLength       int    `json:"seq_length"`
	MicroBatch      int    `json:"micro_batch"`
	GlobalBatch     int    `json:"global_batch"`
	Precision       string `json:"precision"` // fp32 | bf16 | fp16 | fp8 | fp4
	FP8Format       string `json:"fp8_format"`
	FP8Base         string `json:"fp8_base"` // precision fp8: bf16 | fp16 | fp32 around the FP8 GEMMs
	FP8Recipe       string `json:"fp8_recipe"`
	FP4Recipe       string `json:"fp4_recipe"` // precision fp4: nvfp4
	Recompute       string `json:"recompute"`  // none | selective | full
	RecomputeMethod string `json:"recompute_method"`
	RecomputeLayers *int   `json:"recompute_layers,omitempty"`
	// RecomputeModules is --recompute-modules; nil means Megatron's default
	// ["core_attn"] (see RecomputeModuleList).
	RecomputeModules       []string `json:"recompute_modules,omitempty"`
	FP8AmaxHistoryLen      int      `json:"fp8_amax_history_len"`      // --fp8-amax-history-len
	FP8AmaxComputeAlgo     string   `json:"fp8_amax_compute_algo"`     // --fp8-amax-compute-algo
	FP8Margin              int      `json:"fp8_margin"`                // --fp8-margin
	CPUOffloadingNumLayers int      `json:"cpu_offloading_num_layers"` // --cpu-offloading-num-layers
	// Fine-grained activation offloading (--fine-grained-activation-offloading
	// and its options); OffloadModules is --offload-modules.
	FineGrainedActivationOffloading     bool     `json:"fine_grained_activation_offloading"`
	OffloadModules                      []string `json:"offload_modules,omitempty"`
	MinOffloadedTensorSize              int64    `json:"min_offloaded_tensor_size"`                               // --min-offloaded-tensor-size (elements)
	ActivationOffloadFraction           float64  `json:"activation_offload_fraction"`                             // --activation-offload-fraction
	DeltaOffloadBytesAcrossPPRanks      int64    `json:"delta_offload_bytes_across_pp_ranks"`                     // --delta-offload-bytes-across-pp-ranks
	FineGrainedOffloadingMaxInflight    *int     `json:"fine_grained_offloading_max_inflight_offloads,omitempty"` // --fine-grained-offloading-max-inflight-offloads
	DelayOffloadUntilCUDAGraph          bool     `json:"delay_offload_until_cuda_graph"`                          // --delay-offload-until-cuda-graph
	FP8ParamGather                      bool     `json:"fp8_param_gather"`                                        // --fp8-param-gather
	FP4ParamGather                      bool     `json:"fp4_param_gather"`                                        // --fp4-param-gather
	GradReduceInBF16                    bool     `json:"grad_reduce_in_bf16"`                                     // --grad-reduce-in-bf16
	PrecisionAwareOptim                 bool     `json:"precision_aware_optimizer"`                               // --use-precision-aware-optimizer
	MainGradsDtype                      string   `json:"main_grads_dtype"`                                        // --main-grads-dtype
	MainParamsDtype                     string   `json:"main_params_dtype"`                                       // --main-params-dtype
	ExpAvgDtype                         string   `json:"exp_avg_dtype"`                                           // --exp-avg-dtype
	ExpAvgSqDtype                       string   `json:"exp_avg_sq_dtype"`                                        // --exp-avg-sq-dtype
	OptimizerCPUOffload                 bool     `json:"optimizer_cpu_offload"`                                   // --optimizer-cpu-offload
	OptimizerOffloadFraction            float64  `json:"optimizer_offload_fraction"`                              // --optimizer-offload-fraction
	OverlapCPUOptimizerD2HH2D           bool     `json:"overlap_cpu_optimizer_d2h_h2d"`                           // --overlap-cpu-optimizer-d2h-h2d
	Optimizer                           string   `json:"optimizer"`                                               // --optimizer: adam, sgd or muon
	MuonTPMode                          string   `json:"muon_tp_mode"`                                            // --muon-tp-mode: duplicated, blockwise or distributed
	LayerWiseParamLayout                bool     `json:"layer_wise_param_layout"`                                 // --no-use-layer-wise-param-layout when false
	DistributedOptimizer                bool     `json:"distributed_optimizer"`
	OverlapParamGatherWithOptimizerStep bool     `json:"overlap_param_gather_with_optimizer_step"` // --overlap-param-gather-with-optimizer-step
	FSDP                                bool     `json:"fsdp"`
	// Megatron-FSDP options.
	DataParallelShardingStrategy string   `json:"data_parallel_sharding_strategy"` // --data-parallel-sharding-strategy
	FSDPDoubleBuffer             bool     `json:"fsdp_double_buffer"`              // --fsdp-double-buffer
	NCCLUB                       bool     `json:"nccl_ub"`                         // --use-nccl-ub
	FSDPManualRegistration       bool     `json:"fsdp_manual_registration"`        // --fsdp-manual-registration
	MegatronFSDPMainParamsDtype  string   `json:"megatron_fsdp_main_params_dtype"` // --megatron-fsdp-main-params-dtype
	MegatronFSDPMainGradsDtype   string   `json:"megatron_fsdp_main_grads_dtype"`  // --megatron-fsdp-main-grads-dtype
	MegatronFSDPGradCommDtype    string   `json:"megatron_fsdp_grad_comm_dtype"`   // --megatron-fsdp-grad-comm-dtype
	OverlapGradReduce            bool     `json:"overlap_grad_reduce"`
	OverlapParamGather           bool     `json:"overlap_param_gather"`
	DDPBucketSize                *int64   `json:"ddp_bucket_size,omitempty"` // --ddp-bucket-size (parameters)
	DDPNumBuckets                *int64   `json:"ddp_num_buckets,omitempty"` // --ddp-num-buckets
	Iters                        *int     `json:"iters,omitempty"`
	Samples                      *int     `json:"samples,omitempty"`
	LR                           float64  `json:"lr"`
	MinLR                        float64  `json:"min_lr"`
	LRDecayStyle                 string   `json:"lr_decay_style"`
	LRWarmupIters                int      `json:"lr_warmup_iters"`
	LRDecayIters                 *int     `json:"lr_decay_iters,omitempty"`
	LRWarmupSamples              int      `json:"lr_warmup_samples"`                  // --lr-warmup-samples
	LRDecaySamples               *int     `json:"lr_decay_samples,omitempty"`         // --lr-decay-samples
	LRWarmupFraction             *float64 `json:"lr_warmup_fraction,omitempty"`       // --lr-warmup-fraction
	LRWarmupInit                 float64  `json:"lr_warmup_init"`                     // --lr-warmup-init
	LRWSDDecayIters              *int     `json:"lr_wsd_decay_iters,omitempty"`       // --lr-wsd-decay-iters
	LRWSDDecaySamples            *int     `json:"lr_wsd_decay_samples,omitempty"`     // --lr-wsd-decay-samples
	LRWSDDecayStyle              string   `json:"lr_wsd_decay_style"`                 // --lr-wsd-decay-style
	DecoupledLR                  *float64 `json:"decoupled_lr,omitempty"`             // --decoupled-lr
	DecoupledMinLR               *float64 `json:"decoupled_min_lr,omitempty"`         // --decoupled-min-lr
	RampupBatchSize              []int    `json:"rampup_batch_size,omitempty"`        // --rampup-batch-size start increment samples
	StepBatchSizeSchedule        *string  `json:"step_batch_size_schedule,omitempty"` // --step-batch-size-schedule
	DeterministicMode            bool     `json:"deterministic_mode"`                 // --deterministic-mode
	WeightDecay                  float64  `json:"weight_decay"`
	WeightDecayIncrStyle         string   `json:"weight_decay_incr_style"`      // --weight-decay-incr-style
	StartWeightDecay             *float64 `json:"start_weight_decay,omitempty"` // --start-weight-decay
	EndWeightDecay               *float64 `json:"end_weight_decay,omitempty"`   // --end-weight-decay
	AdamEps                      float64  `json:"adam_eps"`                     // --adam-eps
	ClipGrad                     float64  `json:"clip_grad"`
	AdamBeta1                    float64  `json:"adam_beta1"`
	AdamBeta2                    float64  `json:"adam_beta2"`
	InitMethodStd                float64  `json:"init_method_std"`
	AttentionDropout             float64  `json:"attention_dropout"`
	HiddenDropout                float64  `json:"hidden_dropout"`
	Seed                         int      `json:"seed"`
	MTPLossScalingFactor         float64  `json:"mtp_loss_scaling_factor"`         // --mtp-loss-scaling-factor
	CalculatePerTokenLoss        bool     `json:"calculate_per_token_loss"`        // --calculate-per-token-loss
	CheckForNaNInLossAndGrad     bool     `json:"check_for_nan_in_loss_and_grad"`  // --no-check-for-nan-in-loss-and-grad when false
	ManualGC                     bool     `json:"manual_gc"`                       // --manual-gc
	ManualGCInterval             int      `json:"manual_gc_interval"`              // --manual-gc-interval
	ExitDurationInMins           *int     `json:"exit_duration_in_mins,omitempty"` // --exit-duration-in-mins
	DistributedTimeoutMinutes    int      `json:"distributed_timeout_minutes"`     // --distributed-timeout-minutes
}

type Data struct {
	Mock                            bool      `json:"mock"`
	Paths                           []string  `json:"paths"`
	Split                           string    `json:"split"`
	CachePath                       *string   `json:"cache_path,omitempty"`
	NumWorkers                      int       `json:"num_workers"`
	CreateAttentionMaskInDataloader bool      `json:"create_attention_mask_in_dataloader"` // --no-create-attention-mask-in-dataloader when false
	MmapBinFiles                    bool      `json:"mmap_bin_files"`                      // --no-mmap-bin-files when false
	Tokenizer                       Tokenizer `json:"tokenizer"`
}

type Tokenizer struct {
	Type                     string  `json:"type"`
	Model                    *string `json:"model,omitempty"`
	VocabFile                *string `json:"vocab_file,omitempty"`
	MergeFile                *string `json:"merge_file,omitempty"`
	TiktokenPattern          *string `json:"tiktoken_pattern,omitempty"`  // --tiktoken-pattern
	TiktokenNumSpecialTokens int     `json:"tiktoken_num_special_tokens"` // --tiktoken-num-special-tokens
}

// Kernels are the fused kernels, attention backend and CUDA graphs
// (speed, not what is computed).
type Kernels struct {
	AttentionBackend           string `json:"attention_backend"`             // --attention-backend
	TransformerImpl            string `json:"transformer_impl"`              // --transformer-impl
	MaskedSoftmaxFusion        bool   `json:"masked_softmax_fusion"`         // --no-masked-softmax-fusion when false
	GradientAccumulationFusion bool   `json:"gradient_accumulation_fusion"`  // --no-gradient-accumulation-fusion when false
	BiasGeluFusion             *bool  `json:"bias_gelu_fusion,omitempty"`    // --no-bias-gelu-fusion when false; nil: BiasGeluFusionOn's default
	BiasSwigluFusion           bool   `json:"bias_swiglu_fusion"`            // --no-bias-swiglu-fusion when false
	BiasDropoutFusion          *bool  `json:"bias_dropout_fusion,omitempty"` // --no-bias-dropout-fusion when false; nil: BiasDropoutFusionOn's default
	ApplyRopeFusion            bool   `json:"apply_rope_fusion"`             // --no-rope-fusion when false
	CrossEntropyLossFusion     bool   `json:"cross_entropy_loss_fusion"`     // --cross-entropy-loss-fusion
	CrossEntropyFusionImpl     string `json:"cross_entropy_fusion_impl"`     // --cross-entropy-fusion-impl
	MoEPermuteFusion           bool   `json:"moe_permute_fusion"`            // --moe-permute-fusion
	MoERouterFusion            bool   `json:"moe_router_fusion"`             // --moe-router-fusion
	// DisableParameterTransposeCache: TransformerConfig's field, no Megatron-LM flag.
	DisableParameterTransposeCache bool `json:"disable_parameter_transpose_cache"`
	// UseTransformerEngineOpFuser: --use-transformer-engine-op-fuser.
	UseTransformerEngineOpFuser bool     `json:"use_transformer_engine_op_fuser"`
	CUDAGraphImpl               string   `json:"cuda_graph_impl"`              // --cuda-graph-impl
	CUDAGraphModules            []string `json:"cuda_graph_modules,omitempty"` // --cuda-graph-modules
	CUDAGraphScope              []string `json:"cuda_graph_scope,omitempty"`   // --cuda-graph-scope (deprecated spelling)
	CUDAGraphWarmupSteps        int      `json:"cuda_graph_warmup_steps"`      // --cuda-graph-warmup-steps
}

type Checkpoint struct {
	Save      *string `json:"save,omitempty"`
	Load      *string `json:"load,omitempty"`
	Interval  int     `json:"interval"`
	Format    string  `json:"format"`
	AsyncSave bool    `json:"async_save"`
}

type Logging struct {
	Interval       int     `json:"interval"`
	EvalInterval   *int    `json:"eval_interval"` // nil: null, --eval-interval left out
	EvalIters      int     `json:"eval_iters"`
	TensorboardDir *string `json:"tensorboard_dir,omitempty"`
	WandbProject   *string `json:"wandb_project,omitempty"`
	WandbExpName   *string `json:"wandb_exp_name,omitempty"`
	LogThroughput  bool    `json:"log_throughput"`
}

type Launch struct {
	Launcher   string  `json:"launcher"` // torchrun | srun | parc
	Program    string  `json:"program"`
	Python     string  `json:"python"`
	Workdir    *string `json:"workdir,omitempty"`
	MasterPort int     `json:"master_port"`
	// GraceSeconds is the time between the stop signal and SIGKILL when the
	// workers are stopped (see Spec.GraceSeconds for the default).
	GraceSeconds  *int              `json:"grace_seconds,omitempty"`
	ExtraArgs     []string          `json:"extra_args"`
	ExtensionArgs []string          `json:"extension_args,omitempty"` // options of a parser extension, allowed in ExtraArgs
	Env           map[string]string `json:"env"`
	Container     *Container        `json:"container,omitempty"`
	Templates     *string           `json:"templates,omitempty"`
	ParcBinary    string            `json:"parc_binary"`
}

type Container struct {
	Image   string   `json:"image"`
	Mounts  []string `json:"mounts"`
	Workdir *string  `json:"workdir,omitempty"`
}

// RecomputeModuleList is the list of modules selective recomputation
// recomputes: train.recompute_modules, or Megatron's default ["core_attn"]
// (TransformerConfig.__post_init__). Empty unless recompute is "selective".
func (t *Train) RecomputeModuleList() []string {
	if t.Recompute != "selective" {
		return nil
	}
	if t.RecomputeModules == nil {
		return []string{"core_attn"}
	}
	return t.RecomputeModules
}

// OptimizerName is train.optimizer, "adam" when unset (a spec built in Go
// without the schema's defaults; Megatron's default too).
func (t *Train) OptimizerName() string {
	if t.Optimizer == "" {
		return "adam"
	}
	return t.Optimizer
}

// FusedAttentionDtype reports that the activations are in a data type
// Transformer Engine's flash and fused attention take, bf16 or fp16:
// get_attention_backend disables both for any other QKV data type
// ("Disabling FlashAttention due to unsupported QKV data type", the same
// for FusedAttention; transformer_engine/pytorch/attention/
// dot_product_attention/utils.py, v2.x to d0067d0d), so fp32 training has
// only TE's unfused attention.
func (t *Train) FusedAttentionDtype() bool { return t.Precision != "fp32" }

// OverlapsP2P reports that the pipeline overlaps its point-to-point
// transfers with compute: the interleaved schedule (pp > 1, vpp > 1) with
// parallel.overlap_p2p. Megatron turns the overlap off without interleaving
// (arguments.py at d98e8a64), and without it batch_p2p_comm ends every
// transfer in torch.cuda.synchronize() (p2p_communication.py,
// batch_p2p_sync).
func (p Parallel) OverlapsP2P() bool { return p.PP > 1 && p.VPP > 1 && p.OverlapP2P }

// QuantizedGEMMs reports that the decoder's linear layers run quantized
// GEMMs: precision "fp8" (an fp8 recipe) or "fp4" (NVFP4).
func (t *Train) QuantizedGEMMs() bool { return t.Precision == "fp8" || t.Precision == "fp4" }

// FP32AdamMoments reports that Adam keeps both moments in fp32 on the GPU
// (exp_avg_dtype and exp_avg_sq_dtype unset or fp32, no optimizer offload):
// what SetBF16AdamMoments would halve.
func (t *Train) FP32AdamMoments() bool {
	fp32 := func(d string) bool { return d == "" || d == "fp32" }
	return t.OptimizerName() == "adam" && !t.OptimizerCPUOffload && fp32(t.ExpAvgDtype) && fp32(t.ExpAvgSqDtype)
}

// SetBF16AdamMoments keeps Adam's moments in bf16 with the precision-aware
// optimizer (--use-precision-aware-optimizer --exp-avg-dtype bf16
// --exp-avg-sq-dtype bf16), as NeMo's Nemotron-4 340B runs and the
// Megatron-MoE-ModelZoo recipes do.
func (t *Train) SetBF16AdamMoments() {
	t.PrecisionAwareOptim, t.ExpAvgDtype, t.ExpAvgSqDtype = true, "bf16", "bf16"
}

// EmergingOptimizer reports whether train.optimizer is one of Megatron-Core's
// emerging optimizers (anything but adam and sgd: validate_args then turns the
// distributed optimizer into the layer-wise one, arguments.py at d98e8a64).
func (t *Train) EmergingOptimizer() bool {
	o := t.OptimizerName()
	return o != "adam" && o != "sgd"
}

// MegatronOptimizer is what Megatron-LM's validate_args makes of an
// --optimizer value (arguments.py at d98e8a64): the deprecated dist_muon is
// muon with the layer-wise distributed optimizer (layerWise); every other
// name is itself.
func MegatronOptimizer(name string) (optimizer string, layerWise bool) {
	if name == "dist_muon" {
		return "muon", true
	}
	return name, false
}

// LayerWiseOptimizer reports whether the optimizer state is sharded by
// Megatron's LayerWiseDistributedOptimizer (an emerging optimizer with
// --use-distributed-optimizer: validate_args sets
// use_layer_wise_distributed_optimizer and clears use_distributed_optimizer).
func (t *Train) LayerWiseOptimizer() bool {
	return t.DistributedOptimizer && t.EmergingOptimizer()
}
