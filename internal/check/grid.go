package check

import (
	"fmt"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// grid checks the dense and expert grids against the world size, the rank
// order, an explicit dp and the distributed-optimizer instances (W1–W9).
func (c *checker) grid() {
	s, p := c.s, c.s.Parallel
	world := c.world()
	model, expert := p.TP*p.PP*p.CP, c.etp()*p.EP*p.PP
	switch {
	case world < model:
		e := c.report("world-size", "parallel.tp", c.gridHint("world-size")+c.nodesHint("world-size", lcm(model, expert)),
			"one model replica needs tp·pp·cp = %d·%d·%d = %d GPUs but the cluster has nodes × gpus_per_node = %d × %d = %d",
			p.TP, p.PP, p.CP, model, s.Cluster.Nodes, s.Cluster.GPUsPerNode, world)
		c.relatedDegrees(e, "pp", p.PP, "cp", p.CP)
	case !spec.Tiles(world, p.TP, p.PP, p.CP):
		e := c.report("world-not-divisible", "parallel.tp", c.gridHint("world-not-divisible")+c.nodesHint("world-not-divisible", lcm(model, expert)),
			"world size %d (nodes × gpus_per_node = %d × %d) is not divisible by tp·pp·cp = %d·%d·%d = %d",
			world, s.Cluster.Nodes, s.Cluster.GPUsPerNode, p.TP, p.PP, p.CP, model)
		c.relatedDegrees(e, "pp", p.PP, "cp", p.CP)
	}

	expertOK := spec.Tiles(world, c.etp(), p.EP, p.PP)
	if !expertOK && c.gridOK() {
		// Only meaningful once the dense grid fits; otherwise the error above
		// already says what to change.
		eps := c.only("expert-grid-not-divisible", "parallel.ep", valuesIn(1, world, func(e int) bool {
			return spec.Tiles(world, c.etp(), e, p.PP) && (!c.isMoE() || s.Model.MoE.Experts%e == 0)
		}))
		hint := listHint(fmt.Sprintf("etp·ep·pp must divide %d: valid ep with etp=%d, pp=%d", world, c.etp(), p.PP), eps,
			fmt.Sprintf("etp·ep·pp must divide %d; %s", world, noValue("parallel.ep")))
		hint += c.nodesHint("expert-grid-not-divisible", lcm(model, expert))
		e := c.report("expert-grid-not-divisible", "parallel.ep", hint,
			"world size %d is not divisible by the expert grid etp·ep·pp = %d·%d·%d = %d",
			world, c.etp(), p.EP, p.PP, expert)
		c.relatedDegrees(e, "etp", c.etp(), "pp", p.PP)
	}

	switch p.Order {
	case spec.OrderDefault:
	case spec.OrderPPDP:
		if p.PP > 1 && c.gridOK() && expertOK && c.d.EDP != c.d.DP {
			opts := []option{setOpt(setting{"parallel.order", spec.OrderDefault})}
			if want := p.TP * p.CP; want%c.etp() == 0 {
				opts = append(opts, setOpt(setting{"parallel.ep", want / c.etp()}).note(fmt.Sprintf("etp·ep = tp·cp = %d", want)))
			}
			c.report("order-pp-last", "parallel.order", c.anyOf("order-pp-last", "parallel.order", opts...),
				"order %q with pp=%d needs equal data-parallel sizes for attention and experts, but dp = %d and expert dp = %d (tp·cp = %d, etp·ep = %d)",
				p.Order, p.PP, c.d.DP, c.d.EDP, p.TP*p.CP, c.etp()*p.EP)
		}
	default:
		c.report("order-unsupported", "parallel.order", c.anyOf("order-unsupported", "parallel.order",
			setOpt(setting{"parallel.order", spec.OrderDefault}).note("the default"),
			setOpt(setting{"parallel.order", spec.OrderPPDP}).note(spec.OrderPPDPFlag)),
			"order %q is not a rank order Megatron-Core's training entry point can build", p.Order)
	}

	if p.DP != nil && c.gridOK() && *p.DP != c.d.DP {
		need := p.TP * p.PP * p.CP * *p.DP
		var opts []string
		if c.acceptsAll("dp-mismatch", setting{"parallel.dp", nil}) {
			opts = append(opts, fmt.Sprintf("remove parallel.dp (it is derived: %d here)", c.d.DP))
		}
		if need%s.Cluster.GPUsPerNode == 0 && c.accepts("dp-mismatch", "cluster.nodes", need/s.Cluster.GPUsPerNode) {
			opts = append(opts, fmt.Sprintf("use cluster.nodes = %d for dp=%d", need/s.Cluster.GPUsPerNode, *p.DP))
		}
		hint := strings.Join(opts, ", or ")
		if len(opts) == 0 {
			hint = noValue("parallel.dp") + fmt.Sprintf(" (it is derived: %d here)", c.d.DP)
		}
		c.report("dp-mismatch", "parallel.dp", hint,
			"parallel.dp = %d but world / (tp·pp·cp) = %d / %d = %d", *p.DP, world, model, c.d.DP).
			Related("cluster.nodes", "nodes = %d", s.Cluster.Nodes)
	}

	if k := p.DistributedOptimizerInstances; k > 1 && c.gridOK() && expertOK {
		dpcp := c.d.DP * p.CP
		if dpcp%k != 0 || c.d.EDP%k != 0 {
			ok := c.only("distopt-instances", "parallel.distributed_optimizer_instances",
				valuesIn(1, dpcp, func(v int) bool { return dpcp%v == 0 && c.d.EDP%v == 0 }))
			c.report("distopt-instances", "parallel.distributed_optimizer_instances",
				listHint("valid instance counts here", ok, noValue("parallel.distributed_optimizer_instances")),
				"distributed_optimizer_instances = %d must divide dp·cp = %d·%d = %d and expert dp = %d",
				k, c.d.DP, p.CP, dpcp, c.d.EDP)
		}
	}

	g, n := s.Cluster.GPUsPerNode, s.Cluster.NVLinkDomain
	if g%n != 0 && n%g != 0 {
		div := c.near("nvlink-domain", "cluster.nvlink_domain", n, divisors(g))
		var mul []int
		for k := 2; k <= 72/g && len(mul) < 3; k++ {
			if c.accepts("nvlink-domain", "cluster.nvlink_domain", k*g) {
				mul = append(mul, k*g)
			}
		}
		hint := listHint(fmt.Sprintf("divisors of gpus_per_node=%d", g), div, noValue("cluster.nvlink_domain"))
		if len(mul) > 0 {
			hint += fmt.Sprintf("; or a multiple of %d (an NVLink domain spanning nodes, as on NVL72): %s", g, ints(mul))
		}
		c.report("nvlink-domain", "cluster.nvlink_domain", hint,
			"nvlink_domain = %d is neither a divisor nor a multiple of gpus_per_node = %d", n, g)
	}
}

// relatedDegrees adds the cluster's size and the other degrees of a grid
// (name, value pairs; a degree of 1 adds nothing) as related positions.
func (c *checker) relatedDegrees(e diag.Entry, others ...any) {
	for i := 0; i+1 < len(others); i += 2 {
		if v := others[i+1].(int); v != 1 {
			e.Related("parallel."+others[i].(string), "%s = %d", others[i], v)
		}
	}
	e.Related("cluster.nodes", "nodes = %d", c.s.Cluster.Nodes).
		Related("cluster.gpus_per_node", "gpus_per_node = %d", c.s.Cluster.GPUsPerNode)
}

// gridHint lists tp values that fit the world with the current pp and cp,
// and pp values with the current tp and cp.
func (c *checker) gridHint(code string) string {
	p, world := c.s.Parallel, c.world()
	tps := c.only(code, "parallel.tp", valuesIn(1, world, func(t int) bool { return spec.Tiles(world, t, p.PP, p.CP) }))
	pps := c.only(code, "parallel.pp", valuesIn(1, world, func(q int) bool { return spec.Tiles(world, p.TP, q, p.CP) }))
	h := fmt.Sprintf("tp·pp·cp must divide the world size %d", world)
	if len(tps) == 0 && len(pps) == 0 {
		return h + "; no tp with this pp and cp, and no pp with this tp and cp, passes every check: change two of them, or cluster.nodes"
	}
	if len(tps) > 0 {
		h += fmt.Sprintf(": valid tp with pp=%d, cp=%d: %s", p.PP, p.CP, ints(tps))
	} else {
		h += fmt.Sprintf(": no tp with pp=%d, cp=%d passes every check", p.PP, p.CP)
	}
	if len(pps) > 0 {
		h += fmt.Sprintf("; valid pp with tp=%d, cp=%d: %s", p.TP, p.CP, ints(pps))
	} else {
		h += fmt.Sprintf("; no pp with tp=%d, cp=%d passes every check", p.TP, p.CP)
	}
	return h
}

// maxHintNodes is the most nodes a hint suggests: the schema's bound on
// cluster.nodes.
const maxHintNodes = 1 << 20

// nodesHint offers the fewest nodes above the cluster's whose world size
// unit GPUs (the grids' least common multiple) divides and with which every
// check passes, "" when none of the first few such counts does: a launch
// script imported with its default node count (torchrun --nnodes
// ${SLURM_NNODES:-1}) is told how many nodes its degrees need.
func (c *checker) nodesHint(code string, unit int) string {
	gpn := c.s.Cluster.GPUsPerNode
	if gpn <= 0 || unit <= 0 {
		return ""
	}
	step := unit / gcd(unit, gpn) // nodes must be a multiple of this
	first := (c.s.Cluster.Nodes/step + 1) * step
	for n := first; n < first+8*step && n <= maxHintNodes; n += step {
		if c.accepts(code, "cluster.nodes", n) {
			return fmt.Sprintf("; or keep the degrees and use cluster.nodes = %d (world size %d)", n, n*gpn)
		}
	}
	return ""
}
