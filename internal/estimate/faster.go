package estimate

import (
	"cmp"
	"maps"
	"slices"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// A FasterSetting is one setting that, changed on its own, passes every
// check, still fits the GPU and shortens the estimated step: what explain
// suggests beside the plan as written.
type FasterSetting struct {
	// Field is the spec path ("parallel.tp_comm_overlap"); Value its new
	// value. With a second field (Also), both are set together.
	Field string `json:"field"`
	Value any    `json:"value"`
	// Also holds the fields set with it (model.moe.flex_dispatcher_backend
	// with model.moe.dispatcher "flex"), spec path to value.
	Also map[string]any `json:"also,omitempty"`
	// StepTimeS is the estimated step with the change; ChangePct its change
	// against the plan's step (negative: faster).
	StepTimeS     float64 `json:"step_time_s"`
	ChangePct     float64 `json:"change_pct"`
	FractionOfGPU float64 `json:"fraction_of_gpu"`
	// Needs says what the setting needs beyond Megatron-Core itself.
	Needs string `json:"needs,omitempty"`
	// candidate is the fasterCandidates entry it came from.
	candidate *fasterCandidate
}

// fasterCandidate is a setting explain tries: field set to value, and the
// fields in also with it.
type fasterCandidate struct {
	field string
	value any
	also  map[string]any
	needs string
	// applies reports whether the plan could take it (it is not already set).
	applies func(s *spec.Spec) bool
}

// apply sets the candidate's field and the fields in also on s with the
// checks' own setter (check.WithValue), so what explain applies is what its
// FasterSetting prints.
func (c *fasterCandidate) apply(s *spec.Spec) {
	set := func(path string, v any) {
		s2, ok := check.WithValue(s, path, v)
		if !ok {
			panic("estimate: a faster setting sets " + path + ", which check.WithValue cannot set")
		}
		*s = *s2
	}
	set(c.field, c.value)
	for _, k := range slices.Sorted(maps.Keys(c.also)) {
		set(k, c.also[k])
	}
}

// fasterCandidates are the performance settings Megatron-Core offers that
// parc leaves at Megatron's default (off) unless the spec sets them, each
// as NVIDIA's performance recipes turn it on, and that the step-time model
// times (TestFasterCandidatesAreTimed). The MoE permute fusion and the
// cross-entropy fusion are not among them: the model times the permutation
// and the loss the same with or without them (the cross-entropy fusion
// changes only the logits' memory), having no measurement of either on and
// off to time them by.
var fasterCandidates = []fasterCandidate{
	{field: "train.overlap_grad_reduce", value: true,
		applies: func(s *spec.Spec) bool { return !s.Train.OverlapGradReduce }},
	{field: "train.overlap_param_gather", value: true,
		applies: func(s *spec.Spec) bool { return !s.Train.OverlapParamGather }},
	// The interleaved schedule's transfers overlapped (Megatron's default;
	// NeMo 1's recipes turned it off): without it every transfer
	// synchronises the device, and the data-parallel traffic hides under
	// one pass of a chunk only (exposedDataParallel).
	{field: "parallel.overlap_p2p", value: true,
		applies: func(s *spec.Spec) bool {
			on := s.Parallel
			on.OverlapP2P = true
			return !s.Parallel.OverlapP2P && on.OverlapsP2P() // interleaved, with the overlap off
		}},
	{field: "parallel.tp_comm_overlap", value: true, needs: "Transformer Engine's userbuffers (TE built with them, as NVIDIA's containers are)",
		applies: func(s *spec.Spec) bool { return !spec.TPCommOverlapOn(s) && s.Parallel.TP > 1 }},
	// The output layer's weight gradients of the first 22 microbatches
	// deferred to the pipeline flush, off the last stage's critical path, as
	// Megatron-Bridge's Llama 3 70B recipes set it (CommOverlapConfig
	// defer_embedding_wgrad_compute, wgrad_deferral_limit 22:
	// src/megatron/bridge/recipes/llama/llama3_70b.py at 684a6861, and
	// perf_recipes/llama/{h100,gb200,gb300}/llama3.py at 067f987d). What
	// Megatron needs for it (a pipeline, gradient-accumulation fusion) is the
	// defer-embedding-wgrad check's, which FasterSettings runs on every
	// candidate; Megatron-Bridge turns it off under Megatron-FSDP
	// (scripts/performance/utils/helpers.py at 684a6861), a choice of the
	// recipes no check makes.
	{field: "parallel.defer_embedding_wgrad_compute", value: true,
		also: map[string]any{"parallel.wgrad_deferral_limit": 22},
		applies: func(s *spec.Spec) bool {
			return !s.Parallel.DeferEmbeddingWgradCompute && !s.Train.FSDP
		}},
	flexDispatcher("deepep", "the DeepEP library on every node"),
	flexDispatcher("hybridep", "DeepEP's hybrid-ep branch (HybridEP) on every node"),
	// Transformer Engine's CUDA graphs of each layer's attention, router and
	// dispatcher preprocessing, as Megatron-Bridge's DeepSeek-V3 and
	// Qwen3 MoE recipes capture them (cuda_graph_impl "transformer_engine",
	// scope attn, moe_router, moe_preprocess; 34 runs of the measured corpus).
	{field: "kernels.cuda_graph_impl", value: "transformer_engine",
		also:    map[string]any{"kernels.cuda_graph_modules": moeGraphModules},
		applies: func(s *spec.Spec) bool { return s.Model.MoE != nil && noCUDAGraph(s) }},
	// One CUDA graph of the whole iteration over an MoE model, as
	// Megatron-Bridge's full-iteration MoE recipes run it (26.06-26.08
	// DeepSeek-V3, Qwen3 and GPT-OSS on GB200/GB300; 26 runs of the measured
	// corpus): HybridEP with a rank budget of 1.5 (static dispatch shapes,
	// spec.MoE.StaticDispatch), the paged stash, Transformer Engine's op
	// fuser (which HybridEP's budget needs) and the NaN check off (which the
	// graph needs). Only on a plan without CUDA graphs (like the per-layer
	// ones above: what it sets is all it prints) whose dispatch is not
	// already another flex backend (one dispatcher is suggested at a time).
	{field: "kernels.cuda_graph_impl", value: "full_iteration",
		also:  fullIterationMoE,
		needs: "DeepEP's hybrid-ep branch (HybridEP) on every node",
		applies: func(s *spec.Spec) bool {
			m := s.Model.MoE
			return m != nil && s.Parallel.EP > 1 && noCUDAGraph(s) &&
				(m.Dispatcher != "flex" || m.FlexWith("hybridep"))
		}},
	{field: "kernels.moe_router_fusion", value: true,
		applies: func(s *spec.Spec) bool { return s.Model.MoE != nil && !s.Kernels.MoERouterFusion }},
	// The router pads each expert's tokens instead of the experts copying
	// them (fp8ExpertPadding).
	{field: "model.moe.router_padding_for_quantization", value: true,
		applies: fp8ExpertPadding},
	{field: "model.moe.shared_expert_overlap", value: true,
		applies: func(s *spec.Spec) bool {
			return s.Model.MoE != nil && s.Model.MoE.SharedFFNHidden > 0 && !s.Model.MoE.SharedExpertOverlap
		}},
	{field: "parallel.overlap_moe_expert_parallel_comm", value: true,
		applies: func(s *spec.Spec) bool {
			return s.Model.MoE != nil && s.Parallel.EP > 1 && !s.Parallel.OverlapMoEExpertParallelComm
		}},
	// Megatron-Bridge's offload runs gained 7% at 100% offloaded
	// (TestOptimizerOffloadMeasured).
	{field: "train.overlap_cpu_optimizer_d2h_h2d", value: true,
		applies: func(s *spec.Spec) bool { return s.Train.OptimizerCPUOffload && !s.Train.OverlapCPUOptimizerD2HH2D }},
}

// noCUDAGraph reports a plan without CUDA graphs (cuda_graph_impl unset or
// "none", no module list).
func noCUDAGraph(s *spec.Spec) bool {
	k := s.Kernels
	return (k.CUDAGraphImpl == "" || k.CUDAGraphImpl == "none") && len(k.CUDAGraphModules) == 0 && len(k.CUDAGraphScope) == 0
}

// flexDispatcher is the flex token dispatcher with backend, for an MoE plan
// with expert parallelism on another dispatcher.
func flexDispatcher(backend, needs string) fasterCandidate {
	return fasterCandidate{field: "model.moe.dispatcher", value: "flex",
		also: map[string]any{"model.moe.flex_dispatcher_backend": backend}, needs: needs,
		applies: func(s *spec.Spec) bool {
			return s.Model.MoE != nil && s.Parallel.EP > 1 && s.Model.MoE.Dispatcher != "flex"
		}}
}

// fullIterationCapacityFactor is the rank budget Megatron-Bridge's
// full-iteration MoE recipes set (set_full_iter_cg_configs at r0.5.0,
// moe_expert_rank_capacity_factor 1.5).
const fullIterationCapacityFactor = 1.5

// fullIterationMoE are the settings the full-iteration MoE candidate sets
// with cuda_graph_impl "full_iteration".
var fullIterationMoE = map[string]any{
	"model.moe.dispatcher":                    "flex",
	"model.moe.flex_dispatcher_backend":       "hybridep",
	"model.moe.expert_rank_capacity_factor":   fullIterationCapacityFactor,
	"model.moe.paged_stash":                   true,
	"kernels.use_transformer_engine_op_fuser": true,
	"train.check_for_nan_in_loss_and_grad":    false,
}

// moeGraphModules are the per-layer CUDA graphs Megatron-Bridge's MoE
// recipes capture (the faster setting's cuda_graph_modules).
var moeGraphModules = []string{"attn", "moe_router", "moe_preprocess"}

// minFasterPct is the least step-time gain a setting must bring to be
// listed (below it the change is within the model's noise).
const minFasterPct = 1.0

// FasterSettings lists the single settings (fasterCandidates) that pass
// every check the plan passes, keep its peak within maxFraction of the GPU
// and shorten its estimated step (base, the plan's own estimate) by at
// least minFasterPct, fastest first. links and o are what base was
// estimated with.
func FasterSettings(s *spec.Spec, d spec.Derived, links map[string]string, o Options, base *Estimate, maxFraction float64) []FasterSetting {
	if base == nil || base.StepTimeS <= 0 {
		return nil
	}
	baseline := errorKeys(check.Verdict(s, d, diag.NoPos))
	o.VerifyHints = false
	var out []FasterSetting
	for i := range fasterCandidates {
		c := &fasterCandidates[i]
		if !c.applies(s) {
			continue
		}
		s2 := *s
		c.apply(&s2)
		d2 := spec.Derive(&s2)
		if !noNewErrors(baseline, &s2, d2) {
			continue
		}
		e, _ := RunWith(&s2, d2, links, diag.NoPos, o)
		if e == nil || e.Memory.FractionOfGPU > maxFraction {
			continue
		}
		pct := 100 * (e.StepTimeS/base.StepTimeS - 1)
		if pct > -minFasterPct {
			continue
		}
		out = append(out, FasterSetting{Field: c.field, Value: c.value, Also: c.also, StepTimeS: e.StepTimeS,
			ChangePct: pct, FractionOfGPU: e.Memory.FractionOfGPU, Needs: c.needs, candidate: c})
	}
	slices.SortStableFunc(out, func(a, b FasterSetting) int { return cmp.Compare(a.StepTimeS, b.StepTimeS) })
	return out
}

// A FasterCombination is the faster settings (FasterSettings) applied
// together: the plan's step with every one of them that still passes every
// check, fits and shortens the step once the others are set. It is the
// model's estimate of the plan with every suggestion taken, not a
// measurement: testdata/calibration/README.md (footnote ³) gives its error
// against published runs written with the contract's fields only.
type FasterCombination struct {
	// Settings are the settings applied, in the order they were tried
	// (each single's own gain, largest first); each one's StepTimeS,
	// ChangePct and FractionOfGPU are the plan's with it and those before
	// it set.
	Settings      []FasterSetting `json:"settings"`
	StepTimeS     float64         `json:"step_time_s"`
	ChangePct     float64         `json:"change_pct"`
	FractionOfGPU float64         `json:"fraction_of_gpu"`
}

// FasterTogether applies singles (FasterSettings of the same plan, fastest
// first) one after another: a setting is kept when the plan with it and the
// ones kept before passes every check the plan passes, keeps its peak within
// maxFraction of the GPU and is at least minFasterPct faster than without
// it. Settings that exclude each other (the flex dispatcher's backends) are
// tried in that order and the first kept wins. Nil unless two or more are
// kept (one is its own line already).
func FasterTogether(s *spec.Spec, d spec.Derived, links map[string]string, o Options, base *Estimate, maxFraction float64, singles []FasterSetting) *FasterCombination {
	if base == nil || base.StepTimeS <= 0 || len(singles) < 2 {
		return nil
	}
	baseline := errorKeys(check.Verdict(s, d, diag.NoPos))
	o.VerifyHints = false
	cur, step := *s, base.StepTimeS
	var out FasterCombination
	for _, f := range singles {
		c := f.candidate
		if c == nil || !c.applies(&cur) {
			continue
		}
		s2 := cur
		c.apply(&s2)
		d2 := spec.Derive(&s2)
		if !noNewErrors(baseline, &s2, d2) {
			continue
		}
		e, _ := RunWith(&s2, d2, links, diag.NoPos, o)
		if e == nil || e.Memory.FractionOfGPU > maxFraction || 100*(e.StepTimeS/step-1) > -minFasterPct {
			continue
		}
		cur, step = s2, e.StepTimeS
		f.StepTimeS, f.ChangePct, f.FractionOfGPU = e.StepTimeS, 100*(e.StepTimeS/base.StepTimeS-1), e.Memory.FractionOfGPU
		out.Settings = append(out.Settings, f)
	}
	if len(out.Settings) < 2 {
		return nil
	}
	last := out.Settings[len(out.Settings)-1]
	out.StepTimeS, out.ChangePct, out.FractionOfGPU = last.StepTimeS, last.ChangePct, last.FractionOfGPU
	return &out
}
