package estimate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/measured"
	"parc.dev/parc/internal/spec"
)

// contractOnlySpec is the row's published plan written with the contract's
// fields only, as contractOnlyTokens rates it; false when it does not load.
func contractOnlySpec(r *calRow, run *measuredRun) (*spec.Spec, bool) {
	if s, ok := contractSpecs.Load(r.id); ok {
		return s.(*spec.Spec), s.(*spec.Spec) != nil
	}
	s, ok := writeContractOnly(r, run)
	contractSpecs.Store(r.id, s)
	return s, ok
}

// contractSpecs holds contractOnlySpec's specs by row id (nil: it does
// not load), written once: TestCalibration and TestContractOnlyOverflowHints
// read the same ones, and the estimate does not change a spec.
var contractSpecs sync.Map

func writeContractOnly(r *calRow, run *measuredRun) (*spec.Spec, bool) {
	pub, err := measured.PublishedPlan(run)
	if err != nil {
		return nil, false
	}
	p := pub.ContractOnly()
	p.Parallel["vpp"] = r.s.Parallel.VPP
	p.Train["micro_batch"] = r.s.Train.MicroBatch
	p.Train["recompute"] = r.s.Train.Recompute
	if r.s.Train.Recompute == "full" {
		p.Train["recompute_method"] = r.s.Train.RecomputeMethod
		if r.s.Train.RecomputeLayers != nil {
			p.Train["recompute_layers"] = *r.s.Train.RecomputeLayers
		}
	}
	if r.s.Train.Recompute == "selective" && r.s.Train.RecomputeModules != nil {
		p.Train["recompute_modules"] = r.s.Train.RecomputeModules
	}
	res, ds := load.Load(load.Source{Path: filepath.Join(os.TempDir(), "contract-"+r.id+".cue"), Data: []byte(p.CUE())})
	if ds.HasErrors() || len(res.Open()) > 0 {
		return nil, false
	}
	s, ds := res.DecodeValue(res.Plan)
	if ds.HasErrors() {
		return nil, false
	}
	// The cluster as the contract writes it, inline (no preset): sizes,
	// links and the GPU's name, memory and bf16 peak; the GPU's other
	// figures and a GB200/GB300 NVLink domain come from its datasheet
	// (spec.Cluster.FillFromDatasheet), as a user's would. Where the run's
	// launcher kept its nodes in Slurm segments (the row's slurm_segment)
	// the cluster says so as the run saw it: the segment and the NVLink
	// domain of its GPUs (cluster.slurm.segment, nvlink_domain).
	c := s.Cluster
	short, _, _ := strings.Cut(c.GPU.Name, "-")
	segment := ""
	if c.Slurm != nil && c.Slurm.Segment != nil {
		segment = fmt.Sprintf(", nvlink_domain: %d, slurm: segment: %d", c.NVLinkDomain, *c.Slurm.Segment)
	}
	p.Cluster = fmt.Sprintf("{name: %q, nodes: %d, gpus_per_node: %d, gpu: {name: %q, memory_gib: %v, bf16_tflops: %v}, nvlink_gbps: %v, network_gbps: %v%s}",
		c.Name, c.Nodes, c.GPUsPerNode, short, c.GPU.MemoryGiB, c.GPU.BF16TFLOPs, c.NVLinkGBps, c.NetworkGBps, segment)
	p.Imports = slices.DeleteFunc(p.Imports, func(im string) bool { return im == "clusters" })
	res, ds = load.Load(load.Source{Path: filepath.Join(os.TempDir(), "contract-"+r.id+".cue"), Data: []byte(p.CUE())})
	if ds.HasErrors() || len(res.Open()) > 0 {
		return nil, false
	}
	if s, ds = res.DecodeValue(res.Plan); ds.HasErrors() {
		return nil, false
	}
	return s, true
}

