package report

import (
	"fmt"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/targets/template"
)

// Row is a label and its value.
type Row struct {
	Label, Value string
}

// MemoryRow is one pipeline stage's memory per GPU.
type MemoryRow struct {
	Stage, Layers, Params, InFlight                  string
	Weights, Gradients, Optimizer, Activations       string
	ActLayers, ActEmbedding, ActLogits, ActRecompute string
	Total, OfGPU                                     string
	Peak                                             bool
}

// CommRow is one parallel axis's traffic per step.
type CommRow struct {
	Axis, Group, Size, Pattern, Bytes, PerLayer, Link, Bandwidth, Time, Exposed string
}

// FamilyRow is one process-group family of the layout.
type FamilyRow struct {
	Name, Grid, Size, Count, Link, LeaveNode, LeaveDomain string
}

// Data is what report.md.tmpl is executed on, and what Explain prints:
// every number already formatted.
type Data struct {
	Plan   *plan.Plan
	Title  string
	Source string
	// Summary is the headline table.
	Summary     []Row
	HasEstimate bool
	Params      []Row
	Memory      []MemoryRow
	// MemoryNotes compare with Megatron's theoretical memory.
	MemoryNotes []string
	Pipeline    []Row
	Comms       []CommRow
	Compute     []Row
	// Faster lists the settings that, each on its own, would shorten the
	// step (estimate.FasterSettings): the setting, and what it gives.
	Faster    []Row
	HasLayout bool
	Families  []FamilyRow
	// PipelinePicture and LayoutPicture are the SVG files beside the report
	// ("" when not drawn).
	PipelinePicture string
	LayoutPicture   string
	Warnings        []string
	Assumptions     []string
}

