package check

import (
	"fmt"
	"slices"
	"strings"
)

// recompute checks activation recomputation (R3, R4 and the MTP rule).
func (c *checker) recompute() {
	t, p := c.s.Train, c.s.Parallel
	if t.Recompute != "full" {
		if t.RecomputeLayers != nil {
			c.report("recompute-options-unused", "train.recompute_layers", c.anyOf("recompute-options-unused", "train.recompute_layers",
				setOpt(setting{"train.recompute_layers", nil}), setOpt(setting{"train.recompute", "full"})),
				"recompute_layers=%d only applies to full recomputation (recompute=%q)", *t.RecomputeLayers, t.Recompute)
		}
		return
	}
	n := 1
	if t.RecomputeLayers != nil {
		n = *t.RecomputeLayers
	}
	if per := c.s.Model.Layers / p.PP; n > per && per > 0 {
		okR := c.near("recompute-layers-range", "train.recompute_layers", n, valuesIn(1, per, func(int) bool { return true }))
		c.report("recompute-layers-range", "train.recompute_layers",
			listHint(fmt.Sprintf("recompute_layers must be at most %d: valid values", per), okR, noValue("train.recompute_layers")),
			"recompute_layers=%d exceeds the %d layers per pipeline rank (layers=%d / pp=%d)", n, per, c.s.Model.Layers, p.PP)
	}
	if c.s.Model.MTPLayers > 0 && t.RecomputeMethod == "uniform" && n != 1 {
		c.report("recompute-mtp-uniform", "train.recompute_layers", c.anyOf("recompute-mtp-uniform", "train.recompute_layers",
			setOpt(setting{"train.recompute_layers", 1}), setOpt(setting{"train.recompute_method", "block"})),
			"full uniform recomputation with mtp_layers=%d needs recompute_layers=1, not %d", c.s.Model.MTPLayers, n)
	}
}

// cpuOffloading checks CPU activation offloading as Megatron-Core does at
// d98e8a64 (TransformerConfig.__post_init__: the layer count below
// num_layers, no pipeline parallelism, no recompute granularity, and no
// CUDA graphs but full_iteration; validate_args turns cpu_offloading on when
// --cpu-offloading-num-layers is positive).
func (c *checker) cpuOffloading() {
	s := c.s
	n := s.Train.CPUOffloadingNumLayers
	if n <= 0 {
		return
	}
	const path = "train.cpu_offloading_num_layers"
	off := opt("set train.cpu_offloading_num_layers: 0", setting{path, 0})
	if layers := s.Model.Layers; n >= layers {
		fewer := c.near("cpu-offloading", path, n, valuesIn(1, layers-1, func(int) bool { return true }))
		c.report("cpu-offloading", path,
			listHint("offload fewer layers than the model has: valid values", fewer, "set train.cpu_offloading_num_layers: 0"),
			"cpu_offloading_num_layers=%d is not below the model's %d layers (Megatron offloads at most layers-1)", n, layers)
	}
	if pp := s.Parallel.PP; pp > 1 {
		c.report("cpu-offloading", "parallel.pp", c.options("cpu-offloading", "parallel.pp", "set parallel.pp: 1, or train.cpu_offloading_num_layers: 0",
			opt("set parallel.pp: 1", setting{"parallel.pp", 1}), off),
			"CPU activation offloading (cpu_offloading_num_layers=%d) does not run with pipeline parallelism (pp=%d)", n, pp).
			Related(path, "cpu_offloading_num_layers = %d", n)
	}
	if r := s.Train.Recompute; r != "" && r != "none" {
		c.report("cpu-offloading", "train.recompute", c.options("cpu-offloading", "train.recompute", `set train.recompute: "none", or train.cpu_offloading_num_layers: 0`,
			opt(`set train.recompute: "none"`, setting{"train.recompute", "none"}), off),
			"CPU activation offloading (cpu_offloading_num_layers=%d) does not run with activation recomputation (recompute=%q)", n, r).
			Related(path, "cpu_offloading_num_layers = %d", n)
	}
	if g := c.cudaGraphImpl(); g == "local" || g == "transformer_engine" {
		c.report("cpu-offloading", "kernels.cuda_graph_impl", c.options("cpu-offloading", "kernels.cuda_graph_impl", `set kernels.cuda_graph_impl: "none", or train.cpu_offloading_num_layers: 0`,
			opt(`set kernels.cuda_graph_impl: "none"`, setting{"kernels.cuda_graph_impl", "none"}), off),
			"CPU activation offloading (cpu_offloading_num_layers=%d) does not run with per-layer CUDA graphs (cuda_graph_impl=%q)", n, g).
			Related(path, "cpu_offloading_num_layers = %d", n)
	}
}