// contractOnlyTokens is the row's estimated tokens/s/GPU when its plan is
// written with the contract's fields only (measured.Plan.ContractOnly): the
// published plan as rated (r.s: the degrees, micro batch and recomputation
// the calibration rates it with) and the model and cluster as the row gives
// them, every other setting at parc's default (plain); and that plan with
// explain's faster settings applied together (tuned: FasterTogether, the
// single best one where only one adds up, the plan as written where none
// does), as a user who writes the contract's fields and takes explain's
// suggestions runs it. ok is false when that spec does not load.
func contractOnlyTokens(r *calRow, run *measuredRun, cal Calibration) (plain, tuned float64, ok bool) {
	s, ok := contractOnlySpec(r, run)
	if !ok {
		return 0, 0, false
	}
	d := spec.Derive(s)
	o := DefaultOptions()
	o.Calibration = cal
	links := DefaultLinks(s, d)
	e, _ := RunWith(s, d, links, diag.NoPos, o)
	if e == nil {
		return 0, 0, false
	}
	plain = e.TokensPerS / float64(d.World)
	step := e.StepTimeS
	singles := FasterSettings(s, d, links, o, e, 1)
	if t := FasterTogether(s, d, links, o, e, 1, singles); t != nil {
		step = t.StepTimeS
	} else if len(singles) > 0 {
		step = singles[0].StepTimeS
	}
	return plain, plain * e.StepTimeS / step, true
}

// TestContractOnlyOverflowHints: published runs that ran, written with the
// contract's fields only (parc's defaults for every other setting), that
// parc's memory model puts above their GPU get a memory-exceeds-gpu hint
// naming a single change that fits (each checked by hintFails), and the
// changes the runs themselves made are among those it offers: activation
// offloading for Megatron-Bridge's Llama 3 70B FSDP runs on GB200 and
// GB300 (cpu_offloading_num_layers 20 to 40), fp8 weights for its
// DeepSeek-V3 runs on GB300 (fp8_param_gather), bf16 optimizer moments for
// NeMo's Nemotron-4 340B runs on H100.
func TestContractOnlyOverflowHints(t *testing.T) {
	if testing.Short() {
		t.Skip("loads every corpus row")
	}
	rows := loadCalibrationRows(t)
	runs := measuredRunsByID(t)
	over := map[string]string{} // row id: the hint
	for _, r := range rows {
		if r.skip != "" {
			continue
		}
		s, ok := contractOnlySpec(r, runs[r.id])
		if !ok {
			continue
		}
		o := DefaultOptions()
		o.VerifyHints = true
		d := spec.Derive(s)
		e, ds := RunWith(s, d, DefaultLinks(s, d), diag.NoPos, o)
		if e == nil || e.Memory.FractionOfGPU <= 1 {
			continue
		}
		for _, dg := range ds {
			if dg.Code == CodeMemoryExceedsGPU {
				over[r.id] = dg.Hint
			}
		}
		t.Logf("%s: %.1f%% of the GPU; hint: %s", r.id, 100*e.Memory.FractionOfGPU, over[r.id])
		assert.NotEmpty(t, over[r.id], "%s: %.1f%% of the GPU without memory-exceeds-gpu", r.id, 100*e.Memory.FractionOfGPU)
		assert.Regexp(t, remedyRE, over[r.id], r.id)
		for _, b := range hintFails(s, ds) {
			t.Errorf("%s: %s", r.id, b)
		}
	}
	t.Logf("%d runs above their GPU with the contract's fields only", len(over))
	for id, want := range map[string]string{
		"bridge-26.04-llama3-70b-gb300-fp8-64":     "train.cpu_offloading_num_layers",
		"bridge-26.04-llama3-70b-gb200-fp8-64":     "train.cpu_offloading_num_layers",
		"bridge-26.04-deepseek-v3-gb300-mxfp8-256": "train.fp8_param_gather true",
		"dgxc-24.11-nemotron4-340b-h100-fp8-128":   `train.exp_avg_sq_dtype "bf16"`,
		"mzoo-qwen3-235b-a22b-gb200-mxfp8-256":     `train.fine_grained_activation_offloading true and train.offload_modules ["expert_fc1", "moe_act"]`,
	} {
		assert.Contains(t, over[id], want, id)
	}
}
