package estimate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/measured"
	"parc.dev/parc/internal/spec"
)

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
	pub, err := measured.PublishedPlan(run)
	if err != nil {
		return 0, 0, false
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
		return 0, 0, false
	}
	s, ds := res.DecodeValue(res.Plan)
	if ds.HasErrors() {
		return 0, 0, false
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
		return 0, 0, false
	}
	if s, ds = res.DecodeValue(res.Plan); ds.HasErrors() {
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
