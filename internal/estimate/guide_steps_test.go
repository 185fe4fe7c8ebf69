package estimate

import (
	"fmt"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
)

// guideStep is one row of the optimisation history of Megatron-LM's
// DeepSeek-V3 GB200 guide (docs/discussions/deepseek-v3-gb200-optimization
// at eb0783b6, section 3): the TFLOP/s per GPU it measured after the step,
// and the change of the run's settings the step makes, nil when the step
// changes software Megatron has no option for.
type guideStep struct {
	what   string
	tflops float64
	apply  func(r *measuredRun)
	why    string // what the step changed, when it has no option
}

// guideSteps is the history, cumulative from the baseline row
// (mlm-dsv3-gb200-guide-baseline-256); each step's text is the guide's.
var guideSteps = []guideStep{
	{"Baseline", 494.46, func(*measuredRun) {}, ""},
	{"Fuse torch.zeros for scaling factor allocation & Permute kernel Optimization", 529.55, nil,
		"Transformer Engine kernels (PRs 1927, 1793, 1934, 2134)"},
	{"Router fusion", 540.00, func(r *measuredRun) { r.Settings["moe_router_fusion"] = true }, ""},
	{"Enable DeepEP", 566.07, func(r *measuredRun) {
		r.Settings["moe_token_dispatcher_type"], r.Settings["moe_flex_dispatcher_backend"] = "flex", "deepep"
	}, ""},
	{"Remove up_proj recompute", 610.71, func(r *measuredRun) { r.Train.RecomputeModules = []string{"mlp", "moe_act"} }, ""},
	{"CUDA Graphs", 663.27, func(r *measuredRun) {
		r.Settings["cuda_graph_impl"] = "transformer_engine"
		r.Settings["cuda_graph_scope"] = []any{"attn", "moe_router", "moe_preprocess"}
	}, ""},
	{"Tune DeepEP", 691.49, nil, "DeepEP's kernels"},
	{"CPU-side optimization", 762.12, nil, "bindpcie: processes bound to their GPU's NUMA node"},
	{"PDL for quantization kernels & Fuse MXFP8 swizzle scaling factor", 797.67, nil, "Transformer Engine kernels"},
	{"CUDA Graphs capture shared expert", 829.93, nil, "what moe_router's graph holds (parc's graph of the router holds the shared expert from the CUDA Graphs step on, as Megatron at d98e8a64 does without shared-expert overlap)"},
	{"HybridEP", 943.56, func(r *measuredRun) { r.Settings["moe_flex_dispatcher_backend"] = "hybridep" }, ""},
	{"CPU-side optimization", 956.21, nil, "host code"},
	{"Fuse quantization to normalization (cuDNN 9.14)", 970.01, nil, "cuDNN's normalization kernels (NVTE_NORM_FWD_USE_CUDNN)"},
}

// guideStepsReport is the guide's history beside the model's: the step time
// the guide's TFLOP/s imply (Megatron's FLOPs per step over the plan's
// GPUs), the modelled one with the settings each step changes, and the
// change each step made to both. It is outside truth for each mechanism the
// model has an option for; the steps without one are what the model cannot
// see.
func guideStepsReport(t *testing.T, runs []measuredRun, cal Calibration) string {
	var base *measuredRun
	for i := range runs {
		if runs[i].ID == "mlm-dsv3-gb200-guide-baseline-256" {
			base = &runs[i]
		}
	}
	if base == nil {
		return ""
	}
	cur := cloneRun(*base)
	var b strings.Builder
	b.WriteString("## The DeepSeek-V3 GB200 guide, step by step\n\n")
	b.WriteString("Megatron-LM's DeepSeek-V3 GB200 optimisation guide (docs/discussions/deepseek-v3-gb200-optimization at\n" +
		"eb0783b6, section 3) measured one plan (256 GB200, TP1 PP8 VPP4 EP32, MXFP8) after each of its optimisations.\n" +
		"Each step is applied to the baseline row's settings in turn; steps that change software Megatron has\n" +
		"no option for leave the model where it was. Step time from the guide's TFLOP/s with Megatron's FLOPs.\n\n")
	b.WriteString("| step | guide TFLOP/s | measured step s | change | modelled step s | change | modelled all-to-all s | modelled host-bound s | option |\n|---|---|---|---|---|---|---|---|---|\n")
	var prevM, prevE, optM, optE, noneM float64
	for i, st := range guideSteps {
		opt := "the row's settings"
		switch {
		case i == 0:
			st.apply(&cur)
		case st.apply != nil:
			st.apply(&cur)
			opt = "yes"
		default:
			opt = "none: " + st.why
		}
		r := cloneRun(cur)
		row := makeCalRow(&r)
		if row.skip != "" {
			t.Errorf("guide step %q: %s", st.what, row.skip)
			return ""
		}
		o := DefaultOptions()
		o.Calibration = cal
		e, _ := RunWith(row.s, row.d, row.links, diag.NoPos, o)
		meas := e.FLOPsPerStep / float64(row.d.World) / (st.tflops * 1e12)
		chM, chE := "", ""
		if i > 0 {
			chM, chE = fmt.Sprintf("%+.2f", meas-prevM), fmt.Sprintf("%+.2f", e.StepTimeS-prevE)
		}
		// The exposed expert-parallel all-to-all and the time the GPU
		// waits for the host's eager kernel issue in the modelled step:
		// the mechanisms the guide names for its dispatcher steps
		// (DeepEP: "did not get the communication benefits, but ...
		// reduced CPU overhead") and its CPU-overhead steps.
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %s | %.2f | %s | %.2f | %.2f | %s |\n", st.what, st.tflops, meas, chM, e.StepTimeS, chE, e.Comms["ep"].ExposedS, e.Compute.HostBoundS, opt)
		switch {
		case i == 0:
		case st.apply != nil:
			optM, optE = optM+meas-prevM, optE+e.StepTimeS-prevE
		default:
			noneM += meas - prevM
		}
		prevM, prevE = meas, e.StepTimeS
	}
	fmt.Fprintf(&b, "\nThe steps with an option took %.2f s off the measured step and %.2f s off the modelled one; the steps\n"+
		"without one took %.2f s off the measured step.\n\n", -optM, -optE, -noneM)
	return b.String()
}

// cloneRun copies the parts of a run a guide step changes.
func cloneRun(r measuredRun) measuredRun {
	s := make(map[string]any, len(r.Settings))
	for k, v := range r.Settings {
		s[k] = v
	}
	r.Settings = s
	r.Train.RecomputeModules = append([]string(nil), r.Train.RecomputeModules...)
	return r
}
