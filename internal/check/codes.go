package check

import "parc.dev/parc/internal/diag"

// CodeInfo is diag.CodeInfo (kept under this name for the check stage).
type CodeInfo = diag.CodeInfo

// Codes lists every code the check stage emits, grouped by topic.
var Codes = []CodeInfo{
	// Ranges.
	{Code: "value-range", Severity: diag.Error, Rule: "", Meaning: "A count that must be at least 1 is 0 or negative (only possible for specs built in Go, the schema rejects it).", Fix: "Set the field to a positive integer."},

	{Code: "layout-world-too-large", Severity: diag.Error, Meaning: "More GPUs than parc lays out (2^22).", Fix: "Split the job."},

	// World size and the parallel grids.
	{Code: "world-size", Severity: diag.Error, Rule: "W1", Meaning: "The cluster has fewer GPUs (nodes × gpus_per_node) than one model replica needs (tp·pp·cp).", Fix: "Add nodes, or lower tp, pp or cp; the hint lists what fits."},
	{Code: "world-not-divisible", Severity: diag.Error, Rule: "W1/W2", Meaning: "The world size is not a multiple of tp·pp·cp, so Megatron cannot derive an integer data-parallel size.", Fix: "Pick tp, pp and cp whose product divides nodes × gpus_per_node (the hint lists valid values), or change the node count."},
	{Code: "expert-grid-not-divisible", Severity: diag.Error, Rule: "W3", Meaning: "The world size is not a multiple of etp·ep·pp, the expert grid Megatron builds beside the dense one.", Fix: "Pick ep and etp whose product with pp divides the world size."},
	{Code: "order-unsupported", Severity: diag.Error, Rule: "W6", Meaning: "parallel.order is neither of the two rank orders Megatron's training entry point can build.", Fix: "Use \"tp-cp-ep-dp-pp\" (default) or \"tp-cp-ep-pp-dp\" (--use-tp-pp-dp-mapping)."},
	{Code: "order-pp-last", Severity: diag.Error, Rule: "W4/W5", Meaning: "With the tp-cp-ep-pp-dp order and pp > 1, the dense and expert data-parallel sizes must be equal (etp·ep = tp·cp).", Fix: "Use the default order tp-cp-ep-dp-pp, or choose ep and etp with etp·ep = tp·cp."},
	{Code: "dp-mismatch", Severity: diag.Error, Rule: "", Meaning: "parallel.dp was given but differs from the data-parallel size the grid implies (world / (tp·pp·cp)).", Fix: "Drop parallel.dp (it is derived) or change the node count to match it."},
	{Code: "distopt-instances", Severity: diag.Error, Rule: "W8/W9", Meaning: "dp·cp or the expert data-parallel size is not a multiple of distributed_optimizer_instances.", Fix: "Choose a number of optimizer instances that divides both dp·cp and the expert dp."},
	{Code: "nvlink-domain", Severity: diag.Error, Rule: "", Meaning: "cluster.nvlink_domain is neither a divisor nor a multiple of gpus_per_node, which no real machine has.", Fix: "Set nvlink_domain to the GPUs that share NVLink: gpus_per_node for a DGX/HGX, 72 for NVL72."},

	// Attention heads, hidden size, FFN.
	{Code: "tp-heads", Severity: diag.Error, Rule: "S1", Meaning: "tp does not divide the number of attention heads.", Fix: "Use a tp that divides model.heads (the hint lists them)."},
	{Code: "tp-query-groups", Severity: diag.Error, Rule: "S2", Meaning: "The number of query groups is neither a multiple nor a divisor of tp.", Fix: "Use a tp that divides query_groups or is a multiple of it."},
	{Code: "query-groups-heads", Severity: diag.Error, Rule: "S7/S10", Meaning: "The number of query groups does not divide the number of heads (Transformer Engine and the attention split need heads / groups to be whole).", Fix: "Use a query_groups value that divides model.heads."},
	{Code: "hidden-heads", Severity: diag.Error, Rule: "S3", Meaning: "hidden is not divisible by heads and kv_channels is not given, so Megatron cannot derive the head dimension.", Fix: "Make heads divide hidden, or set model.kv_channels explicitly."},
	{Code: "max-positions", Severity: diag.Error, Rule: "S6", Meaning: "max_position_embeddings is smaller than the sequence length.", Fix: "Raise model.max_position_embeddings to at least train.seq_length (or drop it: it defaults to seq_length)."},
	{Code: "mla-query-groups", Severity: diag.Error, Rule: "S11", Meaning: "Multi-latent attention and grouped-query attention (query_groups) are mutually exclusive.", Fix: "Remove model.query_groups or model.mla."},
	{Code: "ffn-tp", Severity: diag.Error, Rule: "S8", Meaning: "The FFN hidden size is not divisible by tp, so the column/row-parallel MLP split fails when the model is built.", Fix: "Choose a tp that divides ffn_hidden, or set model.ffn_hidden to a multiple of tp."},
	{Code: "window-attn-skip-freq-unused", Severity: diag.Warning, Rule: "", Meaning: "model.window_attn_skip_freq is set without model.window_size; Megatron accepts it and ignores it (is_layer_window_attention windows no layer without a window), so every layer keeps full attention.", Fix: "Remove model.window_attn_skip_freq, or set model.window_size to the attention window."},
	{Code: "glu-options", Severity: diag.Error, Rule: "", Meaning: "A gated activation's offset or clamp Megatron's TransformerConfig rejects: a nonzero glu_linear_offset with the fused bias-activation kernel on an activation other than quick_geglu, or a clamped swiglu whose activation_func_clamp_value is not positive, on a model without experts, or with a nonzero offset.", Fix: "Set the offset to 0 or turn the fused bias-activation kernel off; give a clamped swiglu a positive value, experts and offset 0, or remove the clamp."},
	{Code: "glu-options-unused", Severity: diag.Warning, Rule: "", Meaning: "model.glu_linear_offset or activation_func_clamp_value is set on an activation that is not gated (gelu, squared_relu); Megatron accepts it and ignores it: only gated MLPs add the offset or clamp their inputs.", Fix: "Remove it, or use a gated activation (swiglu, quick_geglu)."},
	{Code: "mtp-position-embedding", Severity: diag.Error, Rule: "", Meaning: "Multi-token prediction needs rope or no position embedding; Megatron rejects it with learned_absolute.", Fix: "Set model.position_embedding to \"rope\" or \"none\", or mtp_layers to 0."},

	// Pipeline split.
	{Code: "pp-layers", Severity: diag.Error, Rule: "P6/P9/P16/P17", Meaning: "The decoder layers (plus one each for account_for_embedding / account_for_loss) do not split evenly over pp stages.", Fix: "Use a pp that divides the layer count (the hint lists them), or an uneven split with first_stage_layers / last_stage_layers."},
	{Code: "vpp-layers", Severity: diag.Error, Rule: "P8/P17", Meaning: "The layers of one pipeline rank do not split evenly over vpp virtual stages.", Fix: "Use a vpp that divides the layers per pipeline rank."},
	{Code: "vpp-pp", Severity: diag.Error, Rule: "P7a/P7b/W10", Meaning: "The interleaved schedule (vpp > 1) needs pp > 1, and pp > 2 when overlap_p2p is off.", Fix: "Set vpp to 1, or raise pp."},
	{Code: "uneven-account-for", Severity: diag.Error, Rule: "P15", Meaning: "An uneven pipeline (first_stage_layers / last_stage_layers) cannot be combined with account_for_embedding / account_for_loss.", Fix: "Use one or the other."},
	{Code: "uneven-stage-layers", Severity: diag.Error, Rule: "P10", Meaning: "first_stage_layers or last_stage_layers is not positive.", Fix: "Give the first/last stage at least one layer."},
	{Code: "uneven-vpp", Severity: diag.Error, Rule: "P11/P14", Meaning: "With an uneven pipeline and vpp > 1, the first, last and each middle stage's layer count must be divisible by vpp.", Fix: "Choose stage layer counts that are multiples of vpp, or set vpp to 1."},
	{Code: "uneven-middle", Severity: diag.Error, Rule: "P12/P13/P24", Meaning: "The layers left for the middle stages (layers − first − last) do not split evenly over the middle stages, or there are middle layers but no middle stage (or the reverse).", Fix: "Choose first/last stage layers so the rest divides by the number of middle stages."},
	{Code: "uneven-vpp-no-middle", Severity: diag.Error, Rule: "", Meaning: "An uneven pipeline whose first and last stages hold every layer (no middle stage, e.g. pp 2 with both set) combined with vpp > 1: Megatron's layer-offset code divides by the zero middle stages when the model is built.", Fix: "Set vpp to 1, or leave at least one middle stage."},
	{Code: "pipeline-layout", Severity: diag.Error, Rule: "", Meaning: "parallel.layout (--pipeline-model-parallel-layout) breaks a rule of Megatron's PipelineParallelLayerLayout: a character it does not know, a stage count that is not pp·vpp, the embedding not first or the loss not last (or not exactly once), a decoder or MTP layer count that is not the model's, MTP layers outside one last virtual stage, or first/last-stage layers and account-for flags beside it.", Fix: "Follow the hint; the message gives the character position of a syntax error."},
	{Code: "uneven-middle-negative", Severity: diag.Warning, Rule: "", Meaning: "first_stage_layers + last_stage_layers exceed the layer count; Megatron accepts this but the stages do not hold the layers you asked for.", Fix: "Lower first_stage_layers / last_stage_layers."},
	{Code: "uneven-single-stage", Severity: diag.Warning, Rule: "", Meaning: "first_stage_layers / last_stage_layers with pp = 1: Megatron accepts it, but the single stage builds last_stage_layers (or first_stage_layers) layers, not the model's layer count.", Fix: "Remove first_stage_layers / last_stage_layers when pp = 1."},
	{Code: "interleave-microbatches", Severity: diag.Error, Rule: "P25/P26", Meaning: "The interleaved schedule needs the number of microbatches M ≥ the microbatch group N (default pp) ≥ pp, and M mod N either 0 or ≥ pp.", Fix: "Change the global batch (the hint gives the nearest valid ones) or microbatch_group_size."},
	{Code: "microbatch-group-unused", Severity: diag.Warning, Rule: "", Meaning: "microbatch_group_size only matters for the interleaved schedule (vpp > 1); it is ignored here.", Fix: "Remove parallel.microbatch_group_size, or use vpp > 1."},

	// Batch.
	{Code: "global-batch", Severity: diag.Error, Rule: "B4/B5", Meaning: "The global batch is not a positive multiple of micro_batch × dp.", Fix: "Use a global batch that is a multiple of micro_batch·dp (the hint gives the nearest)."},
	{Code: "batch-schedule", Severity: diag.Error, Rule: "B8/B9/B10/P25/P26", Meaning: "train.step_batch_size_schedule is malformed (Megatron's parser stops at start-up), train.global_batch is not its first batch size, or a phase the run reaches has a batch size Megatron's training loop stops at: not a multiple of micro_batch × dp, fewer microbatches than the phase before, or a microbatch count the interleaved schedule does not allow.", Fix: "Write the schedule as THRESHOLD:BATCH entries in tokens from 0, set train.global_batch to its first size, and give every phase a multiple of micro_batch·dp that never lowers the microbatches (the hint gives a corrected schedule)."},
	{Code: "batch-schedule-iterations", Severity: diag.Warning, Rule: "", Meaning: "A batch schedule with iteration-based training (train.iters): Megatron sets its global batch size to micro_batch × dp and turns the learning-rate schedule's iterations into samples with it, while each step consumes its scheduled batch, so the warmup and the decay end early and the learning rate stays at min_lr for the rest of the run.", Fix: "Train by samples: train.samples and the lr_*_samples fields (the hint gives the same run in samples)."},

	// Context and sequence parallelism.
	{Code: "cp-seq-length", Severity: diag.Error, Rule: "C1", Meaning: "With cp > 1 the sequence length must be a multiple of 2·cp (load-balanced causal chunks).", Fix: "Use a seq_length that is a multiple of 2·cp, or another cp."},
	{Code: "cp-hierarchical", Severity: diag.Error, Rule: "C2/W13", Meaning: "The product of hierarchical_cp sizes is not cp.", Fix: "Make the hierarchical sizes multiply to parallel.cp."},
	{Code: "cp-a2a-p2p", Severity: diag.Error, Rule: "C3", Meaning: "cp_comm_type a2a+p2p needs hierarchical_cp sizes.", Fix: "Set parallel.hierarchical_cp (e.g. [a2a size, p2p size]) or use another cp_comm_type."},
	{Code: "sp-seq-length", Severity: diag.Error, Rule: "", Meaning: "With sequence parallelism the sequence chunk of each CP rank (seq_length / cp) must split evenly over tp ranks; the first scatter fails otherwise.", Fix: "Use a seq_length that is a multiple of tp·cp."},
	{Code: "sp-without-tp", Severity: diag.Warning, Rule: "Q1", Meaning: "Sequence parallelism was asked for with tp = 1; Megatron switches it off.", Fix: "Remove parallel.sp or raise tp."},
	{Code: "moe-sp-required", Severity: diag.Error, Rule: "Q4", Meaning: "An MoE model with tp > 1 must use sequence parallelism; Megatron raises at the first training step otherwise.", Fix: "Set parallel.sp to true (the default when tp > 1)."},

	// Mixture of experts.
	{Code: "ep-without-moe", Severity: diag.Error, Rule: "M2", Meaning: "ep > 1 but the model has no experts.", Fix: "Set ep to 1 or add model.moe."},
	{Code: "etp-without-moe", Severity: diag.Warning, Rule: "", Meaning: "etp was given for a dense model; it only shapes the (unused) expert grid.", Fix: "Remove parallel.etp."},
	{Code: "ep-experts", Severity: diag.Error, Rule: "M3", Meaning: "The number of experts is not a multiple of ep.", Fix: "Use an ep that divides model.moe.experts (the hint lists them)."},
	{Code: "moe-bias-etp", Severity: diag.Error, Rule: "M4", Meaning: "MoE with linear biases (model.bias, on by default as in Megatron) needs etp = 1.", Fix: "Set model.bias to false (--disable-bias-linear) or parallel.etp to 1."},
	{Code: "moe-topk-pre-softmax", Severity: diag.Error, Rule: "M5", Meaning: "topk = 1 with the softmax score function needs router_pre_softmax (softmax over one value has zero gradient).", Fix: "Set model.moe.router_pre_softmax to true, or use topk ≥ 2 or sinkhorn."},
	{Code: "moe-capacity-balancing", Severity: diag.Error, Rule: "M6", Meaning: "capacity_factor only works with aux_loss, seq_aux_loss, global_aux_loss or none load balancing.", Fix: "Remove capacity_factor or change router_load_balancing."},
	{Code: "moe-pad-capacity", Severity: diag.Error, Rule: "M7", Meaning: "pad_expert_input_to_capacity needs a capacity_factor (TransformerConfig); the flex dispatcher's deepep backend does not support padding, and its ncclep backend supports neither a capacity factor nor padding.", Fix: "Set model.moe.capacity_factor, or pad_expert_input_to_capacity: false, or use the hybridep backend."},
	{Code: "moe-rank-capacity", Severity: diag.Error, Rule: "M22", Meaning: "expert_rank_capacity_factor needs the flex dispatcher's hybridep or ncclep backend, and with hybridep Transformer Engine's op fuser (or --moe-use-grouped-tensor) (TransformerConfig).", Fix: "Remove expert_rank_capacity_factor, or use the flex dispatcher with the hybridep backend and kernels.use_transformer_engine_op_fuser."},
	{Code: "moe-paged-stash", Severity: diag.Error, Rule: "M23", Meaning: "paged_stash needs expert_rank_capacity_factor, cannot go with cpu_offloading_num_layers, and excludes expert_fc1, moe_act and fused_group_mlp from offload_modules (TransformerConfig).", Fix: "Set expert_rank_capacity_factor, or paged_stash: false; drop the clashing offloading."},
	{Code: "moe-router-padding", Severity: diag.Error, Rule: "M24", Meaning: "router_padding_for_quantization pads the routing map for fp8/fp4 GEMMs: it needs precision fp8 or fp4 and refuses the allgather dispatcher and inference-optimized MoE layers (TransformerConfig).", Fix: "Set router_padding_for_quantization: false, or use the alltoall or flex dispatcher in fp8 or fp4."},
	{Code: "moe-expert-bias-score", Severity: diag.Error, Rule: "M10", Meaning: "expert_bias (aux-loss-free balancing) needs the sigmoid score function.", Fix: "Set model.moe.score_function to \"sigmoid\" or expert_bias to false."},
	{Code: "moe-sinkhorn-aux-loss", Severity: diag.Error, Rule: "M19", Meaning: "Sinkhorn load balancing does not support an auxiliary loss; the router asserts aux_loss_coeff == 0.", Fix: "Set model.moe.aux_loss_coeff to 0, or use another load balancing."},
	{Code: "moe-topk-experts", Severity: diag.Error, Rule: "M20", Meaning: "topk is larger than the number of experts; torch.topk fails at the first step.", Fix: "Use topk ≤ experts."},
	{Code: "moe-ffn-etp", Severity: diag.Error, Rule: "S9", Meaning: "The expert FFN hidden size is not divisible by etp, so the expert linears cannot be split.", Fix: "Choose an etp that divides moe.ffn_hidden."},
	{Code: "moe-bias-dropout-fusion", Severity: diag.Error, Rule: "", Meaning: "Grouped-GEMM experts (Transformer Engine's TEGroupedMLP) with linear biases and kernels.bias_dropout_fusion set true (left out, parc turns it off for them): TEGroupedMLP asserts they are not both on (\"bias_dropout_fusion is not supported in TEGroupedMLP when add_bias_linear=True\") when Megatron builds the model.", Fix: "Set kernels.bias_dropout_fusion false (Megatron's --no-bias-dropout-fusion), as Megatron-Bridge does for GPT-OSS, or leave it out (parc's default is off for such experts), or set model.bias false."},
	{Code: "moe-shared-expert-bias", Severity: diag.Error, Rule: "", Meaning: "Shared experts with model.bias set true (left out, parc turns the biases off for an MoE with shared experts): Megatron's SharedExpertMLP asserts add_bias_linear is off (\"bias is not supported in the shared experts\") when it builds the model.", Fix: "Set model.bias false (Megatron's --disable-bias-linear) or leave it out, as every MoE configuration of Megatron-LM's examples does."},
	{Code: "moe-shared-ffn-tp", Severity: diag.Error, Rule: "S8", Meaning: "The shared-expert FFN size is not divisible by tp (the shared expert is split over the tensor-parallel group).", Fix: "Make moe.shared_ffn_hidden a multiple of tp."},
	{Code: "moe-grouped-gemm-gpu", Severity: diag.Error, Rule: "M16", Meaning: "Grouped GEMM needs compute capability 8.0 or higher.", Fix: "Set model.moe.grouped_gemm to false on this GPU."},
	{Code: "moe-no-layers", Severity: diag.Warning, Rule: "", Meaning: "dense_layers and layer_freq leave no MoE layer in the model.", Fix: "Lower model.moe.dense_layers or layer_freq."},

	{Code: "moe-router-groups", Severity: diag.Error, Rule: "", Meaning: "Group-limited routing needs router_num_groups dividing the experts and router_group_topk ≤ router_num_groups (TransformerConfig).", Fix: "Set router_num_groups to a divisor of experts, and router_group_topk no larger."},
	{Code: "moe-flex-backend", Severity: diag.Error, Rule: "", Meaning: "The ncclep backend needs the flex dispatcher; the flex dispatcher's deepep and ncclep backends need tp·ep > 1 (MoEFlexTokenDispatcher); shared-expert overlap needs the alltoall or flex dispatcher (TransformerConfig); the hybridep backend needs the same number of the expert-parallel group's ranks in each NVLink domain (HybridEPBuffer).", Fix: "Use the flex (or alltoall) dispatcher, the hybridep backend or ep > 1, an ep that fills whole NVLink domains, or drop the option."},

	// Precision.
	{Code: "precision-fp8-gpu", Severity: diag.Error, Rule: "", Meaning: "The FP8 recipe is not supported by this GPU (Transformer Engine: fp8 needs compute capability ≥ 8.9, blockwise ≥ 9.0, mxfp8 10.x–11.x).", Fix: "Choose a recipe the GPU supports (the hint lists them) or train.precision \"bf16\"."},
	{Code: "gpu-peak-not-datasheet", Severity: diag.Warning, Rule: "", Meaning: "cluster.gpu.name names a GPU parc has a datasheet for, but cluster.gpu.bf16_tflops is not that GPU's dense bf16 peak (often the peak with sparsity, twice the dense one): parc takes none of the datasheet's other figures and derives them from the given peak.", Fix: "Write the dense bf16 peak (the hint gives the datasheet's), or name the GPU you have."},
	{Code: "precision-fp4-gpu", Severity: diag.Error, Rule: "", Meaning: "NVFP4 (precision \"fp4\") needs compute capability 10.0 or higher (Blackwell; Transformer Engine's NVFP4 support check).", Fix: "Use train.precision \"fp8\" or \"bf16\" on this GPU."},
	{Code: "precision-bf16-gpu", Severity: diag.Warning, Rule: "", Meaning: "bf16 needs compute capability 8.0 or higher (A100 and later).", Fix: "Use train.precision \"fp16\" on this GPU."},

	// Recomputation.
	{Code: "recompute-layers-range", Severity: diag.Warning, Rule: "R3", Meaning: "recompute_layers exceeds the layers per pipeline rank; Megatron accepts it and recomputes every layer.", Fix: "Use a value between 1 and layers/pp."},
	{Code: "recompute-mtp-uniform", Severity: diag.Error, Rule: "", Meaning: "Full uniform recomputation with MTP layers needs recompute_layers = 1 (Megatron asserts it in the MTP block).", Fix: "Set train.recompute_layers to 1 or recompute_method to \"block\"."},
	{Code: "recompute-options-unused", Severity: diag.Warning, Rule: "R4", Meaning: "recompute_layers only applies to full recomputation; it is ignored here.", Fix: "Remove train.recompute_layers, or set train.recompute to \"full\"."},

	{Code: "recompute-modules", Severity: diag.Error, Rule: "", Meaning: "A module in train.recompute_modules needs a part of the model or a setting the plan lacks (TransformerConfig.__post_init__: moe_act needs grouped-GEMM experts, mla_up_proj needs MLA, moe_act and layernorm cannot be recomputed with fp8 delayed scaling, ...).", Fix: "Remove the module from the list, or add what it needs."},

	// Kernels, fusions, CUDA graphs.
	{Code: "cuda-graph-moe-dynamic", Severity: diag.Warning, Rule: "", Meaning: "A full-iteration CUDA graph over MoE layers whose token dispatch has dynamic sizes (dropless routing, or padding with a dispatcher that still copies its counts to the host): Megatron accepts the arguments, but its CUDA graph guide says such dispatch cannot be captured, and the capture fails at run time.", Fix: "Give the dispatch static shapes (model.moe.expert_rank_capacity_factor with the flex dispatcher's hybridep backend, as Megatron-Bridge's full-iteration recipes do, with paged_stash), or capture per layer (cuda_graph_impl transformer_engine, modules attn, moe_router, moe_preprocess)."},
	{Code: "attention-no-backend", Severity: diag.Error, Rule: "", Meaning: "Transformer Engine has no attention backend for the plan and fails in the first step: fp32 (its flash and fused attention take bf16 or fp16 only) with context parallelism or with attention_backend \"flash\" or \"fused\", or attention_backend \"unfused\" with context parallelism (its unfused attention does not support it).", Fix: "Use attention_backend \"auto\", cp 1, or train.precision \"bf16\" or \"fp16\" (the hint names those that pass)."},
	{Code: "kernel-options", Severity: diag.Error, Rule: "", Meaning: "A fused-kernel, attention-backend or CUDA-graph setting Megatron rejects with the rest of the plan (TE cross-entropy fusion, RoPE fusion with MLA and rope_type rope, cuda_graph_scope with cuda_graph_modules, full-iteration graphs with the NaN check, full recomputation with per-layer CUDA graphs, the per-layer CUDA-graph modules (moe with moe_router, moe_preprocess without moe_router, moe or moe_router without experts, mlp when every layer is MoE, moe without drop-and-pad, moe_router over a recomputed moe), dropout or the MoE input jitter in a module selective recomputation recomputes inside a CUDA graph, the deprecated cuda_graph_scope values against cuda_graph_impl, a module list with a full-iteration graph, delayed weight gradients with overlapped reduction under a graph that holds weight gradients (gradient-accumulation fusion, no attention bias), Transformer Engine graphs with expandable segments but NCCL graph registration on, the local attention backend, two YaRN factors, the squared_relu activation with biases and the fused bias-activation kernel, delay_wgrad_compute or the inference-optimized layers' limits with kernels.transformer_impl, disable_parameter_transpose_cache, which Megatron-LM has no flag for).", Fix: "Change the setting as the hint says."},

	// Optimizer and overlap.
	{Code: "bias-activation-fusion", Severity: diag.Error, Rule: "", Meaning: "The fused bias-activation kernel set on (kernels.bias_gelu_fusion true, with linear biases; left out, parc turns it off there) where the MLP cannot fuse the activation: quick_geglu in a dense layer's MLP, gelu in routed experts. Megatron accepts the arguments and stops at the first forward (mlp.py, moe/experts.py: 'Only support fusion of ...').", Fix: "Turn kernels.bias_gelu_fusion off (or leave it out), drop the linear biases (model.bias false, as every MoE configuration of Megatron-LM's examples and tests does), or use swiglu."},
	{Code: "deterministic-mode", Severity: diag.Error, Rule: "", Meaning: "train.deterministic_mode is on with an option Megatron's deterministic mode rejects (determinism.py: cross_entropy_loss_fusion and tp_comm_overlap must be off).", Fix: "Turn the listed options off, or deterministic_mode off."},
	{Code: "tp-comm-overlap", Severity: diag.Error, Rule: "", Meaning: "parallel.tp_comm_overlap is on without sequence parallelism (validate_args asserts it; sequence parallelism is off at tp=1).", Fix: "Use tp > 1 with sequence parallelism, or turn tp_comm_overlap off."},
	{Code: "ep-comm-overlap", Severity: diag.Error, Rule: "", Meaning: "overlap_moe_expert_parallel_comm (or delay_wgrad_compute, which needs it) is on with settings TransformerConfig rejects: ep = 1, pp > 1 without virtual stages, the allgather dispatcher, full recomputation, the moe recompute module, fp32, more than one MTP layer.", Fix: "Change the listed settings, or turn the overlap off."},
	{Code: "fp4-param-gather", Severity: diag.Error, Rule: "", Meaning: "fp4_param_gather without precision \"fp4\": Megatron's validate_args rejects --fp4-param-gather without --fp4-format.", Fix: "Set train.precision \"fp4\", or turn fp4_param_gather off."},
	{Code: "fp8-param-gather", Severity: diag.Error, Rule: "", Meaning: "fp8_param_gather needs the distributed optimizer or FSDP (validate_args).", Fix: "Set train.distributed_optimizer (or train.fsdp), or turn fp8_param_gather off."},
	{Code: "optimizer-dtypes", Severity: diag.Error, Rule: "", Meaning: "An optimizer dtype other than fp32 without the precision-aware optimizer, or the precision-aware optimizer without the distributed optimizer (OptimizerConfig, get_megatron_optimizer).", Fix: "Set train.precision_aware_optimizer and train.distributed_optimizer, or keep the dtypes fp32."},
	{Code: "optimizer-options", Severity: diag.Error, Rule: "O5/O7/O9/O10", Meaning: "train.optimizer with what Megatron does not run it with: an optimizer other than adam or sgd (muon, lion, adaptive_muon, soap) with FSDP, fp16, a checkpoint format other than torch or torch_dist, or (with the distributed optimizer, which is then the layer-wise one) overlap_param_gather_with_optimizer_step; the precision-aware optimizer with anything but adam.", Fix: "Use adam, or change the listed option."},
	{Code: "optimizer-cpu-offload", Severity: diag.Error, Rule: "O8", Meaning: "optimizer_cpu_offload without the precision-aware optimizer, whose code path Megatron-Core's HybridDeviceOptimizer reuses, or with fp8_param_gather and an fp8 recipe other than delayed scaling (validate_args).", Fix: "Set train.precision_aware_optimizer (with the distributed optimizer), use fp8_recipe \"delayed\" or fp8_param_gather false, or turn optimizer_cpu_offload off."},
	{Code: "ddp-buckets", Severity: diag.Error, Rule: "", Meaning: "train.ddp_bucket_size and train.ddp_num_buckets are both set; Megatron-Core's DistributedDataParallelConfig asserts \"Cannot specify both num_buckets and bucket_size\".", Fix: "Keep one of them."},
	{Code: "ddp-buckets-unused", Severity: diag.Warning, Rule: "", Meaning: "train.ddp_bucket_size or ddp_num_buckets is set without overlap_grad_reduce, or with Megatron-FSDP: Megatron's DDP keeps every parameter in one bucket without the overlap (resolve_ddp_bucket_size), and Megatron-FSDP buckets by FSDP unit.", Fix: "Remove the option, or set train.overlap_grad_reduce."},
	{Code: "overlap-param-gather", Severity: diag.Error, Rule: "O1/O2", Meaning: "overlap_param_gather needs the distributed optimizer and overlap_grad_reduce; overlap_param_gather_with_optimizer_step also needs overlap_param_gather, vpp > 1 and the torch checkpoint format.", Fix: "Set train.distributed_optimizer and train.overlap_grad_reduce to true, or overlap_param_gather to false."},

	// Training length and schedule.
	{Code: "train-iters-samples", Severity: diag.Error, Rule: "T1/T2", Meaning: "Iteration-based and sample-based options are mixed (iters with samples, or samples with lr_decay_iters / lr_warmup_iters).", Fix: "Use train.iters with the *_iters options, or train.samples without them."},
	{Code: "train-length-missing", Severity: diag.Warning, Rule: "T9", Meaning: "Neither train.iters nor train.samples is given: the spec is complete, but Megatron stops when training starts (\"either train-iters or train-samples should be provided\").", Fix: "Set train.iters (or train.samples) before launching."},
	{Code: "lr-warmup", Severity: diag.Error, Rule: "", Meaning: "lr_warmup_iters is not below the LR decay length (lr_decay_iters, default train.iters); Megatron's LR scheduler asserts warmup < decay when it is built.", Fix: "Use fewer warmup iterations, or a longer decay."},
	{Code: "lr-wsd-decay", Severity: diag.Error, Rule: "", Meaning: "The WSD LR schedule needs the length of its decay phase, which only --lr-wsd-decay-iters (or -samples) gives; the scheduler asserts it when built.", Fix: "Set train.lr_wsd_decay_iters (or lr_wsd_decay_samples), or use another lr_decay_style."},
	{Code: "lr-warmup-exclusive", Severity: diag.Error, Rule: "T3", Meaning: "lr_warmup_fraction and lr_warmup_iters (or lr_warmup_samples) both set the warmup; validate_args accepts one.", Fix: "Give the warmup once."},
	{Code: "lr-options-unused", Severity: diag.Warning, Rule: "", Meaning: "An LR option that has no effect with the rest of the plan (WSD decay length without the WSD style, decoupled_min_lr without decoupled_lr).", Fix: "Remove it, or set what it belongs to."},
	{Code: "rampup-batch-size-ignored", Severity: diag.Warning, Rule: "", Meaning: "Megatron (d98e8a64) still parses --rampup-batch-size but ignores it (deprecated for --step-batch-size-schedule): the batch does not ramp up.", Fix: "Remove train.rampup_batch_size."},
	{Code: "weight-decay-schedule", Severity: diag.Error, Rule: "", Meaning: "A constant weight-decay style with start/end weight decay, or a linear/cosine style without both (validate_args asserts).", Fix: "Set both start_weight_decay and end_weight_decay with a linear or cosine style, or neither with constant."},
	{Code: "lr-min", Severity: diag.Error, Rule: "T4", Meaning: "min_lr is larger than lr.", Fix: "Set train.min_lr ≤ train.lr."},

	// Checkpoint and data.
	{Code: "checkpoint-format", Severity: diag.Error, Rule: "", Meaning: "The checkpoint format needs an FSDP mode that the plan does not use (fsdp_dtensor: Megatron-FSDP; torch_dcp: torch FSDP2 with tp = pp = 1).", Fix: "Use checkpoint.format \"torch_dist\"."},
	{Code: "fsdp-options-unused", Severity: diag.Warning, Rule: "", Meaning: "A Megatron-FSDP option is set while train.fsdp is off; Megatron ignores it.", Fix: "Remove the option, or set train.fsdp: true."},
	{Code: "cpu-offloading", Severity: diag.Error, Rule: "", Meaning: "CPU activation offloading (train.cpu_offloading_num_layers) with what Megatron refuses beside it (TransformerConfig.__post_init__ at d98e8a64): as many layers as the model has or more, pipeline parallelism, activation recomputation, or per-layer CUDA graphs (cuda_graph_impl local or transformer_engine).", Fix: "Offload fewer layers than the model has, with pp 1, no recompute and no per-layer CUDA graphs; or set cpu_offloading_num_layers to 0."},
	{Code: "fine-grained-offloading", Severity: diag.Error, Rule: "", Meaning: "Fine-grained activation offloading (train.fine_grained_activation_offloading) with what Megatron refuses beside it (TransformerConfig.__post_init__ and validate_args at d98e8a64): no offload module, layer-wise CPU offloading, a transformer_impl other than transformer_engine, attn_proj without core_attn, modules inside an MoE layer that \"moe\" recomputes, gdp_qkv beside a recomputed gdp_in_proj, \"mhc\" recompute, fused_group_mlp without the TE op fuser or beside expert_fc1/moe_act, CUDA graphs it does not support, or NVTE_CPU_OFFLOAD_V1 set to other than 1.", Fix: "Change the named setting as the hint says, or set train.fine_grained_activation_offloading: false."},
	{Code: "offload-options-unused", Severity: diag.Warning, Rule: "", Meaning: "An offloading option (train.offload_modules, min_offloaded_tensor_size, activation_offload_fraction, delta_offload_bytes_across_pp_ranks, fine_grained_offloading_max_inflight_offloads, delay_offload_until_cuda_graph, parallel.wgrad_deferral_limit) is set while the feature it tunes is off; Megatron ignores it.", Fix: "Remove the option, or turn the feature on."},
	{Code: "defer-embedding-wgrad", Severity: diag.Error, Rule: "", Meaning: "parallel.defer_embedding_wgrad_compute without what Megatron needs for it (ModelParallelConfig.__post_init__ at d98e8a64): pipeline parallelism (pp > 1) and gradient-accumulation fusion.", Fix: "Use pp > 1 and kernels.gradient_accumulation_fusion: true, or set parallel.defer_embedding_wgrad_compute: false."},
	{Code: "fsdp-options", Severity: diag.Error, Rule: "O4/O5", Meaning: "FSDP (train.fsdp, or --use-megatron-fsdp / --use-torch-fsdp2 in launch.extra_args) is on with options it does not support (torch FSDP2: pp, ep, the distributed optimizer, gradient-accumulation fusion, tied embeddings, fp16; Megatron-FSDP: any checkpoint format but fsdp_dtensor).", Fix: "Change the listed options, or drop the FSDP flag."},
	{Code: "tokenizer-files", Severity: diag.Error, Rule: "", Meaning: "The tokenizer type needs files the spec does not give (GPT2BPETokenizer: vocab_file and merge_file; SentencePiece, HuggingFace, Llama2, TikToken: model).", Fix: "Set data.tokenizer.model / vocab_file / merge_file, or use NullTokenizer."},

	// Launch environment.
	{Code: "cuda-max-connections", Severity: diag.Error, Rule: "C5/O4/O5", Meaning: "CUDA_DEVICE_MAX_CONNECTIONS contradicts the plan: tp or cp > 1 before Blackwell needs it to be 1; FSDP needs it not to be 1.", Fix: "Set (or unset) CUDA_DEVICE_MAX_CONNECTIONS in launch.env / cluster.env as the message says."},

	// Slurm.
	{Code: "env-name", Severity: diag.Error, Meaning: "An environment variable name a shell cannot export.", Fix: "Use letters, digits and _ (not starting with a digit)."},
	{Code: "env-path", Severity: diag.Warning, Meaning: "cluster.env or launch.env sets PATH to a value without /usr/bin or /bin, or with a $: the value is written literally ($PATH is not expanded) and replaces the search path the launch scripts and the workers run with, so the scripts' own commands may not be found.", Fix: "Remove PATH, or write the whole search path (with /usr/bin and the directory that holds torchrun)."},
	{Code: "env-reserved", Severity: diag.Error, Meaning: "An environment variable the launch scripts set from the plan (RANK, MASTER_ADDR, ...).", Fix: "Remove it from cluster.env / launch.env."},
	{Code: "env-value", Severity: diag.Error, Meaning: "An environment value with a NUL character.", Fix: "Remove the NUL character."},
	{Code: "option-like-path", Severity: diag.Error, Rule: "", Meaning: "A path or program of the launch (launch.python, program, workdir, parc_binary, templates, container workdir and mounts, cluster.slurm.output/error) starts with \"-\", which the program it is given to would read as an option.", Fix: "Write a path that starts with - as ./-name."},
	{Code: "launch-command", Severity: diag.Error, Meaning: "launch.python, launch.program or launch.parc_binary is empty or unusable.", Fix: "Give a program name or path."},
	{Code: "data-split", Severity: diag.Error, Rule: "", Meaning: "data.split is not a split Megatron's parse_and_normalize_split can read: more than three weights, a number float() rejects (1.2.3), or weights that sum to 0.", Fix: "Write up to three weights, train,validation,test (Megatron's default 969,30,1)."},
	{Code: "slurm-line-break", Severity: diag.Error, Meaning: "A value with a line break cannot be written in an #SBATCH directive.", Fix: "Remove the line break."},
	{Code: "slurm-time", Severity: diag.Error, Rule: "", Meaning: "cluster.slurm.time is not a Slurm time limit.", Fix: "Use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (or \"infinite\")."},
	{Code: "slurm-mem", Severity: diag.Error, Rule: "", Meaning: "cluster.slurm.mem is not a Slurm memory size.", Fix: "Use an integer with an optional K, M, G or T suffix (\"0\" = all memory)."},
	{Code: "slurm-option", Severity: diag.Error, Rule: "", Meaning: "An entry of cluster.slurm.extra is not an sbatch option.", Fix: "Write each entry as \"--option=value\"."},
	{Code: "slurm-nodes", Severity: diag.Error, Rule: "", Meaning: "cluster.slurm.extra sets the node or GPU count differently from the cluster (nodes, gpus_per_node).", Fix: "Remove the option from extra; parc derives it from cluster.nodes and gpus_per_node."},
	{Code: "slurm-cpus", Severity: diag.Error, Rule: "", Meaning: "cpus_per_task × gpus_per_node (one task per GPU) exceeds cpus_per_node.", Fix: "Lower cluster.slurm.cpus_per_task."},
	{Code: "launch-grace", Severity: diag.Warning, Rule: "", Meaning: "The workers' grace period (stop signal to SIGKILL) is shorter than the preemption warning.", Fix: "Raise launch.grace_seconds to preempt_signal_seconds (or drop it: that is the default)."},
	{Code: "slurm-segment", Severity: diag.Error, Rule: "", Meaning: "cluster.slurm.segment does not divide the node count: Slurm's block topology allocates a job in whole segments and rejects it.", Fix: "Use a segment that divides cluster.nodes (the hint lists them)."},
	{Code: "slurm-segment-domain", Severity: diag.Warning, Rule: "", Meaning: "cluster.slurm.segment keeps a different number of GPUs in one block than cluster.nvlink_domain, so the NVLink domains parc lays out and estimates are not the ones Slurm gives the job.", Fix: "Set nvlink_domain to segment × gpus_per_node."},
	{Code: "slurm-preempt", Severity: diag.Error, Rule: "", Meaning: "preempt_signal_seconds is not below the time limit, or above Slurm's limit of 65535 s.", Fix: "Use a signal lead time shorter than the time limit."},

	// Where groups sit: NVLink domains (Run, exactly, without a layout) and
	// nodes (Topology, on the rank layout).
	{Code: "tp-crosses-nvlink", Severity: diag.Error, Rule: "", Meaning: "A tensor-parallel group spans more than one NVLink domain; its all-reduces would run over the inter-node network on every layer.", Fix: "Use a tp that divides nvlink_domain (and keep the default order, which places tp innermost)."},
	{Code: "etp-crosses-nvlink", Severity: diag.Error, Rule: "", Meaning: "An expert-tensor-parallel group spans more than one NVLink domain.", Fix: "Use an etp that divides nvlink_domain."},
	{Code: "cp-crosses-node", Severity: diag.Warning, Rule: "", Meaning: "Context-parallel groups span nodes (or, where NVLink joins nodes into a larger domain, NVLink domains); their ring exchanges run over the network.", Fix: "Keep tp·cp within gpus_per_node (or nvlink_domain) if the network is slow; on a multi-node NVLink domain (NVL72) the job can instead run in Slurm segments (cluster.slurm.segment) whose GPUs tp·cp divides, with nvlink_domain set to them."},
	{Code: "ep-crosses-node", Severity: diag.Warning, Rule: "", Meaning: "Expert-parallel groups span nodes (or, where NVLink joins nodes into a larger domain, NVLink domains); the token all-to-all runs over the network. With the flex dispatcher's hybridep backend, a group that domain boundaries cut into unequal parts fails HybridEPBuffer's assert at start-up, and the message says so.", Fix: "Keep etp·ep within gpus_per_node (or nvlink_domain) if the network is slow; on a multi-node NVLink domain (NVL72) the job can instead run in Slurm segments (cluster.slurm.segment) whose GPUs etp·ep divides, with nvlink_domain set to them."},
}