// optimizer checks the data-parallel overlap options (O1/O2).
func (c *checker) optimizer() {
	t := c.s.Train
	if !t.OverlapParamGather {
		return
	}
	var missing []string
	var on []setting
	if !t.DistributedOptimizer && c.s.FSDP() != "megatron-fsdp" {
		missing = append(missing, "train.distributed_optimizer")
		on = append(on, setting{"train.distributed_optimizer", true})
	}
	// Megatron-LM's arguments.py asserts the pair (validate_args, "Must use
	// --overlap-param-gather with --overlap-grad-reduce" at d98e8a64);
	// Megatron-Core's DDP does not need it (param_and_grad_buffer.py
	// dispatches the parameter all-gather whatever the gradient reduction
	// does), and Megatron-Bridge, which never runs arguments.py, ran it:
	// CommOverlapConfig._get_optimizer_overlap_cfgs turns both on for
	// dp > 1 and a user's overlap_grad_reduce False overrides only that
	// one (training/comm_overlap.py at r0.1.0 684a6861). A measured run
	// is rated as it ran.
	if !t.OverlapGradReduce && !c.o.MeasuredRun {
		missing = append(missing, "train.overlap_grad_reduce")
		on = append(on, setting{"train.overlap_grad_reduce", true})
	}
	if len(missing) > 0 {
		c.report("overlap-param-gather", "train.overlap_param_gather", c.anyOf("overlap-param-gather", "train.overlap_param_gather",
			setOpt(on...), setOpt(setting{"train.overlap_param_gather", false})),
			"overlap_param_gather needs %s", strings.Join(missing, ", "))
	}
}

