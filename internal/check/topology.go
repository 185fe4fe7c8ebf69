package check

import (
	"fmt"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// FamilyLink summarizes how one family of process groups (named as in
// launch.json: "tp", "etp", "cp", "ep", ...) sits on the cluster: the size of
// each group, how many groups there are, and how many of them span more than
// one node or more than one NVLink domain.
type FamilyLink struct {
	Family              string
	Size, Count         int
	GroupsLeavingNode   int
	GroupsLeavingDomain int
}

// Topology checks the rules that need the rank layout: tensor-parallel (and
// expert-tensor-parallel) groups must stay inside one NVLink domain, and
// context- and expert-parallel groups should stay inside one node.
func Topology(s *spec.Spec, fams []FamilyLink, at diag.Locator) diag.List {
	if at == nil {
		at = diag.NoPos
	}
	c := &checker{s: s, r: diag.NewReporter(at)}
	domain := s.Cluster.NVLinkDomain
	fit := ints(divisors(max(domain, 1)))
	for _, f := range fams {
		if f.Size <= 1 {
			continue
		}
		switch f.Family {
		case "tp":
			if f.GroupsLeavingDomain > 0 {
				c.report("tp-crosses-nvlink", "parallel.tp", fmt.Sprintf("tp values dividing nvlink_domain=%d: %s", domain, fit),
					"%d of %d tensor-parallel groups (size %d) span more than one NVLink domain of %d GPUs; TP all-reduces would cross the network on every layer",
					f.GroupsLeavingDomain, f.Count, f.Size, domain)
			}
		case "etp":
			if f.GroupsLeavingDomain > 0 {
				c.report("etp-crosses-nvlink", c.etpPath(), fmt.Sprintf("etp values dividing nvlink_domain=%d: %s", domain, fit),
					"%d of %d expert-tensor-parallel groups (size %d) span more than one NVLink domain of %d GPUs",
					f.GroupsLeavingDomain, f.Count, f.Size, domain)
			}
		case "cp":
			if f.GroupsLeavingNode > 0 {
				c.report("cp-crosses-node", "parallel.cp", fmt.Sprintf("keep tp·cp ≤ gpus_per_node=%d to keep CP on NVLink", s.Cluster.GPUsPerNode),
					"%d of %d context-parallel groups (size %d) span nodes; their ring exchanges run over the network",
					f.GroupsLeavingNode, f.Count, f.Size)
			}
		case "ep":
			if f.GroupsLeavingNode > 0 {
				c.report("ep-crosses-node", "parallel.ep", fmt.Sprintf("keep etp·ep ≤ gpus_per_node=%d to keep the all-to-all on NVLink", s.Cluster.GPUsPerNode),
					"%d of %d expert-parallel groups (size %d) span nodes; the token all-to-all runs over the network",
					f.GroupsLeavingNode, f.Count, f.Size)
			}
		}
	}
	return c.r.List.Sort()
}

func (c *checker) etpPath() string {
	if c.s.Parallel.ETP != nil {
		return "parallel.etp"
	}
	return "parallel.tp"
}

// tensorParallelFitsDomain is the part of the topology rule that needs no
// layout: a tensor-parallel group larger than the NVLink domain crosses it
// whatever the order. Run checks it so the user hears it even when another
// error keeps the layout (and so Topology) from running.
func (c *checker) tensorParallelFitsDomain() {
	domain := c.s.Cluster.NVLinkDomain
	if domain < 1 {
		return
	}
	fit := ints(divisors(domain))
	if tp := c.s.Parallel.TP; tp > domain {
		c.report("tp-crosses-nvlink", "parallel.tp", fmt.Sprintf("tp values dividing nvlink_domain=%d: %s", domain, fit),
			"tp=%d is larger than the NVLink domain of %d GPUs: every tensor-parallel all-reduce would cross the network, on every layer", tp, domain)
	}
	if c.isMoE() {
		if etp := c.etp(); etp > domain {
			c.report("etp-crosses-nvlink", c.etpPath(), fmt.Sprintf("etp values dividing nvlink_domain=%d: %s", domain, fit),
				"etp=%d is larger than the NVLink domain of %d GPUs: expert-tensor-parallel collectives would cross the network", etp, domain)
		}
	}
}