var codeIndex = func() map[string]CodeInfo {
	m := make(map[string]CodeInfo, len(Codes))
	for _, c := range Codes {
		m[c.Code] = c
	}
	return m
}()

// Lookup returns the registry entry of a code.
func Lookup(code string) (CodeInfo, bool) {
	c, ok := codeIndex[code]
	return c, ok
}

// fixedBySpec are the error codes of the rules that read none of the fields
// parc solve chooses (the degrees, the micro batch, recomputation, the
// pipeline split, the optimizer sharding, the microbatch group size) nor
// anything derived from them: the model's heads and positions, the router's
// settings, the learning-rate schedule, the launch environment and
// programs, the Slurm directives. TestFixedBySpecRulesIgnoreThePlan
// checks each against plans of other degrees.
var fixedBySpec = map[string]bool{
	"query-groups-heads":     true,
	"hidden-heads":           true,
	"max-positions":          true,
	"mla-query-groups":       true,
	"mtp-position-embedding": true,
	"glu-options":            true,
	"moe-topk-experts":       true,
	"moe-expert-bias-score":  true,
	"moe-sinkhorn-aux-loss":  true,
	"moe-router-groups":      true,
	"moe-topk-pre-softmax":   true,
	"moe-capacity-balancing": true,
	"moe-pad-capacity":       true,
	"lr-min":                 true,
	"lr-warmup":              true,
	"lr-wsd-decay":           true,
	"train-iters-samples":    true,
	"ddp-buckets":            true,
	"weight-decay-schedule":  true,
	"data-split":             true,
	"env-name":               true,
	"env-reserved":           true,
	"env-value":              true,
	"launch-command":         true,
	"option-like-path":       true,
	"slurm-line-break":       true,
	"slurm-option":           true,
	"slurm-time":             true,
	"slurm-preempt":          true,
}

// fixedBySharding are the error codes of the rules that read, of the fields
// parc solve chooses, the optimizer sharding (train.distributed_optimizer,
// train.fsdp) alone: what the overlapped parameter gather and fp8 parameter
// gathering need. TestFixedByShardingRulesIgnoreThePlan checks each against
// plans of other degrees with the same sharding.
var fixedBySharding = map[string]bool{
	"overlap-param-gather": true,
	"fp8-param-gather":     true,
}

// FixedBySharding reports whether the rule behind an error code holds or
// fails whatever plan fills the spec's open fields, given its optimizer
// sharding: when one plan breaks it, every plan with that sharding does.
func FixedBySharding(code string) bool { return fixedBySharding[code] }

// FixedBySpec reports whether the rule behind an error code holds or fails
// whatever plan fills the spec's open fields: when a spec breaks it, no
// assignment parc solve could search fixes it.
func FixedBySpec(code string) bool { return fixedBySpec[code] }
