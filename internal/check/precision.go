package check

import (
	"fmt"
	"strings"

	"parc.dev/parc/internal/spec"
)

// fp8RecipeMinCC is the compute capability Transformer Engine needs for each
// FP8 recipe (transformer_engine/pytorch/quantization.py: check_fp8_support,
// check_fp8_block_scaling_support, check_mxfp8_support). mxfp8 is also not
// supported from 12.0 on.
var fp8RecipeMinCC = map[string]float64{
	"delayed":    8.9,
	"tensorwise": 8.9,
	"blockwise":  9.0,
	"mxfp8":      10.0,
}

// nvfp4MinCC is the compute capability Transformer Engine's NVFP4 recipe
// needs (Blackwell on; its docs list SM 10.0 and 10.3 for training).
const nvfp4MinCC = 10.0

// precision checks what the GPU supports.
func (c *checker) precision() {
	t, cc := c.s.Train, c.s.Cluster.GPU.ComputeCapability
	if cc <= 0 {
		return
	}
	switch t.Precision {
	case "bf16":
		if cc < 8 {
			c.report("precision-bf16-gpu", "train.precision", c.options("precision-bf16-gpu", "train.precision", `use train.precision "fp16" on this GPU`,
				opt(`use train.precision "fp16"`, setting{"train.precision", "fp16"})),
				"bf16 needs compute capability ≥ 8.0, but %s has %.1f", c.gpuName(), cc)
		}
	case "fp4":
		// Transformer Engine's _compute_nvfp4_support (pytorch/
		// quantization.py at d0067d0d): "Device compute capability 10.0 or
		// higher required for NVFP4 execution."
		if cc < nvfp4MinCC {
			var opts []option
			for _, p := range []string{"fp8", "bf16"} {
				o := opt(fmt.Sprintf("use train.precision %q", p), setting{"train.precision", p})
				if t.FP4ParamGather { // NVFP4 weights need NVFP4 GEMMs
					o = opt(fmt.Sprintf("use train.precision %q and fp4_param_gather: false", p),
						setting{"train.precision", p}, setting{"train.fp4_param_gather", false})
				}
				opts = append(opts, o)
			}
			c.report("precision-fp4-gpu", "train.precision", c.anyOf("precision-fp4-gpu", "train.precision", opts...),
				"NVFP4 (precision \"fp4\") needs compute capability ≥ %.1f, but %s has %.1f", nvfp4MinCC, c.gpuName(), cc)
		}
	case "fp8":
		need, ok := fp8RecipeMinCC[t.FP8Recipe]
		if !ok {
			return
		}
		if cc < need || (t.FP8Recipe == "mxfp8" && cc >= 12) {
			var fit []string
			for _, r := range []string{"delayed", "tensorwise", "blockwise", "mxfp8"} {
				if cc >= fp8RecipeMinCC[r] && !(r == "mxfp8" && cc >= 12) {
					fit = append(fit, r)
				}
			}
			fit = c.onlyStrings("precision-fp8-gpu", "train.fp8_recipe", fit)
			hint := `use train.precision "bf16"`
			if !c.acceptsAll("precision-fp8-gpu", setting{"train.precision", "bf16"}) {
				hint = noValue("train.fp8_recipe")
			}
			if len(fit) > 0 {
				hint = "fp8 recipes this GPU supports: " + strings.Join(fit, ", ")
			}
			limit := fmt.Sprintf("compute capability ≥ %.1f", need)
			if t.FP8Recipe == "mxfp8" {
				limit = "compute capability 10.x or 11.x"
			}
			c.report("precision-fp8-gpu", "train.fp8_recipe", hint,
				"the fp8 recipe %q needs %s, but %s has %.1f", t.FP8Recipe, limit, c.gpuName(), cc)
		}
	}
}