// training checks the training length, the LR schedule, the checkpoint
// format and the tokenizer (T1, T2, T4, T9).
func (c *checker) training() {
	t := c.s.Train
	switch {
	case t.Iters != nil && t.Samples != nil:
		c.report("train-iters-samples", "train.samples", c.anyOf("train-iters-samples", "train.samples",
			setOpt(setting{"train.samples", nil}), setOpt(setting{"train.iters", nil})),
			"train.iters=%d and train.samples=%d are both set", *t.Iters, *t.Samples)
	case t.Samples != nil:
		if t.LRDecayIters != nil {
			c.report("train-iters-samples", "train.lr_decay_iters", c.anyOf("train-iters-samples", "train.lr_decay_iters",
				setOpt(setting{"train.lr_decay_samples", *t.LRDecayIters * t.GlobalBatch}, setting{"train.lr_decay_iters", nil}).note("lr_decay_iters × global_batch"),
				setOpt(setting{"train.lr_decay_iters", nil}), c.itersFromSamples()),
				"sample-based training (train.samples) cannot use lr_decay_iters=%d", *t.LRDecayIters)
		}
		if t.LRWarmupIters != 0 {
			c.report("train-iters-samples", "train.lr_warmup_iters", c.anyOf("train-iters-samples", "train.lr_warmup_iters",
				setOpt(setting{"train.lr_warmup_samples", t.LRWarmupIters * t.GlobalBatch}, setting{"train.lr_warmup_iters", 0}).note("lr_warmup_iters × global_batch"),
				setOpt(setting{"train.lr_warmup_iters", 0}), c.itersFromSamples()),
				"sample-based training (train.samples) cannot use lr_warmup_iters=%d", t.LRWarmupIters)
		}
	case t.Iters == nil:
		c.report("train-length-missing", "train", "set train.iters (or train.samples)",
			"neither train.iters nor train.samples is set: Megatron accepts the arguments but stops when training starts")
	}
	if t.Iters != nil && t.Samples == nil {
		decay, what := *t.Iters, "train.iters"
		if t.LRDecayIters != nil {
			decay, what = *t.LRDecayIters, "lr_decay_iters"
		}
		if t.LRWarmupIters >= decay {
			hint := fmt.Sprintf("use lr_warmup_iters < %d", decay)
			if decay < 1 || !c.acceptsRange("lr-warmup", "train.lr_warmup_iters", 0, decay-1) {
				hint = noValue("train.lr_warmup_iters") + fmt.Sprintf(": the decay length %s=%d must grow first", what, decay)
			}
			c.report("lr-warmup", "train.lr_warmup_iters", hint,
				"lr_warmup_iters=%d is not below the decay length %s=%d (Megatron's scheduler asserts warmup < decay)", t.LRWarmupIters, what, decay)
		}
	}
	if t.LRDecayStyle == "WSD" && t.LRWSDDecayIters == nil && t.LRWSDDecaySamples == nil &&
		!c.hasFlag("--lr-wsd-decay-iters") && !c.hasFlag("--lr-wsd-decay-samples") {
		// The decay phase's length is the user's choice; the value offered
		// is a tenth of the decay length (MiniCPM, Hu et al. 2024,
		// arXiv 2404.06395, section 4: decaying over 10% of the tokens is
		// enough, 2.5% is not), when the plan has one. Without a training length there is nothing to
		// take a tenth of, and the hint names the field.
		wsd := "set train.lr_wsd_decay_iters (or lr_wsd_decay_samples), or "
		opts := []option{setOpt(setting{"train.lr_decay_style", "cosine"}).note("the default")}
		for _, l := range []struct {
			n          *int
			field, was string
		}{
			{t.LRDecayIters, "train.lr_wsd_decay_iters", "lr_decay_iters"}, {t.Iters, "train.lr_wsd_decay_iters", "train.iters"},
			{t.LRDecaySamples, "train.lr_wsd_decay_samples", "lr_decay_samples"}, {t.Samples, "train.lr_wsd_decay_samples", "train.samples"},
		} {
			if l.n != nil {
				opts = append([]option{setOpt(setting{l.field, max(1, *l.n/10)}).note("a tenth of " + l.was)}, opts...)
				wsd = ""
				break
			}
		}
		c.report("lr-wsd-decay", "train.lr_decay_style", wsd+c.anyOf("lr-wsd-decay", "train.lr_decay_style", opts...),
			"lr_decay_style WSD needs the length of its decay phase (lr_wsd_decay_iters), which the plan does not give")
	}
	if t.MinLR > t.LR {
		hint := fmt.Sprintf("use min_lr ≤ lr=%g", t.LR)
		if !c.acceptsAll("lr-min", setting{"train.min_lr", t.LR}) || !c.acceptsAll("lr-min", setting{"train.min_lr", t.LR / 2}) ||
			!c.acceptsAll("lr-min", setting{"train.min_lr", 0.0}) {
			hint = noValue("train.min_lr")
		}
		c.report("lr-min", "train.min_lr", hint,
			"min_lr=%g is larger than lr=%g", t.MinLR, t.LR).
			Related("train.lr", "lr = %g", t.LR)
	}

	if ck := c.s.Checkpoint; ck != nil {
		p := c.s.Parallel
		switch {
		case ck.Format == "fsdp_dtensor" && c.s.FSDP() != "megatron-fsdp":
			c.report("checkpoint-format", "checkpoint.format", c.options("checkpoint-format", "checkpoint.format", `use checkpoint.format "torch_dist", or set train.fsdp: true`,
				opt(`use checkpoint.format "torch_dist"`, setting{"checkpoint.format", "torch_dist"}), opt("set train.fsdp: true", setting{"train.fsdp", true})),
				"checkpoint format fsdp_dtensor needs Megatron-FSDP (--use-megatron-fsdp)")
		case ck.Format == "torch_dcp" && (c.s.FSDP() != "torch-fsdp2" || p.TP > 1 || p.PP > 1):
			c.report("checkpoint-format", "checkpoint.format", c.options("checkpoint-format", "checkpoint.format", `use checkpoint.format "torch_dist"`,
				opt(`use checkpoint.format "torch_dist"`, setting{"checkpoint.format", "torch_dist"})),
				"checkpoint format torch_dcp needs torch FSDP2 (--use-torch-fsdp2) with tp=1 and pp=1 (tp=%d, pp=%d)", p.TP, p.PP)
		}
	}

	tk := c.s.Data.Tokenizer
	var missing []string
	switch tk.Type {
	case "GPT2BPETokenizer":
		if tk.VocabFile == nil {
			missing = append(missing, "data.tokenizer.vocab_file")
		}
		if tk.MergeFile == nil {
			missing = append(missing, "data.tokenizer.merge_file")
		}
	case "SentencePieceTokenizer", "GPTSentencePieceTokenizer", "HuggingFaceTokenizer", "Llama2Tokenizer", "TikTokenizer":
		if tk.Model == nil {
			missing = append(missing, "data.tokenizer.model")
		}
	}
	if len(missing) > 0 {
		c.report("tokenizer-files", missing[0], "set "+strings.Join(missing, ", ")+", or "+c.anyOf("tokenizer-files", missing[0],
			setOpt(setting{"data.tokenizer.type", "NullTokenizer"}).note("no files: mock data only")),
			"tokenizer %s needs %s", tk.Type, strings.Join(missing, ", "))
	}
}

