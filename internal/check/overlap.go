package check

import (
	"fmt"
	"slices"
	"strings"

	"parc.dev/parc/internal/spec"
)

// commOverlap checks the communication-overlap options against what
// Megatron-Core requires of them: --tp-comm-overlap needs sequence
// parallelism (validate_args; sequence parallelism is switched off at tp=1),
// --overlap-moe-expert-parallel-comm and --delay-wgrad-compute the checks of
// TransformerConfig.__post_init__ (megatron/core/transformer/transformer_config.py
// at d98e8a64).
func (c *checker) commOverlap() {
	s, p, d := c.s, c.s.Parallel, c.d
	if spec.TPCommOverlapOn(s) && !d.SP {
		why := "sequence parallelism is off (parallel.sp: false)"
		off := opt("set parallel.tp_comm_overlap: false", setting{"parallel.tp_comm_overlap", false})
		hint := c.options("tp-comm-overlap", "parallel.tp_comm_overlap", "set parallel.sp: true, or tp_comm_overlap: false",
			opt("set parallel.sp: true", setting{"parallel.sp", true}), off)
		if p.TP == 1 {
			why = "tp=1, where Megatron switches sequence parallelism off"
			var sp []setting
			if p.SP != nil {
				sp = append(sp, setting{"parallel.sp", true})
			}
			hint = c.anyOf("tp-comm-overlap", "parallel.tp_comm_overlap", append(
				c.valueOptions("tp-comm-overlap", "parallel.tp_comm_overlap", "parallel.tp", valuesIn(2, c.world(), func(int) bool { return true }), 2, sp...),
				off)...)
		}
		c.report("tp-comm-overlap", "parallel.tp_comm_overlap", hint,
			"tp_comm_overlap overlaps tensor-parallel communication of sequence parallelism, but %s", why)
	}
	if p.OverlapMoEExpertParallelComm {
		const path = "parallel.overlap_moe_expert_parallel_comm"
		var bad []string
		var fix []setting // the settings that change the listed ones
		var dims []dim    // and the degrees they need a value of
		if p.EP < 2 {
			bad = append(bad, fmt.Sprintf("expert parallelism (ep=%d, needs ep > 1)", p.EP))
			if m := s.Model.MoE; m != nil {
				dims = append(dims, dim{"parallel.ep", valuesIn(2, m.Experts, func(v int) bool { return m.Experts%v == 0 })})
			}
		}
		if p.PP > 1 && p.VPP < 2 {
			bad = append(bad, fmt.Sprintf("virtual pipeline stages with pp=%d (vpp=%d, needs vpp > 1)", p.PP, p.VPP))
			dims = append(dims, dim{"parallel.vpp", valuesIn(2, max(s.Model.Layers/p.PP, 2), func(int) bool { return true })})
		}
		if m := s.Model.MoE; m != nil && m.Dispatcher == "allgather" {
			bad = append(bad, `the alltoall or flex dispatcher (model.moe.dispatcher is "allgather")`)
			fix = append(fix, setting{"model.moe.dispatcher", "alltoall"})
		}
		if s.Train.Recompute == "full" {
			bad = append(bad, `no full recomputation (train.recompute is "full")`)
			fix = append(fix, setting{"train.recompute", "selective"})
		}
		if mods := s.Train.RecomputeModuleList(); slices.Contains(mods, "moe") {
			bad = append(bad, `"moe" out of train.recompute_modules`)
			fix = append(fix, setting{"train.recompute_modules", slices.DeleteFunc(slices.Clone(mods), func(m string) bool { return m == "moe" })})
		}
		if s.Train.Precision == "fp32" {
			bad = append(bad, "a bf16 or fp16 model (train.precision is fp32)")
			fix = append(fix, setting{"train.precision", "bf16"})
		}
		if s.Model.MTPLayers > 1 {
			bad = append(bad, fmt.Sprintf("at most one MTP layer (mtp_layers=%d)", s.Model.MTPLayers))
			fix = append(fix, setting{"model.mtp_layers", 1})
		}
		if s.Model.MoE != nil && s.Model.MoE.SharedExpertOverlap {
			bad = append(bad, "no shared_expert_overlap (model.moe.shared_expert_overlap)")
			fix = append(fix, setting{"model.moe.shared_expert_overlap", false})
		}
		if len(bad) > 0 {
			opts := []option{setOpt(setting{path, false})}
			if len(fix)+len(dims) > 0 {
				if o, ok := c.firstPassing("ep-comm-overlap", path, fix, dims...); ok {
					opts = append([]option{o}, opts...)
				}
			}
			c.report("ep-comm-overlap", path, c.anyOf("ep-comm-overlap", path, opts...),
				"overlap_moe_expert_parallel_comm needs %s", strings.Join(bad, ", "))
		}
	}
	if p.DelayWgradCompute && !p.OverlapMoEExpertParallelComm {
		c.report("ep-comm-overlap", "parallel.delay_wgrad_compute",
			c.options("ep-comm-overlap", "parallel.delay_wgrad_compute", "set parallel.overlap_moe_expert_parallel_comm: true, or delay_wgrad_compute: false",
				opt("set parallel.overlap_moe_expert_parallel_comm: true", setting{"parallel.overlap_moe_expert_parallel_comm", true}),
				opt("set parallel.delay_wgrad_compute: false", setting{"parallel.delay_wgrad_compute", false})),
			"delay_wgrad_compute needs overlap_moe_expert_parallel_comm")
	}
}

