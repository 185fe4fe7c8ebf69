package check

// optimizerChoice checks train.optimizer against what Megatron-LM supports
// with it (d98e8a64):
//   - an emerging optimizer (muon, lion, adaptive_muon, soap: anything but
//     adam and sgd) takes neither torch FSDP2 nor Megatron-FSDP, and only the
//     torch and torch_dist checkpoint formats (validate_args, O5/O7);
//   - the precision-aware optimizer is Transformer Engine's FusedAdam: adam
//     only (OptimizerConfig.__post_init__, O9);
//   - an emerging optimizer takes no fp16, and its layer-wise distributed
//     optimizer no overlap_param_gather_with_optimizer_step
//     (get_megatron_optimizer, megatron/core/optimizer/__init__.py, O10).
func (c *checker) optimizerChoice() {
	s, t := c.s, &c.s.Train
	const path = "train.optimizer"
	name := t.OptimizerName()
	adam := opt(`set train.optimizer: "adam"`, setting{path, "adam"})
	if t.PrecisionAwareOptim && name != "adam" {
		// Without the precision-aware optimizer its dtypes must be fp32
		// (optimizer-dtypes): the option sets back those that are not.
		off := []setting{{"train.precision_aware_optimizer", false}}
		for _, f := range []struct{ path, v string }{
			{"train.main_grads_dtype", t.MainGradsDtype}, {"train.main_params_dtype", t.MainParamsDtype},
			{"train.exp_avg_dtype", t.ExpAvgDtype}, {"train.exp_avg_sq_dtype", t.ExpAvgSqDtype},
		} {
			if f.v != "" && f.v != "fp32" {
				off = append(off, setting{f.path, "fp32"})
			}
		}
		c.report("optimizer-options", "train.precision_aware_optimizer", c.anyOf("optimizer-options", "train.precision_aware_optimizer", adam, setOpt(off...)),
			"the precision-aware optimizer is Transformer Engine's FusedAdam: Megatron supports it only with adam, not %s", name).
			Related(path, "optimizer = %q", name)
	}
	if !t.EmergingOptimizer() {
		return
	}
	switch s.FSDP() {
	case "megatron-fsdp":
		c.report("optimizer-options", path, c.anyOf("optimizer-options", path, adam,
			setOpt(setting{"train.fsdp", false}, setting{"train.distributed_optimizer", true})),
			"Megatron-FSDP (train.fsdp) supports only the adam and sgd optimizers, not %s", name).
			Related("train.fsdp", "fsdp = true")
	case "torch-fsdp2":
		c.report("optimizer-options", path, c.anyOf("optimizer-options", path, adam, c.withoutExtraArg("--use-torch-fsdp2")),
			"torch FSDP2 (--use-torch-fsdp2 in launch.extra_args) does not support the %s optimizer, only adam and sgd", name)
	}
	format := "torch_dist" // Megatron's default --ckpt-format
	if s.Checkpoint != nil && s.Checkpoint.Format != "" {
		format = s.Checkpoint.Format
	}
	if s.FSDP() == "" && format != "torch" && format != "torch_dist" {
		c.report("optimizer-options", "checkpoint.format", c.anyOf("optimizer-options", "checkpoint.format",
			opt(`set checkpoint.format: "torch_dist"`, setting{"checkpoint.format", "torch_dist"}), adam),
			"the %s optimizer saves only the torch and torch_dist checkpoint formats, not %s", name, format).
			Related(path, "optimizer = %q", name)
	}
	if t.Precision == "fp16" {
		c.report("optimizer-options", path, c.anyOf("optimizer-options", path,
			opt(`set train.precision: "bf16"`, setting{"train.precision", "bf16"}), adam),
			"the %s optimizer does not support fp16 training (Megatron: emerging optimizer with fp16 is not supported)", name).
			Related("train.precision", "precision = %q", t.Precision)
	}
	if t.LayerWiseOptimizer() && t.OverlapParamGatherWithOptimizerStep {
		c.report("optimizer-options", "train.overlap_param_gather_with_optimizer_step", c.anyOf("optimizer-options", "train.overlap_param_gather_with_optimizer_step",
			setOpt(setting{"train.overlap_param_gather_with_optimizer_step", false}), adam),
			"the %s optimizer with train.distributed_optimizer runs Megatron's layer-wise distributed optimizer, which cannot overlap the parameter all-gather with the optimizer step", name).
			Related(path, "optimizer = %q", name)
	}
}