// fsdpOptions checks what torch FSDP2 and Megatron-FSDP (turned on through
// launch.extra_args) need from the rest of the plan (O4/O5).
func (c *checker) fsdpOptions() {
	s, p := c.s, c.s.Parallel
	format := "torch_dist" // Megatron's default --ckpt-format
	if s.Train.FSDP {
		format = "fsdp_dtensor" // what the Megatron target passes without a checkpoint block
	}
	if s.Checkpoint != nil {
		format = s.Checkpoint.Format
	}
	if t := s.Train; t.FSDPManualRegistration && (!t.FSDP || !t.NCCLUB) {
		c.report("fsdp-options", "train.fsdp_manual_registration", c.options("fsdp-options", "train.fsdp_manual_registration", "set train.fsdp and train.nccl_ub to true, or fsdp_manual_registration: false",
			opt("set train.fsdp and train.nccl_ub to true", setting{"train.fsdp", true}, setting{"train.nccl_ub", true}),
			opt("set train.fsdp_manual_registration: false", setting{"train.fsdp_manual_registration", false})),
			"fsdp_manual_registration registers Megatron-FSDP's buffers with NCCL user buffers: it needs train.fsdp and train.nccl_ub")
	}
	if t := s.Train; !t.FSDP {
		var set []string
		var defaults []setting // the fields set, back at their defaults
		if v := t.DataParallelShardingStrategy; v != "" && v != "optim_grads_params" {
			set = append(set, "train.data_parallel_sharding_strategy")
			defaults = append(defaults, setting{"train.data_parallel_sharding_strategy", removed{"optim_grads_params"}})
		}
		if t.FSDPDoubleBuffer {
			set = append(set, "train.fsdp_double_buffer")
			defaults = append(defaults, setting{"train.fsdp_double_buffer", removed{false}})
		}
		for _, f := range []struct{ path, v, def string }{
			{"train.megatron_fsdp_main_params_dtype", t.MegatronFSDPMainParamsDtype, "fp32"},
			{"train.megatron_fsdp_main_grads_dtype", t.MegatronFSDPMainGradsDtype, "auto"},
			{"train.megatron_fsdp_grad_comm_dtype", t.MegatronFSDPGradCommDtype, "auto"},
		} {
			if f.v != "" && f.v != f.def {
				set = append(set, f.path)
				defaults = append(defaults, setting{f.path, removed{f.def}})
			}
		}
		if len(set) > 0 {
			c.report("fsdp-options-unused", set[0], c.anyOf("fsdp-options-unused", set[0], setOpt(defaults...), setOpt(setting{"train.fsdp", true})),
				"%s only apply to Megatron-FSDP (train.fsdp), which is off", strings.Join(set, ", "))
		}
	}
	if s.Train.FSDP && hasArg(s.Launch.ExtraArgs, "--use-torch-fsdp2") {
		c.report("fsdp-options", "train.fsdp", "use one FSDP: "+c.anyOf("fsdp-options", "train.fsdp",
			setOpt(setting{"train.fsdp", false}), c.withoutExtraArg("--use-torch-fsdp2")),
			"train.fsdp turns on Megatron-FSDP, but launch.extra_args also passes --use-torch-fsdp2")
	}
	var bad []string
	var fix []setting
	path := "launch.extra_args"
	switch c.s.FSDP() {
	case "torch-fsdp2":
		if p.PP > 1 {
			bad = append(bad, fmt.Sprintf("pipeline parallelism (pp=%d)", p.PP))
			fix = append(fix, setting{"parallel.pp", 1})
		}
		if p.EP > 1 {
			bad = append(bad, fmt.Sprintf("expert parallelism (ep=%d)", p.EP))
			fix = append(fix, setting{"parallel.ep", 1})
		}
		if s.Train.DistributedOptimizer {
			bad = append(bad, "the distributed optimizer (train.distributed_optimizer)")
			fix = append(fix, setting{"train.distributed_optimizer", false})
		}
		if s.Kernels.GradientAccumulationFusion && !hasArg(s.Launch.ExtraArgs, "--no-gradient-accumulation-fusion") {
			bad = append(bad, "gradient accumulation fusion (kernels.gradient_accumulation_fusion)")
			fix = append(fix, setting{"kernels.gradient_accumulation_fusion", false})
		}
		if format != "torch_dist" && format != "torch_dcp" {
			bad = append(bad, fmt.Sprintf("checkpoint format %s (use torch_dist or torch_dcp)", format))
			fix = append(fix, setting{"checkpoint.format", "torch_dist"})
		}
		if s.Model.TieEmbeddings {
			bad = append(bad, "tied embeddings (model.tie_embeddings)")
			fix = append(fix, setting{"model.tie_embeddings", false})
		}
		if s.Train.Precision == "fp16" {
			bad = append(bad, "fp16")
			fix = append(fix, setting{"train.precision", "bf16"})
		}
		if len(bad) > 0 {
			c.report("fsdp-options", path, c.anyOf("fsdp-options", path, setOpt(fix...), c.withoutExtraArg("--use-torch-fsdp2")),
				"--use-torch-fsdp2 does not support %s", strings.Join(bad, ", "))
		}
	case "megatron-fsdp":
		if format != "fsdp_dtensor" {
			c.report("fsdp-options", "checkpoint.format", c.options("fsdp-options", "checkpoint.format", `set checkpoint.format: "fsdp_dtensor"`,
				opt(`set checkpoint.format: "fsdp_dtensor"`, setting{"checkpoint.format", "fsdp_dtensor"})),
				"Megatron-FSDP (--use-megatron-fsdp) requires the fsdp_dtensor checkpoint format, not %s", format)
		}
	}
}