// NewData formats a plan for the report; warnings are the diagnostics the
// plan passed with.
func NewData(p *plan.Plan, warnings diag.List) *Data {
	s, d := &p.Spec, &p.Derived
	cl, par, tr := &s.Cluster, &s.Parallel, &s.Train
	data := &Data{
		Plan:   p,
		Title:  fmt.Sprintf("%s on %d × %d %s", s.Model.Name, cl.Nodes, cl.GPUsPerNode, cl.GPU.Name),
		Source: path.Base(strings.ReplaceAll(p.Source, `\`, "/")),
	}
	sp := "off"
	if d.SP {
		sp = "on"
	}
	degrees := fmt.Sprintf("tp %d · pp %d · cp %d · dp %d", par.TP, par.PP, par.CP, d.DP)
	if d.VPP > 1 {
		degrees = fmt.Sprintf("tp %d · pp %d (vpp %d) · cp %d · dp %d", par.TP, par.PP, d.VPP, par.CP, d.DP)
	}
	if s.Model.MoE != nil {
		degrees += fmt.Sprintf(" · ep %d · etp %d · edp %d", par.EP, d.ETP, d.EDP)
	}
	data.Summary = []Row{
		{"GPUs", fmt.Sprintf("%d = %d nodes × %d %s (%.0f GiB, %.0f TFLOP/s bf16)", d.World, cl.Nodes, cl.GPUsPerNode, cl.GPU.Name, cl.GPU.MemoryGiB, cl.GPU.BF16TFLOPs)},
		{"links", fmt.Sprintf("NVLink %.0f GB/s per GPU within %d GPUs; network %.0f GB/s per GPU", cl.NVLinkGBps, cl.NVLinkDomain, cl.NetworkGBps)},
		{"parallelism", degrees + ", sequence parallel " + sp + ", order " + par.Order},
		{"batch", fmt.Sprintf("global %d × sequence %d = %s tokens per step; micro batch %d, %d microbatches",
			tr.GlobalBatch, tr.SeqLength, Thousands(int64(tr.GlobalBatch)*int64(tr.SeqLength)), tr.MicroBatch, d.Microbatches)},
		{"training", fmt.Sprintf("%s, recompute %s, distributed optimizer %v", tr.Precision, tr.Recompute, tr.DistributedOptimizer) + optimizerNote(tr)},
	}
	if e := p.Estimate; e != nil {
		data.HasEstimate = true
		data.Summary = append(data.Summary,
			Row{"step time", fmt.Sprintf("%s (estimated), %s tokens/s, MFU %s", Seconds(e.StepTimeS), Rate(e.TokensPerS), Percent(e.MFU))},
			Row{"peak memory", fmt.Sprintf("%s of %s per GPU (%s), pipeline stage %d",
				Bytes(e.Memory.PerGPUPeakBytes), Bytes(e.Memory.GPUBytes), Percent(e.Memory.FractionOfGPU), e.Memory.PeakStage)},
			Row{"pipeline bubble", Percent(e.Pipeline.BubbleFraction)},
		)
		if r := e.Run; r != nil {
			data.Summary = append(data.Summary, Row{"training run", RunText(r)})
		}
		if a := e.Accuracy; a != nil {
			data.Summary = append(data.Summary, Row{"step-time accuracy", AccuracyText(a)})
		}
		data.fillEstimate(p, e)
	}
	if l := p.Layout; l != nil {
		data.HasLayout = true
		data.LayoutPicture = LayoutSVG
		for _, f := range l.Summaries {
			data.Families = append(data.Families, FamilyRow{
				Name: f.Name, Grid: f.Grid, Size: fmt.Sprint(f.Size), Count: fmt.Sprint(f.Count), Link: f.Link,
				LeaveNode: fmt.Sprint(f.GroupsLeavingNode), LeaveDomain: fmt.Sprint(f.GroupsLeavingDomain),
			})
		}
	}
	for _, w := range warnings {
		if w.Severity != diag.Warning {
			continue
		}
		line := fmt.Sprintf("%s (%s): %s", w.Code, w.Path, w.Message)
		if w.Hint != "" {
			line += " — " + w.Hint
		}
		data.Warnings = append(data.Warnings, line)
	}
	data.finite()
	return data
}

func (data *Data) fillEstimate(p *plan.Plan, e *estimate.Estimate) {
	s := &p.Spec
	data.Params = []Row{
		{"total", fmt.Sprintf("%s (%s)", Count(e.Params.Total), Thousands(e.Params.Total))},
		{"per GPU, most loaded stage", fmt.Sprintf("%s (%s)", Count(e.Params.PerGPUMax), Thousands(e.Params.PerGPUMax))},
		{"embeddings and output layer", Count(e.Params.Embedding)},
	}
	if e.Params.Experts > 0 {
		data.Params = append(data.Params,
			Row{"routed experts", Count(e.Params.Experts)},
			Row{"active per token", Count(e.Params.Active)})
	}
	data.Params = append(data.Params, Row{"Megatron's count (no biases, no position embeddings)", Count(e.Params.Megatron)})

	for _, st := range e.Memory.Stages {
		inflight := make([]string, len(st.InFlight))
		for i, n := range st.InFlight {
			inflight[i] = fmt.Sprint(n)
		}
		of := ""
		if e.Memory.GPUBytes > 0 {
			of = Percent(float64(st.Total) / float64(e.Memory.GPUBytes))
		}
		data.Memory = append(data.Memory, MemoryRow{
			Stage: fmt.Sprint(st.Stage), Layers: fmt.Sprint(st.Layers), Params: Count(st.Params),
			InFlight: strings.Join(inflight, "+"),
			Weights:  Bytes(st.Weights), Gradients: Bytes(st.Gradients), Optimizer: Bytes(st.Optimizer),
			Activations: Bytes(st.Activations), ActLayers: Bytes(st.ActivationsLayers),
			ActEmbedding: Bytes(st.ActivationsEmbedding), ActLogits: Bytes(st.ActivationsLogits),
			ActRecompute: Bytes(st.ActivationsRecompute), Total: Bytes(st.Total), OfGPU: of,
			Peak: st.Stage == e.Memory.PeakStage,
		})
	}
	data.MemoryNotes = nil
	for _, st := range e.Memory.Stages {
		if st.ActivationsOffloaded > 0 && s.Train.CPUOffloadingNumLayers > 0 {
			data.MemoryNotes = append(data.MemoryNotes,
				fmt.Sprintf("CPU activation offloading (train.cpu_offloading_num_layers = %d): stage %d keeps %s of activations per microbatch in host memory; the activations above are what stays on the GPU.",
					s.Train.CPUOffloadingNumLayers, st.Stage, Bytes(st.ActivationsOffloaded)))
		}
		if st.ActivationsOffloaded > 0 && s.Train.FineGrainedActivationOffloading {
			data.MemoryNotes = append(data.MemoryNotes,
				fmt.Sprintf("Fine-grained activation offloading (train.offload_modules = %s): at its peak stage %d holds %s of activations in host memory; the activations above are what stays on the GPU.",
					strings.Join(s.Train.OffloadModules, ", "), st.Stage, Bytes(st.ActivationsOffloaded)))
		}
		if st.ActivationsDeferredWgrad > 0 {
			data.MemoryNotes = append(data.MemoryNotes,
				fmt.Sprintf("Deferred output-layer weight gradients (parallel.defer_embedding_wgrad_compute): stage %d keeps %s of output-layer inputs and logits gradients until the pipeline flush (included in its logits).",
					st.Stage, Bytes(st.ActivationsDeferredWgrad)))
		}
	}
	for _, st := range e.Memory.Stages {
		if st.CommBuffers > 0 && s.Model.MoE != nil {
			backend := s.Model.MoE.FlexBackend()
			data.MemoryNotes = append(data.MemoryNotes,
				fmt.Sprintf("Flex token dispatcher buffer (model.moe.flex_dispatcher_backend = %s): every GPU of a stage with MoE layers holds %s for the dispatch/combine communication, allocated outside PyTorch's allocator; included in the totals above.",
					backend, Bytes(st.CommBuffers)))
			break
		}
	}
	if m := s.Model.MoE; m.RankBudget() {
		cf := *m.ExpertRankCapacityFactor
		note := fmt.Sprintf("Rank budget (model.moe.expert_rank_capacity_factor = %g): the %s dispatch hands each expert rank a fixed %g× its balanced share of routed tokens, and the experts keep their activations for the backward at that size",
			cf, m.FlexDispatcherBackend, cf)
		if m.PagedStash {
			note = fmt.Sprintf("Rank budget with the paged stash (model.moe.expert_rank_capacity_factor = %g, model.moe.paged_stash): the experts keep their activations for the backward in pages at their real size, in buffers of the routed tokens × %g (model.moe.paged_stash_buffer_size_factor_cuda)",
				cf, estimate.RoutedBudget(m))
		}
		data.MemoryNotes = append(data.MemoryNotes, note+"; included in the activations above.")
	}
	if e.Memory.MegatronApplies {
		data.MemoryNotes = append(data.MemoryNotes,
			fmt.Sprintf("Reference, not used for fit: Megatron-LM's theoretical memory for the first stage (theoretical_memory_usage.py, %s formula) is %s = weights and optimizer %s + activations %s; parc's model above gives that stage %s.",
				e.Memory.MegatronFormula, Bytes(e.Memory.MegatronTheoreticalBytes),
				Bytes(e.Memory.MegatronWeightsOptimizerBytes), Bytes(e.Memory.MegatronActivationsBytes),
				Bytes(e.Memory.RefinedFirstStageBytes)))
	}

	pl := e.Pipeline
	data.Pipeline = []Row{
		{"schedule", pl.Schedule},
		{"stages × virtual stages", fmt.Sprintf("%d × %d", pl.Stages, pl.VirtualStages)},
		{"microbatches per step", fmt.Sprint(pl.Microbatches)},
	}
	if pl.Stages > 1 {
		formula := fmt.Sprintf("(p−1)/(m+p−1) = %d/%d", pl.Stages-1, pl.Microbatches+pl.Stages-1)
		if pl.VirtualStages > 1 {
			formula = fmt.Sprintf("(p−1)/(v·m+p−1) = %d/%d", pl.Stages-1, pl.VirtualStages*pl.Microbatches+pl.Stages-1)
		}
		data.Pipeline = append(data.Pipeline,
			Row{"bubble", fmt.Sprintf("%s = %s with equal stages; modelled %s, %s of the step", formula, Percent(pl.BubbleFraction), Seconds(pl.BubbleTimeS), Percent(bubbleShare(pl.BubbleTimeS, e.StepTimeS)))})
		layers := make([]string, len(pl.LayersPerStage))
		for r, row := range pl.LayersPerStage {
			parts := make([]string, len(row))
			for v, n := range row {
				parts[v] = fmt.Sprint(n)
			}
			layers[r] = strings.Join(parts, "+")
		}
		data.Pipeline = append(data.Pipeline, Row{"layers per stage", strings.Join(layers, ", ")})
	}
	data.PipelinePicture = PipelineSVG

	for _, ax := range e.Axes() {
		c := e.Comms[ax]
		perLayer := ""
		if c.BytesPerLayer > 0 {
			perLayer = Bytes(c.BytesPerLayer)
		}
		data.Comms = append(data.Comms, CommRow{
			Axis: ax, Group: c.Group, Size: fmt.Sprint(c.Size), Pattern: Pattern(ax, c),
			Bytes: Bytes(c.BytesPerStep), PerLayer: perLayer, Link: c.Link,
			Bandwidth: fmt.Sprintf("%.0f GB/s", c.BandwidthGBps), Time: Seconds(c.TimeS), Exposed: Seconds(c.ExposedS),
		})
	}

	tr := s.Train
	data.Compute = []Row{
		{"FLOPs per step (Megatron's formula)", FLOPs(e.FLOPsPerStep)},
		{"FLOPs per GPU, slowest stage (with recompute)", FLOPs(e.Compute.FLOPsPerGPU)},
		{"dense peak per GPU", fmt.Sprintf("%.0f TFLOP/s (%s GEMMs); the compute time reaches %s of it", e.Compute.PeakTFLOPs, tr.Precision, Percent(e.Compute.Efficiency))},
		{"compute per step, slowest stage", fmt.Sprintf("%s = GEMMs %s + attention %s + memory-bound %s + kernel overhead %s + waiting on the host %s",
			Seconds(e.Compute.TimeS), Seconds(e.Compute.GEMMS), Seconds(e.Compute.AttentionS), Seconds(e.Compute.MemoryBoundS), Seconds(e.Compute.KernelOverheadS), Seconds(e.Compute.HostBoundS))},
		{"one microbatch on the slowest stage, exposed comms included", Seconds(e.Compute.MicrobatchTimeS)},
		{"optimizer step", optimizerStep(tr, e)},
	}
	if e.Compute.SlowestNodeWaitS > 0 {
		data.Compute = append(data.Compute, Row{"waiting for the slowest node, per step", Seconds(e.Compute.SlowestNodeWaitS)})
	}
	if e.Compute.OffloadExposedS > 0 {
		data.Compute = append(data.Compute, Row{"waiting on activation offloading's copies, per step", Seconds(e.Compute.OffloadExposedS)})
	}
	if e.Compute.DeferredWgradS > 0 {
		data.Compute = append(data.Compute, Row{"output layer's weight gradients deferred to the pipeline flush, per step",
			fmt.Sprintf("%s, of which %s not hidden by the other stages' cooldown", Seconds(e.Compute.DeferredWgradS), Seconds(e.Compute.DeferredWgradExposedS))})
	}
	data.Compute = append(data.Compute, []Row{
		{"step time", Seconds(e.StepTimeS)},
		{"tokens per second", fmt.Sprintf("%s (%s per GPU)", Rate(e.TokensPerS), Rate(e.TokensPerS/float64(max(p.Derived.World, 1))))},
		{"model TFLOP/s per GPU", modelTFLOPs(e)},
		{"MFU", fmt.Sprintf("%s of the dense %s peak", Percent(e.MFU), peakName(tr.Precision))},
	}...)
	for _, f := range e.FasterSettings {
		label, v := fasterSetting(f)
		data.Faster = append(data.Faster, Row{label, v})
	}
	if t := e.FasterTogether; t != nil {
		label, v := fasterTogether(t)
		data.Faster = append(data.Faster, Row{label, v})
	}
	cal := e.Assumptions.Calibration
	fp4 := ""
	if tr.Precision == "fp4" {
		fp4 = ", " + Percent(cal.FP4Eff()) + " of the fp4 peak (NVFP4)"
	}
	data.Assumptions = append([]string{
		fmt.Sprintf("calibration: large GEMMs at %s of the bf16 peak, %s of the fp8 peak%s; flash attention at %s; %.1f µs per kernel on the GPU, %.1f µs to issue one from the host; nodes' step times spread by %.1f ms (each step waits that × √(2 ln nodes) for the slowest); collectives at NCCL's measured bus bandwidth (NVLink by GPU generation, network 96%% of the NIC's line rate) × %s (NVLink), × %s (network)",
			Percent(cal.GEMMEff), Percent(cal.FP8GEMMEff), fp4, Percent(cal.AttnEff), cal.KernelS*1e6, cal.HostOpS*1e6, cal.StepJitterS*1e3, Percent(cal.NVLinkEff), Percent(cal.NetworkEff)),
		fmt.Sprintf("attention fused: %v; state sharding: %s; %.4g + %.4g + %.4g bytes per parameter (weights, gradients, optimizer)",
			e.Assumptions.FusedAttention, e.Assumptions.Sharding,
			e.Assumptions.StateBytes.Weights, e.Assumptions.StateBytes.Gradients, e.Assumptions.StateBytes.Optimizer),
	}, e.Assumptions.Notes...)
}

// optimizerStep says the optimizer step's time, and the host's part of it
// with optimizer_cpu_offload.
func optimizerStep(t spec.Train, e *estimate.Estimate) string {
	if e.Compute.OptimizerHostS <= 0 {
		return Seconds(e.Compute.OptimizerS)
	}
	how := "Adam and the copies"
	if t.OverlapCPUOptimizerD2HH2D {
		how = "Adam; the copies overlapped"
	}
	return fmt.Sprintf("%s, of which %s on the host (%s for %s of each rank's optimizer shard: optimizer_cpu_offload)",
		Seconds(e.Compute.OptimizerS), Seconds(e.Compute.OptimizerHostS), how, Percent(t.OptimizerOffloadFraction))
}

func peakName(precision string) string {
	switch precision {
	case "fp8":
		return "fp8"
	case "fp4":
		return "fp4"
	case "fp32":
		return "TF32"
	}
	return "bf16"
}

// bucketsNote words a data-parallel axis's collectives per reduction: DDP
// buckets of a size (one bucket: the whole buffer, as without
// overlap_grad_reduce or with ddp_num_buckets 1), or Megatron-FSDP's units.
func bucketsNote(c estimate.AxisComm) string {
	n := int64(c.Buckets)
	if c.BucketParams > 0 {
		if n == 1 {
			return fmt.Sprintf(" (one bucket of %s parameters, stage %d)", Count(c.BucketParams), c.Stage)
		}
		return fmt.Sprintf(" (%d buckets of up to %s parameters, stage %d)", n, Count(c.BucketParams), c.Stage)
	}
	return fmt.Sprintf(" (%d collectives per pass, one per FSDP unit, stage %d)", n, c.Stage)
}

// Pattern words what an axis moves, from the estimate's collective name,
// and for the data-parallel axes how many collectives a reduction takes:
// bucket by bucket (bucketsNote), or one bucket holding the whole buffer.
func Pattern(axis string, c estimate.AxisComm) string {
	collective := c.Collective
	switch axis {
	case "tp":
		if collective == estimate.CollectiveGatherScatter {
			return "all-gathers and reduce-scatters of the activation (sequence parallel), 2 forward + 2 backward per layer and microbatch"
		}
		return "2 all-reduces forward + 2 backward per layer and microbatch"
	case "cp":
		if collective == estimate.CollectiveAllToAll {
			return "all-to-all of Q/K/V and output, forward and backward, per layer and microbatch"
		}
		return "ring exchange of K/V forward, K/V and their gradients backward, per layer and microbatch, overlapped with attention"
	case "ep":
		if collective == estimate.CollectiveGatherScatter {
			return "all-gather dispatch + reduce-scatter combine forward and backward per MoE layer and microbatch"
		}
		return "all-to-all dispatch + combine forward and backward per MoE layer and microbatch (NVLink for peers in the domain, network for the rest)"
	case "etp":
		return "all-gather + reduce-scatter of the routed tokens forward and backward per MoE layer"
	case "pp":
		return "point-to-point activation forward and gradient backward per microbatch and virtual stage"
	case "embd":
		return "all-reduce of the tied word-embedding gradient between the first and last stage"
	}
	p, buckets := "all-reduce of gradients, once per step", true
	switch collective {
	case estimate.CollectiveShardedDP:
		p = "reduce-scatter of gradients + all-gather of parameters, once per step"
	case estimate.CollectiveGradShardedDP:
		p = "reduce-scatter of gradients every microbatch + all-gather of parameters once per step"
	case estimate.CollectiveFSDP:
		p, buckets = "all-gather of parameters forward and backward + reduce-scatter of gradients, every microbatch", false
	}
	if buckets && (c.Buckets != 1 || c.BucketParams <= 0) {
		p += ", bucket by bucket"
	}
	if c.Buckets > 0 {
		p += bucketsNote(c)
	}
	return p
}

// nonFinite matches what fmt prints for an infinite or undefined float.
var nonFinite = regexp.MustCompile(`[+-]?Inf\b|\bNaN\b`)

// finite replaces every infinite or undefined number in the formatted text
// with "n/a". The schema bounds the hardware figures so the estimates stay
// finite, but a spec built in Go (or a figure the estimate cannot divide
// by) must never show "+Inf s" or "NaN" in report.md or explain.
func (data *Data) finite() {
	fix := func(p *string) { *p = nonFinite.ReplaceAllString(*p, "n/a") }
	rows := func(rs []Row) {
		for i := range rs {
			fix(&rs[i].Value)
		}
	}
	fix(&data.Title)
	rows(data.Summary)
	rows(data.Params)
	rows(data.Pipeline)
	rows(data.Compute)
	rows(data.Faster)
	for i := range data.Memory {
		m := &data.Memory[i]
		for _, p := range []*string{&m.Stage, &m.Layers, &m.Params, &m.InFlight, &m.Weights, &m.Gradients, &m.Optimizer,
			&m.Activations, &m.ActLayers, &m.ActEmbedding, &m.ActLogits, &m.ActRecompute, &m.Total, &m.OfGPU} {
			fix(p)
		}
	}
	for i := range data.Comms {
		c := &data.Comms[i]
		for _, p := range []*string{&c.Size, &c.Bytes, &c.PerLayer, &c.Bandwidth, &c.Time, &c.Exposed} {
			fix(p)
		}
	}
	for _, l := range [][]string{data.MemoryNotes, data.Warnings, data.Assumptions} {
		for i := range l {
			fix(&l[i])
		}
	}
}

// fasterSetting writes a faster setting as the change ("set field: value")
// and what it gives.
func fasterSetting(f estimate.FasterSetting) (change, effect string) {
	change = "set " + f.Field + ": " + spec.Literal(f.Value)
	for _, k := range slices.Sorted(maps.Keys(f.Also)) {
		change += ", " + k + ": " + spec.Literal(f.Also[k])
	}
	effect = fmt.Sprintf("%+.1f%% step time (%s), peak %s of the GPU", f.ChangePct, Seconds(f.StepTimeS), Percent(f.FractionOfGPU))
	if f.Needs != "" {
		effect += "; needs " + f.Needs
	}
	return change, effect
}

// fasterTogether writes the faster settings applied together as the fields
// set and what they give.
func fasterTogether(t *estimate.FasterCombination) (change, effect string) {
	fields := make([]string, len(t.Settings))
	for i, f := range t.Settings {
		fields[i] = f.Field
		backend, flex := f.Also["model.moe.flex_dispatcher_backend"]
		switch v, isString := f.Value.(string); {
		case flex && f.Field == "model.moe.dispatcher":
			fields[i] += " " + spec.Literal(backend)
		case isString && flex:
			fields[i] += " " + spec.Literal(v) + " (flex dispatcher " + spec.Literal(backend) + ")"
		case isString:
			fields[i] += " " + spec.Literal(v)
		}
	}
	change = "all of " + strings.Join(fields, ", ") + " together"
	effect = fmt.Sprintf("%+.1f%% step time (%s), peak %s of the GPU", t.ChangePct, Seconds(t.StepTimeS), Percent(t.FractionOfGPU))
	return change, effect
}

// FasterTogetherText is the faster settings applied together on one line.
func FasterTogetherText(t *estimate.FasterCombination) string {
	change, effect := fasterTogether(t)
	return template.Comment(change + ": " + effect)
}

// FasterSettingText is a faster setting on one line: the change, then
// what it gives.
func FasterSettingText(f estimate.FasterSetting) string {
	change, effect := fasterSetting(f)
	return template.Comment(change + ": " + effect)
}

// modelTFLOPs is the model TFLOP/s row: Megatron's FLOP count as
// Megatron-Bridge's tables take it, and Megatron-LM's own where the two
// differ (sliding-window layers).
func modelTFLOPs(e *estimate.Estimate) string {
	v := fmt.Sprintf("%.1f (Megatron's FLOPs per step / step time / GPUs)", e.ModelTFLOPsPerGPU)
	if e.ModelFLOPsPerStep != e.FLOPsPerStep && e.ModelFLOPsPerStep > 0 {
		v = fmt.Sprintf("%.1f (Megatron-Bridge's FLOPs per step, sliding-window layers over their window, / step time / GPUs; "+
			"Megatron-LM's formula, which counts them over the whole sequence: %.1f)",
			e.ModelTFLOPsPerGPU, e.ModelTFLOPsPerGPU*e.FLOPsPerStep/e.ModelFLOPsPerStep)
	}
	return v
}

// AccuracyText says how far the step-time model was from published
// measurements of this kind of model on this GPU, in this precision where
// the table splits by it (estimate.AccuracyOf).
func AccuracyText(a *estimate.Accuracy) string {
	models := map[string]string{
		estimate.KindDense:              "dense models",
		estimate.KindCoarseMoE:          "MoE models with up to 16 experts",
		estimate.KindFineMoE:            "MoE models with more than 16 experts",
		estimate.KindLargeFineMoE:       "MoE models with more than 16 experts and over 150B parameters",
		estimate.KindDenseAtScale:       "dense models on 4,096 GPUs or more",
		estimate.KindDenseOneMicrobatch: "dense models at one microbatch per step on 32 GPUs or more",
	}[a.Model]
	if models == "" {
		models = a.Model
	}
	band := fmt.Sprintf("by %s to %s (median %s)", SignedPercent(a.LowestError), SignedPercent(a.HighestError), SignedPercent(a.MedianError))
	if a.Runs >= 10 {
		band = fmt.Sprintf("by %s to %s for 80%% of them (median %s; %s to %s for all)",
			SignedPercent(a.P10Error), SignedPercent(a.P90Error), SignedPercent(a.MedianError), SignedPercent(a.LowestError), SignedPercent(a.HighestError))
	}
	runs := "runs"
	if a.Precision != "" {
		runs = a.Precision + " runs"
	}
	return fmt.Sprintf("on %d published %s of %s on %s, the estimated tokens/s differed from the measured %s; negative: the runs were faster than estimated",
		a.Runs, runs, models, a.GPU, band)
}

// optimizerNote names an optimizer other than Adam (the default) after the
// training line, and for an emerging one (muon) with the distributed
// optimizer that Megatron runs its layer-wise distributed optimizer.
func optimizerNote(tr *spec.Train) string {
	switch {
	case tr.LayerWiseOptimizer():
		return ", optimizer " + tr.OptimizerName() + " (layer-wise distributed)"
	case tr.OptimizerName() != "adam":
		return ", optimizer " + tr.OptimizerName()
	}
	return ""
}

// RunText says what the whole run costs (estimate.TrainingRun).
func RunText(r *estimate.TrainingRun) string {
	text := fmt.Sprintf("%s, %s tokens: %s", plural(r.Steps, "step"), Count(r.Tokens), Duration(r.TimeS))
	if r.EvalS > 0 {
		text += fmt.Sprintf(" (%s of it %s)", Duration(r.EvalS), plural(r.Evaluations, "evaluation"))
	}
	text += fmt.Sprintf(", %s GPU-hours on %s GPUs", Thousands(int64(math.Round(r.GPUHours))), Thousands(int64(r.GPUs)))
	if r.Jobs > 1 {
		text += fmt.Sprintf(", in about %d Slurm jobs of %s each", r.Jobs, Duration(r.JobS))
	}
	if len(r.Phases) > 1 {
		phase := func(p estimate.RunPhase) string {
			return fmt.Sprintf("batch %s for %s at %s", Thousands(p.Batch), plural(p.Steps, "step"), Seconds(p.StepTimeS))
		}
		var parts []string
		for i, p := range r.Phases {
			if len(r.Phases) > 4 && i == 2 {
				parts = append(parts, fmt.Sprintf("%d more phases", len(r.Phases)-3))
				continue
			}
			if len(r.Phases) > 4 && i > 2 && i < len(r.Phases)-1 {
				continue
			}
			parts = append(parts, phase(p))
		}
		text += "; " + strings.Join(parts, ", then ")
	}
	return text + "; start-up, checkpoint saves and restarts not included"
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Thousands(n) + " " + noun + "s"
}
