package measured

import (
	"slices"
	"testing"

	"parc.dev/parc/internal/load"
)

// TestPublishedPlanSpecs: every measured run with a cluster preset is written
// as a spec parc loads, with no field the schema lacks, and the fields the
// spec leaves open are those the plan says its source leaves unsaid.
func TestPublishedPlanSpecs(t *testing.T) {
	runs, err := ReadRuns[Run]("../estimate/testdata/measured/runs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		p, err := PublishedPlan(&r)
		if err != nil {
			if _, ok := clusterPresets[r.GPU]; ok {
				t.Errorf("%s: %v", r.ID, err)
			}
			continue
		}
		n++
		res, ds := load.Load(load.Source{Path: r.ID + ".cue", Data: []byte(p.CUE())})
		if res == nil || ds.HasErrors() {
			t.Errorf("%s: %v\n%s", r.ID, ds, p.CUE())
			continue
		}
		sp, ds := res.DecodeValue(res.Plan)
		for _, d := range ds {
			if d.Code == "unknown-field" {
				t.Errorf("%s: %s: %s", r.ID, d.Path, d.Message)
			}
		}
		// The NVLink domain is the row's, not the cluster preset's; where
		// its launcher passed Slurm's --segment, the segment's GPUs, which
		// it kept in one rack, and the segment itself.
		if sp != nil && r.GPUsPerNode > 0 && r.GPUs >= r.GPUsPerNode {
			want := r.NVLinkDomain
			if r.SlurmSegment > 0 {
				want = r.SlurmSegment * r.GPUsPerNode
				if sl := sp.Cluster.Slurm; sl == nil || sl.Segment == nil || *sl.Segment != r.SlurmSegment {
					t.Errorf("%s: no cluster.slurm.segment %d", r.ID, r.SlurmSegment)
				}
			}
			if sp.Cluster.NVLinkDomain != want {
				t.Errorf("%s: nvlink_domain %d, the row records %d", r.ID, sp.Cluster.NVLinkDomain, want)
			}
		}
		// A run that turned the overlap of its point-to-point transfers
		// off (NeMo's overlap_p2p_comm false) is written so: its
		// transfers synchronise the device (spec.Parallel.OverlapP2P).
		if v, ok := r.Settings["overlap_p2p_comm"].(bool); ok && !v && sp != nil && sp.Parallel.OverlapP2P {
			t.Errorf("%s: overlap_p2p_comm false in the run, parallel.overlap_p2p true in the spec", r.ID)
		}
		// A pipelined run that deferred its output layer's weight
		// gradients is written so, with its limit.
		if v, _ := r.Settings["defer_embedding_wgrad_compute"].(bool); v && sp != nil && sp.Parallel.PP > 1 {
			lim, _ := r.Settings["wgrad_deferral_limit"].(float64)
			if !sp.Parallel.DeferEmbeddingWgradCompute || sp.Parallel.WgradDeferralLimit != int(lim) {
				t.Errorf("%s: defer_embedding_wgrad_compute true, wgrad_deferral_limit %v in the run; the spec has %t, %d",
					r.ID, lim, sp.Parallel.DeferEmbeddingWgradCompute, sp.Parallel.WgradDeferralLimit)
			}
		}
		if got := res.Open(); !slices.Equal(got, p.Unsaid()) {
			t.Errorf("%s: open %v, unsaid %v", r.ID, got, p.Unsaid())
		}
	}
	if n == 0 {
		t.Fatal("no runs written")
	}
}
