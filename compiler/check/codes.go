package check

import "parc.dev/parc/compiler/diag"

// CodeInfo describes one diagnostic code: its severity, what it means and how
// to fix it. README.md carries the same table (see TestREADMECodes).
type CodeInfo struct {
	Code     string
	Severity diag.Severity
	// Rule names the Megatron-Core rule(s) in /shared/notes/megatron-rules.md
	// that the code mirrors ("" for rules Megatron cannot see).
	Rule    string
	Meaning string
	Fix     string
}

// Codes lists every code the check stage emits, grouped by topic.
var Codes = []CodeInfo{
	// Ranges.
	{"value-range", diag.Error, "", "A count that must be at least 1 is 0 or negative (only possible for specs built in Go, the schema rejects it).", "Set the field to a positive integer."},

	// World size and the parallel grids.
	{"world-size", diag.Error, "W1", "The cluster has fewer GPUs (nodes × gpus_per_node) than one model replica needs (tp·pp·cp).", "Add nodes, or lower tp, pp or cp; the hint lists what fits."},
	{"world-not-divisible", diag.Error, "W1/W2", "The world size is not a multiple of tp·pp·cp, so Megatron cannot derive an integer data-parallel size.", "Pick tp, pp and cp whose product divides nodes × gpus_per_node (the hint lists valid values), or change the node count."},
	{"expert-grid-not-divisible", diag.Error, "W3", "The world size is not a multiple of etp·ep·pp, the expert grid Megatron builds beside the dense one.", "Pick ep and etp whose product with pp divides the world size."},
	{"order-unsupported", diag.Error, "W6", "parallel.order is neither of the two rank orders Megatron's training entry point can build.", "Use \"tp-cp-ep-dp-pp\" (default) or \"tp-cp-ep-pp-dp\" (--use-tp-pp-dp-mapping)."},
	{"order-pp-last", diag.Error, "W4/W5", "With the tp-cp-ep-pp-dp order and pp > 1, the dense and expert data-parallel sizes must be equal (etp·ep = tp·cp).", "Use the default order tp-cp-ep-dp-pp, or choose ep and etp with etp·ep = tp·cp."},
	{"dp-mismatch", diag.Error, "", "parallel.dp was given but differs from the data-parallel size the grid implies (world / (tp·pp·cp)).", "Drop parallel.dp (it is derived) or change the node count to match it."},
	{"distopt-instances", diag.Error, "W8/W9", "dp·cp or the expert data-parallel size is not a multiple of distributed_optimizer_instances.", "Choose a number of optimizer instances that divides both dp·cp and the expert dp."},
	{"nvlink-domain", diag.Error, "", "cluster.nvlink_domain is neither a divisor nor a multiple of gpus_per_node, which no real machine has.", "Set nvlink_domain to the GPUs that share NVLink: gpus_per_node for a DGX/HGX, 72 for NVL72."},

	// Attention heads, hidden size, FFN.
	{"tp-heads", diag.Error, "S1", "tp does not divide the number of attention heads.", "Use a tp that divides model.heads (the hint lists them)."},
	{"tp-query-groups", diag.Error, "S2", "The number of query groups is neither a multiple nor a divisor of tp.", "Use a tp that divides query_groups or is a multiple of it."},
	{"query-groups-heads", diag.Error, "S7/S10", "The number of query groups does not divide the number of heads (Transformer Engine and the attention split need heads / groups to be whole).", "Use a query_groups value that divides model.heads."},
	{"hidden-heads", diag.Error, "S3", "hidden is not divisible by heads and kv_channels is not given, so Megatron cannot derive the head dimension.", "Make heads divide hidden, or set model.kv_channels explicitly."},
	{"max-positions", diag.Error, "S6", "max_position_embeddings is smaller than the sequence length.", "Raise model.max_position_embeddings to at least train.seq_length (or drop it: it defaults to seq_length)."},
	{"mla-query-groups", diag.Error, "S11", "Multi-latent attention and grouped-query attention (query_groups) are mutually exclusive.", "Remove model.query_groups or model.mla."},
	{"ffn-tp", diag.Error, "S8", "The FFN hidden size is not divisible by tp, so the column/row-parallel MLP split fails when the model is built.", "Choose a tp that divides ffn_hidden, or set model.ffn_hidden to a multiple of tp."},
	{"mtp-position-embedding", diag.Error, "", "Multi-token prediction needs rope or no position embedding; Megatron rejects it with learned_absolute.", "Set model.position_embedding to \"rope\" or \"none\", or mtp_layers to 0."},

	// Pipeline split.
	{"pp-layers", diag.Error, "P6/P9/P16/P17", "The decoder layers (plus one each for account_for_embedding / account_for_loss) do not split evenly over pp stages.", "Use a pp that divides the layer count (the hint lists them), or an uneven split with first_stage_layers / last_stage_layers."},
	{"vpp-layers", diag.Error, "P8/P17", "The layers of one pipeline rank do not split evenly over vpp virtual stages.", "Use a vpp that divides the layers per pipeline rank."},
	{"vpp-pp", diag.Error, "P7a/P7b/W10", "The interleaved schedule (vpp > 1) needs pp > 1, and pp > 2 when overlap_p2p is off.", "Set vpp to 1, or raise pp."},
	{"uneven-account-for", diag.Error, "P15", "An uneven pipeline (first_stage_layers / last_stage_layers) cannot be combined with account_for_embedding / account_for_loss.", "Use one or the other."},
	{"uneven-stage-layers", diag.Error, "P10", "first_stage_layers or last_stage_layers is not positive.", "Give the first/last stage at least one layer."},
	{"uneven-vpp", diag.Error, "P11/P14", "With an uneven pipeline and vpp > 1, the first, last and each middle stage's layer count must be divisible by vpp.", "Choose stage layer counts that are multiples of vpp, or set vpp to 1."},
	{"uneven-middle", diag.Error, "P12/P13/P24", "The layers left for the middle stages (layers − first − last) do not split evenly over the middle stages, or there are middle layers but no middle stage (or the reverse).", "Choose first/last stage layers so the rest divides by the number of middle stages."},
	{"uneven-middle-negative", diag.Warning, "", "first_stage_layers + last_stage_layers exceed the layer count; Megatron accepts this but the stages do not hold the layers you asked for.", "Lower first_stage_layers / last_stage_layers."},
	{"uneven-single-stage", diag.Warning, "", "first_stage_layers / last_stage_layers with pp = 1: Megatron accepts it, but the single stage builds last_stage_layers (or first_stage_layers) layers, not the model's layer count.", "Remove first_stage_layers / last_stage_layers when pp = 1."},
	{"interleave-microbatches", diag.Error, "P25/P26", "The interleaved schedule needs the number of microbatches M ≥ the microbatch group N (default pp) ≥ pp, and M mod N either 0 or ≥ pp.", "Change the global batch (the hint gives the nearest valid ones) or microbatch_group_size."},
	{"microbatch-group-unused", diag.Warning, "", "microbatch_group_size only matters for the interleaved schedule (vpp > 1); it is ignored here.", "Remove parallel.microbatch_group_size, or use vpp > 1."},

	// Batch.
	{"global-batch", diag.Error, "B4/B5", "The global batch is not a positive multiple of micro_batch × dp.", "Use a global batch that is a multiple of micro_batch·dp (the hint gives the nearest)."},

	// Context and sequence parallelism.
	{"cp-seq-length", diag.Error, "C1", "With cp > 1 the sequence length must be a multiple of 2·cp (load-balanced causal chunks).", "Use a seq_length that is a multiple of 2·cp, or another cp."},
	{"cp-hierarchical", diag.Error, "C2/W13", "The product of hierarchical_cp sizes is not cp.", "Make the hierarchical sizes multiply to parallel.cp."},
	{"cp-a2a-p2p", diag.Error, "C3", "cp_comm_type a2a+p2p needs hierarchical_cp sizes.", "Set parallel.hierarchical_cp (e.g. [a2a size, p2p size]) or use another cp_comm_type."},
	{"sp-seq-length", diag.Error, "", "With sequence parallelism the sequence chunk of each CP rank (seq_length / cp) must split evenly over tp ranks; the first scatter fails otherwise.", "Use a seq_length that is a multiple of tp·cp."},
	{"sp-without-tp", diag.Warning, "Q1", "Sequence parallelism was asked for with tp = 1; Megatron switches it off.", "Remove parallel.sp or raise tp."},
	{"moe-sp-required", diag.Error, "Q4", "An MoE model with tp > 1 must use sequence parallelism; Megatron raises at the first training step otherwise.", "Set parallel.sp to true (the default when tp > 1)."},

	// Mixture of experts.
	{"ep-without-moe", diag.Error, "M2", "ep > 1 but the model has no experts.", "Set ep to 1 or add model.moe."},
	{"etp-without-moe", diag.Warning, "", "etp was given for a dense model; it only shapes the (unused) expert grid.", "Remove parallel.etp."},
	{"ep-experts", diag.Error, "M3", "The number of experts is not a multiple of ep.", "Use an ep that divides model.moe.experts (the hint lists them)."},
	{"moe-bias-etp", diag.Error, "M4", "MoE with linear biases (model.bias, on by default as in Megatron) needs etp = 1.", "Set model.bias to false (--disable-bias-linear) or parallel.etp to 1."},
	{"moe-topk-pre-softmax", diag.Error, "M5", "topk = 1 with the softmax score function needs router_pre_softmax (softmax over one value has zero gradient).", "Set model.moe.router_pre_softmax to true, or use topk ≥ 2 or sinkhorn."},
	{"moe-capacity-balancing", diag.Error, "M6", "capacity_factor only works with aux_loss, seq_aux_loss, global_aux_loss or none load balancing.", "Remove capacity_factor or change router_load_balancing."},
	{"moe-expert-bias-score", diag.Error, "M10", "expert_bias (aux-loss-free balancing) needs the sigmoid score function.", "Set model.moe.score_function to \"sigmoid\" or expert_bias to false."},
	{"moe-sinkhorn-aux-loss", diag.Error, "M19", "Sinkhorn load balancing does not support an auxiliary loss; the router asserts aux_loss_coeff == 0.", "Set model.moe.aux_loss_coeff to 0, or use another load balancing."},
	{"moe-topk-experts", diag.Error, "M20", "topk is larger than the number of experts; torch.topk fails at the first step.", "Use topk ≤ experts."},
	{"moe-ffn-etp", diag.Error, "S9", "The expert FFN hidden size is not divisible by etp, so the expert linears cannot be split.", "Choose an etp that divides moe.ffn_hidden."},
	{"moe-shared-ffn-tp", diag.Error, "S8", "The shared-expert FFN size is not divisible by tp (the shared expert is split over the tensor-parallel group).", "Make moe.shared_ffn_hidden a multiple of tp."},
	{"moe-grouped-gemm-gpu", diag.Error, "M16", "Grouped GEMM needs compute capability 8.0 or higher.", "Set model.moe.grouped_gemm to false on this GPU."},
	{"moe-no-layers", diag.Warning, "", "dense_layers and layer_freq leave no MoE layer in the model.", "Lower model.moe.dense_layers or layer_freq."},

	// Precision.
	{"precision-fp8-gpu", diag.Error, "", "The FP8 recipe is not supported by this GPU (Transformer Engine: fp8 needs compute capability ≥ 8.9, blockwise ≥ 9.0, mxfp8 10.x–11.x).", "Choose a recipe the GPU supports (the hint lists them) or train.precision \"bf16\"."},
	{"precision-bf16-gpu", diag.Warning, "", "bf16 needs compute capability 8.0 or higher (A100 and later).", "Use train.precision \"fp16\" on this GPU."},

	// Recomputation.
	{"recompute-layers-range", diag.Warning, "R3", "recompute_layers exceeds the layers per pipeline rank; Megatron accepts it and recomputes every layer.", "Use a value between 1 and layers/pp."},
	{"recompute-mtp-uniform", diag.Error, "", "Full uniform recomputation with MTP layers needs recompute_layers = 1 (Megatron asserts it in the MTP block).", "Set train.recompute_layers to 1 or recompute_method to \"block\"."},
	{"recompute-options-unused", diag.Warning, "R4", "recompute_layers only applies to full recomputation; it is ignored here.", "Remove train.recompute_layers, or set train.recompute to \"full\"."},

	// Optimizer and overlap.
	{"overlap-param-gather", diag.Error, "O1/O2", "overlap_param_gather needs the distributed optimizer and overlap_grad_reduce.", "Set train.distributed_optimizer and train.overlap_grad_reduce to true, or overlap_param_gather to false."},

	// Training length and schedule.
	{"train-iters-samples", diag.Error, "T1/T2", "Iteration-based and sample-based options are mixed (iters with samples, or samples with lr_decay_iters / lr_warmup_iters).", "Use train.iters with the *_iters options, or train.samples without them."},
	{"train-length-missing", diag.Error, "T9", "Neither train.iters nor train.samples is given; Megatron stops before the first step.", "Set train.iters (or train.samples)."},
	{"lr-warmup", diag.Error, "", "lr_warmup_iters is not below the LR decay length (lr_decay_iters, default train.iters); Megatron's LR scheduler asserts warmup < decay when it is built.", "Use fewer warmup iterations, or a longer decay."},
	{"lr-wsd-decay", diag.Error, "", "The WSD LR schedule needs the length of its decay phase, which only --lr-wsd-decay-iters (or -samples) gives; the scheduler asserts it when built.", "Add --lr-wsd-decay-iters=N to launch.extra_args, or use another lr_decay_style."},
	{"lr-min", diag.Error, "T4", "min_lr is larger than lr.", "Set train.min_lr ≤ train.lr."},

	// Checkpoint and data.
	{"checkpoint-format", diag.Error, "", "The checkpoint format needs an FSDP mode that the plan does not use (fsdp_dtensor: Megatron-FSDP; torch_dcp: torch FSDP2 with tp = pp = 1).", "Use checkpoint.format \"torch_dist\"."},
	{"fsdp-options", diag.Error, "O4/O5", "FSDP was turned on in launch.extra_args with options it does not support (torch FSDP2: pp, ep, the distributed optimizer, gradient-accumulation fusion, tied embeddings, fp16; Megatron-FSDP: any checkpoint format but fsdp_dtensor).", "Change the listed options, or drop the FSDP flag."},
	{"tokenizer-files", diag.Error, "", "The tokenizer type needs files the spec does not give (GPT2BPETokenizer: vocab_file and merge_file; SentencePiece, HuggingFace, Llama2, TikToken: model).", "Set data.tokenizer.model / vocab_file / merge_file, or use NullTokenizer."},

	// Launch environment.
	{"cuda-max-connections", diag.Error, "C5/O4/O5", "CUDA_DEVICE_MAX_CONNECTIONS contradicts the plan: tp or cp > 1 before Blackwell needs it to be 1; FSDP needs it not to be 1.", "Set (or unset) CUDA_DEVICE_MAX_CONNECTIONS in launch.env / cluster.env as the message says."},

	// Slurm.
	{"slurm-time", diag.Error, "", "cluster.slurm.time is not a Slurm time limit.", "Use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (or \"infinite\")."},
	{"slurm-mem", diag.Error, "", "cluster.slurm.mem is not a Slurm memory size.", "Use an integer with an optional K, M, G or T suffix (\"0\" = all memory)."},
	{"slurm-option", diag.Error, "", "An entry of cluster.slurm.extra is not an sbatch option.", "Write each entry as \"--option=value\"."},
	{"slurm-nodes", diag.Error, "", "cluster.slurm.extra sets the node or GPU count differently from the cluster (nodes, gpus_per_node).", "Remove the option from extra; parc derives it from cluster.nodes and gpus_per_node."},
	{"slurm-cpus", diag.Error, "", "cpus_per_task × gpus_per_node (one task per GPU) exceeds cpus_per_node.", "Lower cluster.slurm.cpus_per_task."},
	{"slurm-preempt", diag.Error, "", "preempt_signal_seconds is not below the time limit, or above Slurm's limit of 65535 s.", "Use a signal lead time shorter than the time limit."},

	// Topology (needs the rank layout).
	{"tp-crosses-nvlink", diag.Error, "", "A tensor-parallel group spans more than one NVLink domain; its all-reduces would run over the inter-node network on every layer.", "Use a tp that divides nvlink_domain (and keep the default order, which places tp innermost)."},
	{"etp-crosses-nvlink", diag.Error, "", "An expert-tensor-parallel group spans more than one NVLink domain.", "Use an etp that divides nvlink_domain."},
	{"cp-crosses-node", diag.Warning, "", "Context-parallel groups span nodes; their ring exchanges run over the network.", "Keep tp·cp within gpus_per_node if the network is slow."},
	{"ep-crosses-node", diag.Warning, "", "Expert-parallel groups span nodes; the token all-to-all runs over the network.", "Keep etp·ep within gpus_per_node if the network is slow."},
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