// optimizerPrecision checks FP8 parameter gathering and the precision-aware
// optimizer: --fp8-param-gather needs a sharded optimizer (validate_args),
// the optimizer dtypes other than fp32 need --use-precision-aware-optimizer
// (OptimizerConfig.__post_init__), which runs only inside the distributed
// optimizer (megatron/core/optimizer/__init__.py: get_megatron_optimizer).
func (c *checker) optimizerPrecision() {
	s, t := c.s, c.s.Train
	sharded := t.DistributedOptimizer || s.FSDP() != ""
	if t.FP4ParamGather && t.Precision != "fp4" {
		c.report("fp4-param-gather", "train.fp4_param_gather", c.options("fp4-param-gather", "train.fp4_param_gather", "set train.precision: \"fp4\", or fp4_param_gather: false",
			opt("set train.precision: \"fp4\"", setting{"train.precision", "fp4"}), opt("set train.fp4_param_gather: false", setting{"train.fp4_param_gather", false})),
			"fp4_param_gather keeps the weights in NVFP4, which Megatron allows only with --fp4-format (precision \"fp4\"), not precision %q", t.Precision)
	}
	if t.FP8ParamGather && !sharded {
		c.report("fp8-param-gather", "train.fp8_param_gather", c.options("fp8-param-gather", "train.fp8_param_gather", "set train.distributed_optimizer: true (or train.fsdp), or fp8_param_gather: false",
			opt("set train.distributed_optimizer: true", setting{"train.distributed_optimizer", true}),
			opt("set train.fsdp: true", setting{"train.fsdp", true}), opt("set train.fp8_param_gather: false", setting{"train.fp8_param_gather", false})),
			"fp8_param_gather keeps only fp8 weights, which needs the distributed optimizer or FSDP to hold the main copy")
	}
	c.optimizerOffload()
	dtypes := []struct{ field, v string }{
		{"train.main_grads_dtype", t.MainGradsDtype}, {"train.main_params_dtype", t.MainParamsDtype},
		{"train.exp_avg_dtype", t.ExpAvgDtype}, {"train.exp_avg_sq_dtype", t.ExpAvgSqDtype},
	}
	if !t.PrecisionAwareOptim {
		for _, f := range dtypes {
			if f.v != "" && f.v != "fp32" {
				c.report("optimizer-dtypes", f.field, c.options("optimizer-dtypes", f.field, fmt.Sprintf("set train.precision_aware_optimizer: true, or %s: \"fp32\"", f.field),
					opt("set train.precision_aware_optimizer: true", setting{"train.precision_aware_optimizer", true}),
					opt(fmt.Sprintf("set %s: \"fp32\"", f.field), setting{f.field, "fp32"})),
					"%s=%q needs the precision-aware optimizer; without it Megatron keeps it fp32", f.field, f.v)
			}
		}
		return
	}
	if !t.DistributedOptimizer && s.FSDP() != "megatron-fsdp" {
		c.report("optimizer-dtypes", "train.precision_aware_optimizer", c.options("optimizer-dtypes", "train.precision_aware_optimizer", "set train.distributed_optimizer: true, or precision_aware_optimizer: false",
			opt("set train.distributed_optimizer: true", setting{"train.distributed_optimizer", true}),
			opt("set train.precision_aware_optimizer: false", setting{"train.precision_aware_optimizer", false})),
			"the precision-aware optimizer only runs inside the distributed optimizer")
	}
}

// gpuDatasheet warns when cluster.gpu names a GPU parc has a datasheet for
// (spec.LookupGPU) but its bf16 peak is not that GPU's: the loader then takes
// none of the datasheet's other figures (spec.Cluster.FillFromDatasheet), and
// the peak is most often the one datasheets quote "with sparsity", twice the
// dense one training runs at.
func (c *checker) gpuDatasheet() {
	g := c.s.Cluster.GPU
	d, ok := spec.LookupGPU(g.Name, g.MemoryGiB)
	if !ok || g.BF16TFLOPs <= 0 || d.Describes(g.BF16TFLOPs) {
		return
	}
	why := ""
	if d.Describes(g.BF16TFLOPs / 2) {
		why = " (it is the peak with sparsity, which datasheets quote at twice the dense one)"
	}
	const path = "cluster.gpu.bf16_tflops"
	set := fmt.Sprintf("set %s: %g", path, d.BF16)
	c.report("gpu-peak-not-datasheet", path, c.options("gpu-peak-not-datasheet", path, set, opt(set, setting{path, d.BF16})),
		"%s = %g is not the dense bf16 peak of the %s that cluster.gpu.name %q names, %g TFLOP/s by its datasheet%s; parc takes none of that GPU's other figures (HBM bandwidth, SMs, power limit) and derives them from %g",
		path, g.BF16TFLOPs, d.Model, g.Name, d.BF16, why, g.BF16TFLOPs)
}

// optimizerOffload checks --optimizer-cpu-offload as validate_args does
// (arguments.py at d98e8a64): Megatron-Core's HybridDeviceOptimizer reuses
// the precision-aware optimizer's code path, and with fp8 parameter
// gathering only the delayed recipe's.
func (c *checker) optimizerOffload() {
	t := c.s.Train
	if !t.OptimizerCPUOffload {
		return
	}
	if !t.PrecisionAwareOptim {
		c.report("optimizer-cpu-offload", "train.optimizer_cpu_offload", c.options("optimizer-cpu-offload", "train.optimizer_cpu_offload",
			"set train.precision_aware_optimizer: true, or train.optimizer_cpu_offload: false",
			opt("set train.precision_aware_optimizer: true", setting{"train.precision_aware_optimizer", true}),
			opt("set train.precision_aware_optimizer: true and train.distributed_optimizer: true",
				setting{"train.precision_aware_optimizer", true}, setting{"train.distributed_optimizer", true}),
			opt("set train.optimizer_cpu_offload: false", setting{"train.optimizer_cpu_offload", false})),
			"optimizer_cpu_offload needs the precision-aware optimizer: Megatron-Core's HybridDeviceOptimizer reuses its code path")
	}
	if t.FP8ParamGather && t.FP8Recipe != "delayed" {
		c.report("optimizer-cpu-offload", "train.optimizer_cpu_offload", c.options("optimizer-cpu-offload", "train.optimizer_cpu_offload",
			"set train.fp8_recipe: \"delayed\", or train.fp8_param_gather: false, or train.optimizer_cpu_offload: false",
			opt("set train.fp8_recipe: \"delayed\"", setting{"train.fp8_recipe", "delayed"}),
			opt("set train.fp8_param_gather: false", setting{"train.fp8_param_gather", false}),
			opt("set train.optimizer_cpu_offload: false", setting{"train.optimizer_cpu_offload", false})),
			"optimizer_cpu_offload with fp8_param_gather needs fp8_recipe \"delayed\", not %q", t.FP8Recipe)
	}
}