// itersFromSamples is the option of training by iterations instead of
// samples: iters = samples / global_batch, rounded up.
func (c *checker) itersFromSamples() option {
	t := c.s.Train
	return setOpt(setting{"train.iters", (*t.Samples + t.GlobalBatch - 1) / max(t.GlobalBatch, 1)}, setting{"train.samples", nil}).
		note("samples / global_batch, rounded up")
}

// samplesFromIters is the option of training by samples instead of
// iterations: samples = iters × global_batch.
func (c *checker) samplesFromIters() option {
	t := c.s.Train
	return setOpt(setting{"train.samples", *t.Iters * t.GlobalBatch}, setting{"train.iters", nil}).note("iters × global_batch")
}

// withoutExtraArg is the option of removing an argument from
// launch.extra_args.
func (c *checker) withoutExtraArg(arg string) option {
	rest := slices.DeleteFunc(slices.Clone(c.s.Launch.ExtraArgs), func(a string) bool { return a == arg })
	if rest == nil {
		rest = []string{}
	}
	return setOpt(setting{"launch.extra_args", rest})
}

// ddpBuckets checks the data-parallel bucket options: one of size and count
// (DistributedDataParallelConfig.__post_init__ at d98e8a64), and either only
// where Megatron's DDP cuts buckets (resolve_ddp_bucket_size: none without
// overlap_grad_reduce; Megatron-FSDP groups by FSDP unit).
func (c *checker) ddpBuckets() {
	t := c.s.Train
	if t.DDPBucketSize == nil && t.DDPNumBuckets == nil {
		return
	}
	if t.DDPBucketSize != nil && t.DDPNumBuckets != nil {
		c.report("ddp-buckets", "train.ddp_num_buckets", c.anyOf("ddp-buckets", "train.ddp_num_buckets",
			setOpt(setting{"train.ddp_num_buckets", nil}), setOpt(setting{"train.ddp_bucket_size", nil})),
			"train.ddp_bucket_size=%d and train.ddp_num_buckets=%d are both set", *t.DDPBucketSize, *t.DDPNumBuckets)
		return
	}
	path := "train.ddp_bucket_size"
	if t.DDPNumBuckets != nil {
		path = "train.ddp_num_buckets"
	}
	switch {
	case t.FSDP:
		c.report("ddp-buckets-unused", path, c.anyOf("ddp-buckets-unused", path, setOpt(setting{path, nil})),
			"%s has no effect with Megatron-FSDP, which buckets the parameters by FSDP unit", path)
	case !t.OverlapGradReduce:
		c.report("ddp-buckets-unused", path, c.anyOf("ddp-buckets-unused", path,
			setOpt(setting{path, nil}), setOpt(setting{"train.overlap_grad_reduce", true})),
			"%s has no effect without train.overlap_grad_reduce: Megatron keeps every parameter in one bucket", path)
	}
}