// recomputeModules checks --recompute-modules the way
// TransformerConfig.__post_init__ does: each module needs the part of the
// model it recomputes.
func (c *checker) recomputeModules() {
	s, t := c.s, c.s.Train
	if t.RecomputeModules == nil {
		return
	}
	if t.Recompute != "selective" {
		c.report("recompute-options-unused", "train.recompute_modules", c.anyOf("recompute-options-unused", "train.recompute_modules",
			setOpt(setting{"train.recompute_modules", nil}), setOpt(setting{"train.recompute", "selective"})),
			"recompute_modules only applies to selective recomputation (recompute=%q)", t.Recompute)
		return
	}
	moe := s.Model.MoE
	for _, mod := range t.RecomputeModules {
		var need, hint string
		switch mod {
		case "moe_act":
			if moe == nil {
				need, hint = "grouped-GEMM experts (model.moe.grouped_gemm)", "remove it from the list (the model has no MoE layers)"
			} else if !moe.GroupedGEMM {
				need, hint = "grouped-GEMM experts (model.moe.grouped_gemm)", "set model.moe.grouped_gemm: true"
			} else if t.Precision == "fp8" && t.FP8Recipe == "delayed" {
				need, hint = "an fp8 recipe other than delayed scaling", `use train.fp8_recipe "tensorwise" or another recipe`
			}
		case "layernorm":
			if t.Precision == "fp8" && t.FP8Recipe == "delayed" {
				need, hint = "an fp8 recipe other than delayed scaling", `use train.fp8_recipe "tensorwise" or another recipe`
			}
		case "mla_up_proj":
			if s.Model.MLA == nil {
				need, hint = "multi-latent attention (model.mla)", "remove it from the list"
			}
		case "shared_experts":
			if moe != nil && moe.SharedExpertOverlap && moe.SharedFFNHidden > 0 {
				need, hint = "no shared-expert overlap", "set model.moe.shared_expert_overlap: false"
			}
		case "gdn_norm_out":
			if !c.hasFlag("--experimental-attention-variant") {
				need, hint = "a gated-delta-net attention variant (--experimental-attention-variant gdn)", "remove it from the list"
			}
		case "mhc":
			if !c.hasFlag("--enable-mhc-connections") {
				need, hint = "manifold hyper-connections (--enable-mhc-connections)", "remove it from the list"
			}
		}
		if need != "" {
			switch hint {
			case "remove it from the list", "remove it from the list (the model has no MoE layers)":
				rest := slices.DeleteFunc(slices.Clone(t.RecomputeModules), func(m string) bool { return m == mod })
				o := setOpt(setting{"train.recompute_modules", rest})
				if len(rest) == 0 {
					o = setOpt(setting{"train.recompute_modules", nil}).note("Megatron's default: core_attn")
				}
				hint = c.anyOf("recompute-modules", "train.recompute_modules", o)
			case "set model.moe.grouped_gemm: true":
				hint = c.options("recompute-modules", "train.recompute_modules", hint, opt(hint, setting{"model.moe.grouped_gemm", true}))
			case `use train.fp8_recipe "tensorwise" or another recipe`:
				hint = c.options("recompute-modules", "train.recompute_modules", hint, opt(hint, setting{"train.fp8_recipe", "tensorwise"}))
			case "set model.moe.shared_expert_overlap: false":
				hint = c.options("recompute-modules", "train.recompute_modules", hint, opt(hint, setting{"model.moe.shared_expert_overlap", false}))
			}
			c.report("recompute-modules", "train.recompute_modules", hint,
				"recompute module %q needs %s", mod, need)
		}
	}
}
