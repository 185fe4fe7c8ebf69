package megatron

// DefaultDifference is a spec field whose default in parc's schema differs
// from Megatron's default for the argparse dest the field sets: a plan that
// leaves the field out gives Megatron Parc, a Megatron argument list that
// leaves the option out means Megatron's own default (Defaults[Dest]).
type DefaultDifference struct {
	Field  string // spec path ("train.adam_beta2")
	Option string // the option parc writes ("--adam-beta2")
	Dest   string // its argparse dest
	// Parc is the value Megatron's parser gets from the argument parc writes
	// for the schema default (as Parse returns it: bool, int64, float64,
	// string, []any for options with several values). For parallel.sp it
	// holds when tp > 1.
	Parc   any
	Reason string
}

// Megatron returns Megatron's default for the dest (nil for None).
func (d DefaultDifference) Megatron() any { return Defaults[d.Dest] }

// DefaultDifferences lists every schema default that differs from Megatron's
// (at d98e8a64, defaults.tsv), each chosen deliberately; TestDefaultDifferences
// derives the list from what parc emits for default plans and fails when it
// is incomplete or stale. The README's table is generated from it.
var DefaultDifferences = []DefaultDifference{
	{"train.precision", "--bf16", "bf16", true,
		"bf16 is how every current GPU trains large models; Megatron's default is fp32 (neither --bf16 nor --fp16)."},
	{"parallel.sp", "--sequence-parallel", "sequence_parallel", true,
		"With tp > 1, sequence parallelism divides the LayerNorm/dropout activations by tp at no extra communication volume (Korthikanti et al., 2022); Megatron requires it for MoE with tp > 1. Off at tp = 1, as Megatron switches it off there."},
	{"train.lr", "--lr", "lr", 3.0e-4,
		"Megatron has no default (None; training needs one); 3e-4 is GPT-3 Small's and Llama 2 7B's peak LR."},
	{"train.min_lr", "--min-lr", "min_lr", 3.0e-5,
		"Decay to a tenth of the peak LR, as GPT-3 and Llama do; Megatron decays to 0."},
	{"train.lr_decay_style", "--lr-decay-style", "lr_decay_style", "cosine",
		"Cosine decay, as GPT-3, Llama and Megatron's own Llama/Mixtral examples use; Megatron's default is linear."},
	{"train.weight_decay", "--weight-decay", "weight_decay", 0.1,
		"0.1, as GPT-3 and Llama use (AdamW); Megatron's default is 0.01."},
	{"train.adam_beta2", "--adam-beta2", "adam_beta2", 0.95,
		"0.95, as GPT-3 and Llama use for stability at large batch sizes; Megatron's default is 0.999."},
	{"train.attention_dropout", "--attention-dropout", "attention_dropout", 0.0,
		"No dropout in pre-training, as Llama and Megatron's own Llama/Mixtral/DeepSeek examples set; Megatron's default is 0.1."},
	{"train.hidden_dropout", "--hidden-dropout", "hidden_dropout", 0.0,
		"No dropout in pre-training (see attention_dropout); Megatron's default is 0.1."},
	{"data.mock", "--mock-data", "mock_data", true,
		"A plan runs on Megatron's synthetic data until data.paths names a dataset; Megatron needs one of the two."},
	{"data.tokenizer.type", "--tokenizer-type", "tokenizer_type", "NullTokenizer",
		"With mock data no tokenizer files are needed; Megatron has no default (None)."},
	{"checkpoint.interval", "--save-interval", "save_interval", int64(1000),
		"Megatron has no default and asserts one when --save is given; every 1000 iterations."},
	{"logging.interval", "--log-interval", "log_interval", int64(10),
		"Progress every 10 iterations, visible on short runs; Megatron's default is 100."},
	{"logging.eval_interval", "--eval-interval", "eval_interval", int64(1000),
		"Evaluate every 1000 iterations; Megatron's None stops pretraining at start-up (training.py divides train_iters by it) unless --full-validation or --skip-train; null leaves the option out."},
	{"logging.eval_iters", "--eval-iters", "eval_iters", int64(10),
		"10 evaluation iterations keep evaluation short; Megatron's default is 100."},
	{"logging.log_throughput", "--log-throughput", "log_throughput", true,
		"Throughput in the log, to compare with parc's estimate; Megatron's default is off."},
	{"train.overlap_grad_reduce", "--overlap-grad-reduce", "overlap_grad_reduce", true,
		"Gradient reduction overlapped with the backward pass, bucket by bucket, as Megatron-LM's example scripts (examples/llama/train_llama3_8b_h100_fp8.sh, examples/mixtral/train_mixtral_8x7b_distributed.sh at d98e8a64) and NVIDIA's performance recipes run; same results, and Megatron's default (off) leaves the whole reduction exposed after backward."},
	{"train.overlap_param_gather", "--overlap-param-gather", "overlap_param_gather", true,
		"With the distributed optimizer or Megatron-FSDP (and overlap_grad_reduce), the parameter all-gather overlapped with the forward pass, as Megatron-LM's examples and NVIDIA's recipes run; off otherwise, where Megatron rejects it. Megatron's default is off."},
	{"train.grad_reduce_in_bf16", "--grad-reduce-in-bf16", "grad_reduce_in_bf16", true,
		"Where the model trains in bf16 (precision bf16, or fp8 on bf16), gradients reduced across data-parallel ranks in bf16: half the gradient buffer and half the data-parallel traffic, as most of NVIDIA's performance recipes run (Megatron-Bridge's and NeMo's performance scripts set grad_reduce_in_fp32 false): of the measured runs in internal/estimate/testdata/measured that record the setting, 604 reduce in bf16 and 18 in fp32 (Megatron-LM's 2024 README runs, whose r0.8.0 forced fp32 for bf16; the Llama 3 paper's; DGX Cloud v25.05's DeepSeek-V3 in bf16, whose NeMo recipe keeps fp32; two Megatron-Bridge model cards). Off for fp16 and fp32, where Megatron ignores it. Megatron's default is fp32 (validate_args sets accumulate_allreduce_grads_in_fp32 for bf16 unless --grad-reduce-in-bf16)."},
	{"parallel.tp_comm_overlap", "--tp-comm-overlap", "tp_comm_overlap", true,
		"With tp > 1 and sequence parallelism on Hopper or later GPUs, tensor-parallel communication overlapped with the GEMMs through Transformer Engine's userbuffers, as NVIDIA's performance recipes run: of the measured runs in internal/estimate/testdata/measured with tp > 1 that record the setting (Megatron-Bridge, DGX Cloud, Megatron-LM's DeepSeek-V3 guide, NeMo), 218 have it on and 6 off. Off otherwise, and with deterministic_mode, where Megatron rejects it. Megatron's default is off."},
	{"model.moe.dispatcher", "--moe-token-dispatcher-type", "moe_token_dispatcher_type", "alltoall",
		"All-to-all token dispatch, which Megatron's MoE examples and recipes use with expert parallelism; Megatron's default is allgather."},
	{"model.moe.grouped_gemm", "--moe-grouped-gemm", "moe_grouped_gemm", true,
		"Grouped GEMM for the local experts (same results, faster), as Megatron's MoE examples use; Megatron's default is off."},
	{"kernels.bias_dropout_fusion", "--no-bias-dropout-fusion", "bias_dropout_fusion", false,
		"Off only where the routed experts are Transformer Engine's grouped MLP (model.moe.grouped_gemm, parc's default) with linear biases, which refuses the fused bias-dropout-add when Megatron builds it (TEGroupedMLP.__init__, moe/experts.py at d98e8a64), as Megatron-Bridge's GPT-OSS provider sets it; on elsewhere, Megatron's default. Set true, such a plan is rejected (moe-bias-dropout-fusion)."},
	{"kernels.bias_gelu_fusion", "--no-bias-gelu-fusion", "bias_gelu_fusion", false,
		"Off only where Megatron's fused bias-activation cannot run the MLP with linear biases and stops at the first forward: gelu in the routed experts, quick_geglu in a dense layer's MLP (moe/experts.py, mlp.py at d98e8a64); on elsewhere, Megatron's default. Set true, such a plan is rejected (bias-activation-fusion)."},
	{"model.moe.aux_loss_coeff", "--moe-aux-loss-coeff", "moe_aux_loss_coeff", []any{1e-2},
		"1e-2, the load-balancing loss weight of Switch Transformer and Mixtral; Megatron's default 0 makes the aux_loss balancing a no-op."},
}

// DefaultDifferenceOf returns the entry of a spec field, if its default
// differs from Megatron's.
func DefaultDifferenceOf(field string) (DefaultDifference, bool) {
	for _, d := range DefaultDifferences {
		if d.Field == field {
			return d, true
		}
	}
	return DefaultDifference{}, false
}
