package check

import (
	"fmt"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// FamilyLink summarizes how one family of process groups (named as in
// launch.json: "tp", "etp", "cp", "ep", ...) sits on the cluster: the size of
// each group, how many groups there are, and how many of them span more than
// one node or one NVLink domain.
type FamilyLink struct {
	Family                                 string
	Size, Count                            int
	GroupsLeavingNode, GroupsLeavingDomain int
	// GroupsSplitUnevenly counts the groups leaving their NVLink domain
	// with different numbers of members in the domains they touch.
	GroupsSplitUnevenly int
}

// Topology checks the rules that need the rank layout: context- and
// expert-parallel groups should stay inside one node. (That tensor-parallel
// and expert-tensor-parallel groups stay inside one NVLink domain needs no
// layout: Run checks it, tensorParallelFitsDomain.)
func Topology(s *spec.Spec, fams []FamilyLink, at diag.Locator) diag.List {
	if at == nil {
		at = diag.NoPos
	}
	c := &checker{s: s, d: spec.Derive(s), r: diag.NewReporter(at)}
	u := c.groupUnit()
	for _, f := range fams {
		leaving, where := f.GroupsLeavingNode, "span nodes"
		if u.domain {
			leaving, where = f.GroupsLeavingDomain, fmt.Sprintf("span NVLink domains of %d GPUs", u.size)
		}
		if f.Size <= 1 || leaving == 0 {
			continue
		}
		switch f.Family {
		case "cp":
			c.report("cp-crosses-node", "parallel.cp", c.nodeHint("cp-crosses-node", "cp", s.Parallel.TP, s.Parallel.CP),
				"%d of %d context-parallel groups (size %d) %s; their ring exchanges run over the network",
				leaving, f.Count, f.Size, where)
		case "ep":
			// The step-time model splits an expert-parallel group by
			// spec.ExpertRanksPerNVLinkDomain as if the groups were aligned
			// to the domains, so a group no larger than that lies inside one
			// for it, and the network hop of one that straddles two is not
			// charged: say so.
			uncharged := ""
			if u.domain && s.Parallel.EP <= spec.ExpertRanksPerNVLinkDomain(s.Cluster.NVLinkDomain, c.etp()) {
				uncharged = " (parc's step time does not charge it yet: it times these groups as if inside one domain)"
			}
			c.report("ep-crosses-node", "parallel.ep", c.nodeHint("ep-crosses-node", "ep", c.etp(), s.Parallel.EP),
				"%d of %d expert-parallel groups (size %d) %s; the token all-to-all runs over the network%s%s",
				leaving, f.Count, f.Size, where, uncharged, c.hybridEPUneven(f))
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
// layout. tp (and etp in the expert grid) is the innermost dimension of
// every rank order parc accepts, so its groups are aligned blocks of tp
// consecutive ranks, and NVLink domains are blocks of nvlink_domain
// consecutive ranks: a group leaves its domain exactly when the domain is
// smaller than the world and tp does not divide it (or when tp is larger
// than the domain at all). This is the rule's only owner: Run checks it so
// the user hears it even when another error keeps the layout from being
// built, and so that a value another hint suggests never meets it later
// (TestDomainRuleMatchesLayout compares it with the layout).
func (c *checker) tensorParallelFitsDomain() {
	domain := c.s.Cluster.NVLinkDomain
	if domain < 1 {
		return
	}
	world := c.world()
	if tp := c.s.Parallel.TP; tp > domain {
		c.report("tp-crosses-nvlink", "parallel.tp", c.domainHint("tp-crosses-nvlink", "parallel.tp", tp),
			"tp=%d is larger than the NVLink domain of %d GPUs: every tensor-parallel all-reduce would cross the network, on every layer", tp, domain)
	} else if leavesDomain(tp, domain, world) {
		c.report("tp-crosses-nvlink", "parallel.tp", c.domainHint("tp-crosses-nvlink", "parallel.tp", tp),
			"tp=%d does not divide the NVLink domain of %d GPUs: tensor-parallel groups of %d consecutive ranks straddle domain boundaries, and their all-reduces cross the network on every layer", tp, domain, tp)
	}
	if c.isMoE() {
		if etp := c.etp(); etp > domain {
			c.report("etp-crosses-nvlink", c.etpPath(), c.domainHint("etp-crosses-nvlink", "parallel.etp", etp),
				"etp=%d is larger than the NVLink domain of %d GPUs: expert-tensor-parallel collectives would cross the network", etp, domain)
		} else if leavesDomain(etp, domain, world) {
			c.report("etp-crosses-nvlink", c.etpPath(), c.domainHint("etp-crosses-nvlink", "parallel.etp", etp),
				"etp=%d does not divide the NVLink domain of %d GPUs: expert-tensor-parallel groups of %d consecutive ranks straddle domain boundaries", etp, domain, etp)
		}
	}
}

// leavesDomain reports whether blocks of size consecutive ranks, aligned at
// multiples of size, cross the boundaries of NVLink domains of domain ranks
// in a world of world ranks.
func leavesDomain(size, domain, world int) bool {
	return size > 1 && domain < world && domain%size != 0
}

// domainHint lists the values of a tensor-parallel degree (path: parallel.tp
// or parallel.etp) that divide the NVLink domain and pass every rule. A
// group of a size dividing the domain never leaves it: tp (and etp in the
// expert grid) is the innermost dimension of every rank order, so its
// groups are aligned blocks of consecutive ranks (TestTopologyHintsHold
// lays the suggested values out).
func (c *checker) domainHint(code, path string, now int) string {
	domain := c.s.Cluster.NVLinkDomain
	name := path[len("parallel."):]
	ok := c.near(code, path, now, divisors(max(domain, 1)))
	return listHint(fmt.Sprintf("%s values dividing nvlink_domain=%d", name, domain), ok,
		fmt.Sprintf("%s must divide nvlink_domain=%d; %s", name, domain, noValue(path)))
}

// groupUnit is the block of GPUs a context- or expert-parallel group should
// stay in: its node, or, where NVLink joins several nodes into one domain
// (GB200/GB300 NVL72), the domain, inside which a group that spans nodes
// still talks over NVLink; only leaving it puts the traffic on the network.
type groupUnit struct {
	size   int
	domain bool
}

func (c *checker) groupUnit() groupUnit {
	if d, g := c.s.Cluster.NVLinkDomain, c.s.Cluster.GPUsPerNode; d > g {
		return groupUnit{d, true}
	}
	return groupUnit{c.s.Cluster.GPUsPerNode, false}
}

// nodeHint lists the values of cp (or ep) whose group block inner·v (tp·cp,
// or etp·ep) divides gpus_per_node, so that every group stays on one node,
// among those that pass every rule; where an NVLink domain holds several
// nodes, the values whose block divides the domain instead (a block of
// consecutive ranks aligned to its size stays in a domain it divides).
func (c *checker) nodeHint(code, name string, inner, now int) string {
	u := c.groupUnit()
	g, unit, within := u.size, "gpus_per_node", "groups on one node"
	if u.domain {
		unit, within = "nvlink_domain", "groups in one NVLink domain"
	}
	path := "parallel." + name
	ok := c.near(code, path, now, valuesIn(1, g, func(v int) bool { return g%(inner*v) == 0 }))
	innerName := map[string]string{"cp": "tp", "ep": "etp"}[name]
	hint := listHint(fmt.Sprintf("%s values with %s·%s dividing %s=%d (%s)", name, innerName, name, unit, g, within), ok,
		fmt.Sprintf("no %s keeps %s·%s within %s=%d and passes every check; accept the network hop if it is fast", name, innerName, name, unit, g))
	if seg := c.segmentOption(code, name, inner, now); seg != "" {
		hint += "; or " + seg
	}
	return hint
}

// segmentOption is the other way to keep groups of inner·now consecutive
// ranks inside NVLink where one domain joins several nodes (GB200/GB300
// NVL72) and the job is larger than a domain: run it in Slurm segments
// (cluster.slurm.segment, Slurm's --segment with topology/block) whose
// GPUs the group block divides, each segment in one rack, and let parc
// place its NVLink domains on the segments (cluster.nvlink_domain: the
// segment's GPUs, what slurmSegment asks for). Megatron-Bridge's launcher
// runs 64 four-GPU GB200 nodes so, in segments of 16 nodes: 64-GPU domains
// (scripts/performance/utils/executors.py slurm_executor; NeMo's
// scripts/performance/utils.py takes the largest divisor of the node count
// up to 18). The segment offered is the largest that divides the node count
// and fits a domain, and its settings pass every check; "" when none does or
// the spec already sets a segment (slurmSegment judges it).
func (c *checker) segmentOption(code, name string, inner, now int) string {
	cl := c.s.Cluster
	gpn, domain := cl.GPUsPerNode, cl.NVLinkDomain
	block := inner * now
	if cl.Slurm != nil && cl.Slurm.Segment != nil || gpn < 1 || domain <= gpn || c.world() <= domain || block < 1 {
		return ""
	}
	for seg := min(domain/gpn, cl.Nodes-1); seg >= 1; seg-- {
		if cl.Nodes%seg != 0 || (seg*gpn)%block != 0 {
			continue
		}
		set := []setting{{"cluster.slurm.segment", seg}, {"cluster.nvlink_domain", seg * gpn}}
		if !c.acceptsAll(code, set...) {
			continue
		}
		return fmt.Sprintf("keep %s=%d and run the job in Slurm segments of %d nodes, %d GPUs in one NVLink domain each: %s",
			name, now, seg, seg*gpn, settingsText(set))
	}
	return ""
}

// hybridEPUneven is what the ep-crosses-node warning adds where the flex
// dispatcher's hybridep backend meets groups that domain boundaries cut
// into unequal parts: HybridEP takes the ranks per domain from the group's
// ranks this rank reaches over NVLink (deep_ep/hybrid_ep_buffer.py,
// HybridEPBuffer.__init__, DeepEP's hybrid-ep branch: detect_accessible_ranks)
// and asserts "The number of ranks ... should be divisible by the number of
// ranks per node" before numbering the domains rank // ranks_per_domain, so
// a group of 8 and 56 ranks (64 consecutive ranks over domains of 72)
// fails on the ranks of the larger part, under the rack-contiguous
// placement parc lays out. A warning, not an error: where the job's nodes
// land in the racks is Slurm's (the hint's segments pin it).
func (c *checker) hybridEPUneven(f FamilyLink) string {
	e := c.s.Model.MoE
	if !e.FlexWith("hybridep") || f.GroupsSplitUnevenly == 0 {
		return ""
	}
	hold := "of them hold"
	if f.GroupsSplitUnevenly == 1 {
		hold = "of them holds"
	}
	return fmt.Sprintf("; with the hybridep backend, %d %s unequal numbers of ranks in the domains they span, which HybridEPBuffer rejects at start-up (it asserts that the group size divides by the ranks each rank reaches over NVLink)", f.GroupsSplitUnevenly, hold)
}
