package check

import (
	"fmt"
	"math/big"
	"strings"
)

// sequence checks context and sequence parallelism (C1–C3, Q1, Q4 and the
// sequence-parallel scatter).
func (c *checker) sequence() {
	p, seq := c.s.Parallel, c.s.Train.SeqLength
	cp, tp := p.CP, p.TP

	if cp > 1 && seq%(2*cp) != 0 {
		b, a := 0, 0
		if !c.fieldFails("parallel.cp") {
			b, a = c.nearest("cp-seq-length", "train.seq_length", seq, 2*cp, 24, nil)
		}
		okCP := c.only("cp-seq-length", "parallel.cp", valuesIn(1, c.world(), func(v int) bool { return v == 1 || seq%(2*v) == 0 }))
		var opts []string
		if b > 0 || a > 0 {
			opts = append(opts, "nearest valid seq_length: "+nearestText(b, a))
		}
		if len(okCP) > 0 {
			opts = append(opts, "cp in "+ints(okCP))
		}
		hint := strings.Join(opts, "; or ")
		if len(opts) == 0 {
			hint = "seq_length must be a multiple of 2·cp; no seq_length near it and no cp passes every check with the rest of the plan as it is"
		}
		c.report("cp-seq-length", "train.seq_length", hint,
			"seq_length=%d is not a multiple of 2·cp = %d", seq, 2*cp).
			Related("parallel.cp", "cp = %d", cp)
	}
	if h := p.HierarchicalCP; len(h) > 0 {
		// The product in big integers: [2^32, 2^32] multiplied to 0 in 64
		// bits, and the message said so.
		prod := big.NewInt(1)
		for _, v := range h {
			prod.Mul(prod, big.NewInt(int64(v)))
		}
		if !prod.IsInt64() || prod.Int64() != int64(cp) {
			c.report("cp-hierarchical", "parallel.hierarchical_cp",
				c.hierHint("cp-hierarchical", cp),
				"hierarchical_cp %v multiplies to %s, not cp=%d", h, prod, cp)
		}
	} else if p.CPCommType == "a2a+p2p" {
		c.report("cp-a2a-p2p", "parallel.cp_comm_type", c.hierHint("cp-a2a-p2p", cp)+", or "+c.anyOf("cp-a2a-p2p", "parallel.cp_comm_type",
			setOpt(setting{"parallel.cp_comm_type", "p2p"}), setOpt(setting{"parallel.cp_comm_type", "a2a"})),
			"cp_comm_type a2a+p2p needs hierarchical_cp sizes")
	}

	if p.SP != nil && *p.SP && tp == 1 {
		c.report("sp-without-tp", "parallel.sp", c.anyOf("sp-without-tp", "parallel.sp", append([]option{setOpt(setting{"parallel.sp", nil})},
			c.valueOptions("sp-without-tp", "parallel.sp", "parallel.tp", valuesIn(2, c.world(), func(int) bool { return true }), 3)...)...),
			"sequence parallelism needs tp > 1; with tp=1 Megatron switches it off")
	}
	if c.d.SP && cp >= 1 && seq%cp == 0 && (seq/cp)%tp != 0 {
		hint := "fix parallel.tp first (see its error): the valid sequence lengths depend on it"
		if !c.fieldFails("parallel.tp") && !c.fieldFails("parallel.cp") {
			b, a := c.nearest("sp-seq-length", "train.seq_length", seq, tp*cp, 24, nil)
			hint = "nearest valid seq_length: " + nearestText(b, a)
			if b == 0 && a == 0 {
				hint = "seq_length/cp must be a multiple of tp; " + noValue("train.seq_length")
			}
		}
		c.report("sp-seq-length", "train.seq_length", hint,
			"with sequence parallelism each tensor-parallel rank takes seq_length/(cp·tp) tokens, but %d/cp=%d is not divisible by tp=%d", seq, seq/cp, tp).
			Related("parallel.tp", "tp = %d", tp)
	}
	if c.isMoE() && tp > 1 && !c.d.SP {
		c.report("moe-sp-required", "parallel.sp", c.options("moe-sp-required", "parallel.sp", "set parallel.sp: true (or remove it: it defaults to true when tp > 1)",
			opt("set parallel.sp: true", setting{"parallel.sp", true}), opt("remove parallel.sp", setting{"parallel.sp", nil})),
			"an MoE model with tp=%d must use sequence parallelism; Megatron raises at the first training step without it", tp)
	}
}

// hierHint suggests parallel.hierarchical_cp values: two sizes [a2a size,
// p2p size] (the two levels of a2a+p2p context parallelism) whose product
// is cp, each verified.
func (c *checker) hierHint(code string, cp int) string {
	var opts []string
	ds := divisors(cp)
	if len(ds) > 2 { // proper splits first, then [1, cp] and [cp, 1]
		ds = append(ds[1:len(ds)-1], 1, cp)
	}
	for _, d := range ds {
		if len(opts) == 3 {
			break
		}
		if v := []int{d, cp / d}; c.acceptsAll(code, setting{"parallel.hierarchical_cp", v}) {
			opts = append(opts, fmt.Sprintf("[%d, %d]", d, cp/d))
		}
	}
	if len(opts) == 0 {
		return fmt.Sprintf("parallel.hierarchical_cp sizes must multiply to cp=%d; %s", cp, noValue("parallel.hierarchical_cp"))
	}
	return fmt.Sprintf("set parallel.hierarchical_cp to sizes [a2a, p2p] that multiply to cp=%d: %s", cp, strings.Join(opts, " or "))
}
