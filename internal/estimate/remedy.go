package estimate

import (
	"fmt"
	"slices"
	"strings"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// A remedy is one change a memory hint may suggest, with the value it sets.
type remedy struct {
	text  string // "train.recompute \"full\""
	apply func(s *spec.Spec)
	// count, when set, makes the remedy a number of layers to choose: the
	// fewest in 1..count.max that fit (fittingRemedies), text a format
	// with one %d.
	count *layerCount
}

// layerCount is a remedy's range of layer counts and how to set one.
type layerCount struct {
	max int
	set func(s *spec.Spec, n int)
}

// memoryRemedies are the changes that lower a stage's memory without
// changing the grid, those that cost the step nothing first: gradients
// reduced in bf16 and fp8 (fp4) weights gathered, as NVIDIA's recipes run
// them (of the measured corpus's 230 Megatron-Bridge runs, 219 record
// grad_reduce_in_fp32 false, and 176 of its 181 fp8 runs fp8_param_gather,
// testdata/measured/runs.jsonl); then a
// smaller micro batch, more recomputation, sequence parallelism, the
// distributed optimizer, the precision-aware optimizer with bf16 moments
// (NeMo's Nemotron-4 340B runs and the Megatron-MoE-ModelZoo recipes),
// some modules' inputs on the host (fine-grained offloading), the fewest
// layers whose activations go to the host (Megatron-Bridge's Llama 3
// 70B FSDP runs on GB200 and GB300 offload 20 to 40), and, slowest, the
// optimizer state on the host (with the precision-aware optimizer it
// needs).
func (c *costModel) memoryRemedies() []remedy {
	tr := c.s.Train
	var out []remedy
	if !tr.GradReduceInBF16 {
		out = append(out, remedy{text: "train.grad_reduce_in_bf16 true", apply: func(s *spec.Spec) { s.Train.GradReduceInBF16 = true }})
	}
	switch {
	case tr.Precision == "fp8" && !tr.FP8ParamGather:
		out = append(out, remedy{text: "train.fp8_param_gather true", apply: func(s *spec.Spec) { s.Train.FP8ParamGather = true }})
	case tr.Precision == "fp4" && !tr.FP4ParamGather:
		out = append(out, remedy{text: "train.fp4_param_gather true", apply: func(s *spec.Spec) { s.Train.FP4ParamGather = true }})
	}
	for mb := tr.MicroBatch - 1; mb >= 1; mb-- {
		out = append(out, remedy{text: fmt.Sprintf("train.micro_batch %d", mb), apply: func(s *spec.Spec) { s.Train.MicroBatch = mb }})
	}
	var rc []string
	switch tr.Recompute {
	case "none":
		rc = []string{"selective", "full"}
	case "selective":
		rc = []string{"full"}
	}
	for _, r := range rc {
		out = append(out, remedy{text: fmt.Sprintf("train.recompute %q", r), apply: func(s *spec.Spec) { s.Train.Recompute = r }})
	}
	if c.tp > 1 && !c.d.SP {
		out = append(out, remedy{text: "parallel.sp true", apply: func(s *spec.Spec) { on := true; s.Parallel.SP = &on }})
	}
	if c.sharding == ShardNone && !c.shardingGiven && !tr.FSDP {
		out = append(out, remedy{text: "train.distributed_optimizer true", apply: func(s *spec.Spec) { s.Train.DistributedOptimizer = true }})
	}
	if tr.DistributedOptimizer && tr.FP32AdamMoments() {
		text := `train.exp_avg_dtype "bf16" and train.exp_avg_sq_dtype "bf16"`
		if !tr.PrecisionAwareOptim {
			text = "train.precision_aware_optimizer true and " + text
		}
		out = append(out, remedy{text: text, apply: func(s *spec.Spec) { s.Train.SetBF16AdamMoments() }})
	}
	if !tr.FineGrainedActivationOffloading && tr.CPUOffloadingNumLayers == 0 {
		// The inputs Megatron's guide offloads (docs/user-guide/features/
		// fine_grained_activation_offloading.md at d98e8a64: "--offload-modules
		// core_attn attn_proj expert_fc1"): the routed experts' as
		// Megatron-MoE-ModelZoo's Qwen3-235B-A22B GB200 recipe offloads them
		// (expert_fc1, moe_act; the fused grouped MLP whole with Transformer
		// Engine's op fuser), else core attention's and its projection's.
		mods := []string{"core_attn", "attn_proj"}
		switch {
		case c.s.Model.MoE != nil && c.s.Kernels.UseTransformerEngineOpFuser:
			mods = []string{"fused_group_mlp"}
		case c.s.Model.MoE != nil:
			mods = []string{"expert_fc1", "moe_act"}
		}
		out = append(out, remedy{text: "train.fine_grained_activation_offloading true and train.offload_modules " + spec.Literal(mods),
			apply: func(s *spec.Spec) { s.Train.FineGrainedActivationOffloading, s.Train.OffloadModules = true, mods }})
	}
	if tr.CPUOffloadingNumLayers == 0 && c.s.Model.Layers > 1 {
		out = append(out, remedy{text: "train.cpu_offloading_num_layers %d", count: &layerCount{
			max: c.s.Model.Layers - 1,
			set: func(s *spec.Spec, n int) { s.Train.CPUOffloadingNumLayers = n },
		}})
	}
	if tr.DistributedOptimizer && !tr.FSDP && !tr.OptimizerCPUOffload {
		// Last: the host then runs Adam on the whole shard (several times
		// the GPU's optimizer step; TestOptimizerOffloadMeasured).
		text := "train.optimizer_cpu_offload true"
		if !tr.PrecisionAwareOptim {
			text += " and train.precision_aware_optimizer true"
		}
		out = append(out, remedy{text: text, apply: func(s *spec.Spec) {
			s.Train.OptimizerCPUOffload, s.Train.OptimizerOffloadFraction, s.Train.PrecisionAwareOptim = true, 1, true
		}})
	}
	return out
}

// peakAfter applies change to a copy of the spec and reports whether the
// result passes every check, and its peak memory per GPU (the estimate's
// most loaded stage).
func (c *costModel) peakAfter(change func(*spec.Spec)) (int64, bool) {
	s2 := *c.s
	change(&s2)
	d2 := spec.Derive(&s2)
	if !c.passes(&s2, d2) {
		return 0, false
	}
	o := c.o
	if !c.shardingGiven {
		o.Sharding = ""
	}
	c2 := newCostModel(&s2, d2, resolveOptions(&s2, o))
	e := &Estimate{Comms: map[string]AxisComm{}}
	c2.params(e)
	c2.memory(e)
	if len(e.Memory.Stages) == 0 {
		return 0, false
	}
	return e.Memory.Stages[e.Memory.PeakStage].Total, true
}

// fittingRemedies lists the remedies that, each on its own, pass every
// check and bring the peak to at most limit bytes, with the peak they give.
func (c *costModel) fittingRemedies(limit int64) []string {
	var out []string
	micro := false // one micro batch suffices: the largest that fits
	for _, r := range c.memoryRemedies() {
		if r.count != nil {
			if n, peak, ok := c.fewestFitting(r.count, limit); ok {
				out = append(out, fmt.Sprintf(r.text+" (peak %s)", n, GiB(peak)))
			}
			continue
		}
		isMicro := strings.HasPrefix(r.text, "train.micro_batch")
		if isMicro && micro {
			continue
		}
		if peak, ok := c.peakAfter(r.apply); ok && peak <= limit {
			out = append(out, fmt.Sprintf("%s (peak %s)", r.text, GiB(peak)))
			micro = micro || isMicro
		}
	}
	return out
}

// remedyFields names the fields memoryRemedies tried, each once in its
// order: "train.micro_batch, train.recompute or train.optimizer_cpu_offload".
func (c *costModel) remedyFields() string {
	var fields []string
	for _, r := range c.memoryRemedies() {
		if f, _, _ := strings.Cut(r.text, " "); !slices.Contains(fields, f) {
			fields = append(fields, f)
		}
	}
	switch n := len(fields); n {
	case 0:
		return "the memory settings parc suggests (each is already set)"
	case 1:
		return fields[0]
	default:
		return strings.Join(fields[:n-1], ", ") + " or " + fields[n-1]
	}
}

// fewestFitting is the fewest layers n of lc that pass every check and
// bring the peak to at most limit bytes, with that peak: a bisection, the
// peak falling as n grows (each layer more holds less on the GPU); false
// when even lc.max does not.
func (c *costModel) fewestFitting(lc *layerCount, limit int64) (n int, peak int64, ok bool) {
	at := func(n int) (int64, bool) {
		p, passes := c.peakAfter(func(s *spec.Spec) { lc.set(s, n) })
		return p, passes && p <= limit
	}
	hi := lc.max
	peak, ok = at(hi)
	if !ok {
		return 0, 0, false
	}
	lo := 0 // does not fit (no layer offloaded: the spec's own peak)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if p, fits := at(mid); fits {
			hi, peak = mid, p
		} else {
			lo = mid
		}
	}
	return hi, peak, true
}

