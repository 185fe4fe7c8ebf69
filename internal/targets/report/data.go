package report

import (
	"fmt"
	"path"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/plan"
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
	HasLayout   bool
	Families    []FamilyRow
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
		{"training", fmt.Sprintf("%s, recompute %s, distributed optimizer %v", tr.Precision, tr.Recompute, tr.DistributedOptimizer)},
	}
	if e := p.Estimate; e != nil {
		data.HasEstimate = true
		data.Summary = append(data.Summary,
			Row{"step time", fmt.Sprintf("%s (estimated), %s tokens/s, MFU %s", Seconds(e.StepTimeS), Rate(e.TokensPerS), Percent(e.MFU))},
			Row{"peak memory", fmt.Sprintf("%s of %s per GPU (%s), pipeline stage %d",
				Bytes(e.Memory.PerGPUPeakBytes), Bytes(e.Memory.GPUBytes), Percent(e.Memory.FractionOfGPU), e.Memory.PeakStage)},
			Row{"pipeline bubble", Percent(e.Pipeline.BubbleFraction)},
		)
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
	data.MemoryNotes = []string{
		fmt.Sprintf("Megatron-LM's theoretical memory for the first stage (theoretical_memory_usage.py, %s formula): %s = weights and optimizer %s + activations %s.",
			e.Memory.MegatronFormula, Bytes(e.Memory.MegatronTheoreticalBytes),
			Bytes(e.Memory.MegatronWeightsOptimizerBytes), Bytes(e.Memory.MegatronActivationsBytes)),
	}
	if m := e.Memory.MegatronTheoreticalBytes; m > 0 {
		refined := e.Memory.RefinedFirstStageBytes
		delta := 100 * (float64(refined) - float64(m)) / float64(m)
		if e.Memory.Model == "megatron" {
			data.MemoryNotes = append(data.MemoryNotes, fmt.Sprintf(
				"Megatron's formula applies to this plan, so the first stage above is Megatron's figure; parc's refined estimate (real Q/K/V and MLP widths, biases, position embeddings, the real schedule) is %s (%+.1f%%).",
				Bytes(refined), delta))
		} else {
			data.MemoryNotes = append(data.MemoryNotes, fmt.Sprintf(
				"Megatron's formula does not cover this plan (MoE, context parallelism, full recompute, fp8/fp32, or sequence parallelism without selective recompute), so the stages above are parc's own model: first stage %s (%+.1f%%).",
				Bytes(refined), delta))
		}
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
			Row{"bubble", fmt.Sprintf("%s = %s of the step, %s", formula, Percent(pl.BubbleFraction), Seconds(pl.BubbleTimeS))})
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
			Axis: ax, Group: c.Group, Size: fmt.Sprint(c.Size), Pattern: c.Pattern,
			Bytes: Bytes(c.BytesPerStep), PerLayer: perLayer, Link: c.Link,
			Bandwidth: fmt.Sprintf("%.0f GB/s", c.BandwidthGBps), Time: Seconds(c.TimeS), Exposed: Seconds(c.ExposedS),
		})
	}

	tr := s.Train
	data.Compute = []Row{
		{"FLOPs per step (Megatron's formula)", FLOPs(e.FLOPsPerStep)},
		{"FLOPs per GPU, slowest stage (with recompute)", FLOPs(e.Compute.FLOPsPerGPU)},
		{"peak per GPU", fmt.Sprintf("%.0f TFLOP/s (%s) at %s efficiency", e.Compute.PeakTFLOPs, tr.Precision, Percent(e.Compute.Efficiency))},
		{"compute per step, slowest stage", Seconds(e.Compute.TimeS)},
		{"one microbatch on the slowest stage, exposed comms included", Seconds(e.Compute.MicrobatchTimeS)},
		{"step time", Seconds(e.StepTimeS)},
		{"tokens per second", Rate(e.TokensPerS)},
		{"MFU (dense bf16 peak)", Percent(e.MFU)},
	}
	data.Assumptions = append([]string{
		fmt.Sprintf("compute efficiency %s of peak; attention fused: %v; state sharding: %s; %.0f + %.0f + %.0f bytes per parameter (weights, gradients, optimizer)",
			Percent(e.Assumptions.ComputeEfficiency), e.Assumptions.FusedAttention, e.Assumptions.Sharding,
			e.Assumptions.StateBytes.Weights, e.Assumptions.StateBytes.Gradients, e.Assumptions.StateBytes.Optimizer),
	}, e.Assumptions.Notes...)
}