// globalBatchPasses reports whether train.global_batch = gb passes every
// check.
func (c *costModel) globalBatchPasses(gb int) bool {
	s2 := *c.s
	s2.Train.GlobalBatch = gb
	return c.passes(&s2, spec.Derive(&s2))
}

// passes reports whether s2 (the spec with a hint's value set) has no error
// the spec itself does not have. The estimate runs on specs that passed
// every check; callers that estimate others (tests, the solver's partial
// specs) keep their own errors without losing the hints.
func (c *costModel) passes(s2 *spec.Spec, d2 spec.Derived) bool {
	if c.baseline == nil {
		c.baseline = errorKeys(check.Verdict(c.s, c.d, diag.NoPos))
	}
	return noNewErrors(c.baseline, s2, d2)
}

// noNewErrors reports whether s2 has no error outside baseline (errorKeys
// of the spec it was changed from).
func noNewErrors(baseline map[string]bool, s2 *spec.Spec, d2 spec.Derived) bool {
	for k := range errorKeys(check.Verdict(s2, d2, diag.NoPos)) {
		if !baseline[k] {
			return false
		}
	}
	return true
}

func errorKeys(l diag.List) map[string]bool {
	out := map[string]bool{}
	for _, d := range l {
		if d.Severity == diag.Error {
			out[d.Code+"\x00"+d.Path] = true
		}
	}
	return out
}
