package check

import (
	"fmt"
	"parc.dev/parc/internal/spec"
	"strings"
)

// pipeline checks the split of the decoder layers over pipeline ranks and
// virtual stages (P6–P18, P24), the interleaved schedule's pp requirement
// (P7) and its microbatch rule (P25/P26).
//
// parc passes vpp to Megatron as --num-virtual-stages-per-pipeline-rank, so
// validate_args' --num-layers-per-virtual-pipeline-stage checks (P3–P5) never
// apply; with vpp > 1 the even split is checked when layers are assigned
// (P8/P9), or by TransformerConfig with the account-for flags (P17).
func (c *checker) pipeline() {
	p := c.s.Parallel
	pp, vpp := p.PP, p.VPP

	if vpp > 1 {
		switch {
		case p.OverlapP2P && pp <= 1:
			c.report("vpp-pp", "parallel.vpp", c.anyOf("vpp-pp", "parallel.vpp", append([]option{setOpt(setting{"parallel.vpp", 1})},
				c.valueOptions("vpp-pp", "parallel.vpp", "parallel.pp", valuesIn(2, c.world(), func(int) bool { return true }), 3)...)...),
				"the interleaved schedule (vpp=%d) needs pp > 1, but pp=%d", vpp, pp)
		case !p.OverlapP2P && pp <= 2:
			opts := append([]option{setOpt(setting{"parallel.vpp", 1}), setOpt(setting{"parallel.overlap_p2p", true})},
				c.valueOptions("vpp-pp", "parallel.vpp", "parallel.pp", valuesIn(3, c.world(), func(int) bool { return true }), 3)...)
			c.report("vpp-pp", "parallel.vpp", c.anyOf("vpp-pp", "parallel.vpp", opts...),
				"the interleaved schedule (vpp=%d) with overlap_p2p off needs pp > 2, but pp=%d", vpp, pp)
		}
	}

	switch {
	case p.Layout != nil:
		c.pipelineLayout()
	case c.uneven():
		c.unevenSplit()
	default:
		c.evenSplit()
	}

	if p.MicrobatchGroupSize != nil && vpp <= 1 {
		const path = "parallel.microbatch_group_size"
		c.report("microbatch-group-unused", path, c.anyOf("microbatch-group-unused", path, append([]option{setOpt(setting{path, nil})},
			c.valueOptions("microbatch-group-unused", path, "parallel.vpp", valuesIn(2, max(c.s.Model.Layers, 2), func(int) bool { return true }), 2)...)...),
			"microbatch_group_size=%d has no effect without the interleaved schedule (vpp=%d)", *p.MicrobatchGroupSize, vpp)
	}
	c.interleave()
}

// evenSplit: L' over pp ranks, then over vpp virtual stages.
func (c *checker) evenSplit() {
	p := c.s.Parallel
	pp, vpp, L := p.PP, p.VPP, c.s.Model.Layers
	Lp := c.accountedLayers()
	what := fmt.Sprintf("layers=%d", L)
	if Lp != L {
		what = fmt.Sprintf("layers + account_for_embedding + account_for_loss = %d", Lp)
	}
	if Lp%pp != 0 {
		okPP := c.only("pp-layers", "parallel.pp", valuesIn(1, Lp, func(q int) bool { return Lp%q == 0 && (!c.gridOK() || spec.Tiles(c.world(), p.TP, q, p.CP)) }))
		which := fmt.Sprintf("pp values dividing %d that fit the world size", Lp)
		if !c.gridOK() {
			// The grid itself is broken (reported on its own): list the
			// divisors of the layers without claiming they fit.
			which = fmt.Sprintf("pp values dividing %d", Lp)
		}
		hint := listHint(which, okPP, noValue("parallel.pp"))
		if uneven := c.unevenOptions(); len(uneven) > 0 {
			hint += "; or split unevenly: " + c.anyOf("pp-layers", "parallel.pp", uneven...)
		}
		c.report("pp-layers", "parallel.pp", hint,
			"%s is not divisible by pp=%d", what, pp).
			Related("model.layers", "layers = %d", c.s.Model.Layers)
		return
	}
	if vpp > 1 && pp > 1 {
		per := Lp / pp
		if per%vpp != 0 {
			c.report("vpp-layers", "parallel.vpp",
				listHint(fmt.Sprintf("vpp values dividing %d", per), c.near("vpp-layers", "parallel.vpp", vpp, divisors(per)), noValue("parallel.vpp")),
				"the %d layers per pipeline rank (%s / pp=%d) are not divisible by vpp=%d", per, what, pp, vpp)
		}
	}
}

// unevenOptions are uneven splits of the layers over the current pp (and
// vpp) that pass: first_stage_layers alone (the other stages share the
// rest evenly), at most two of them.
func (c *checker) unevenOptions() []option {
	p, L := c.s.Parallel, c.s.Model.Layers
	pp, vpp := p.PP, max(p.VPP, 1)
	if pp < 2 || p.AccountForEmbedding || p.AccountForLoss {
		return nil
	}
	cands := valuesIn(vpp, L-1, func(f int) bool {
		rest := L - f
		return f%vpp == 0 && rest%(pp-1) == 0 && (rest/(pp-1))%vpp == 0
	})
	return c.valueOptions("pp-layers", "parallel.pp", "parallel.first_stage_layers", cands, 2)
}

// unevenSplit mirrors TransformerConfig.__post_init__'s uneven-PP block.
func (c *checker) unevenSplit() {
	p := c.s.Parallel
	pp, vpp, L := p.PP, p.VPP, c.s.Model.Layers
	if p.AccountForEmbedding || p.AccountForLoss {
		c.report("uneven-account-for", c.unevenPath(), c.anyOf("uneven-account-for", c.unevenPath(),
			setOpt(c.noUneven()...), setOpt(setting{"parallel.account_for_embedding", false}, setting{"parallel.account_for_loss", false})),
			"an uneven pipeline (first_stage_layers/last_stage_layers) cannot be combined with account_for_embedding/account_for_loss")
	}
	middle, stages := L, pp
	bad := false
	for _, st := range []struct {
		name string
		v    *int
	}{{"first_stage_layers", p.FirstStageLayers}, {"last_stage_layers", p.LastStageLayers}} {
		if st.v == nil {
			continue
		}
		n := *st.v
		if n <= 0 {
			path := "parallel." + st.name
			c.report("uneven-stage-layers", path, "give the stage at least one layer: "+c.anyOf("uneven-stage-layers", path,
				append(c.valueOptions("uneven-stage-layers", path, path, valuesIn(max(vpp, 1), L, func(v int) bool { return v%max(vpp, 1) == 0 }), 2),
					setOpt(setting{path, nil}))...),
				"%s=%d must be larger than 0", st.name, n)
			bad = true
		} else if vpp > 1 && n%vpp != 0 {
			b, a := c.nearest("uneven-vpp", "parallel."+st.name, n, vpp, 24, nil)
			hint := fmt.Sprintf("use a multiple of vpp=%d: %s", vpp, nearestText(b, a))
			if b == 0 && a == 0 {
				hint = fmt.Sprintf("use a multiple of vpp=%d; %s", vpp, noValue("parallel."+st.name))
			}
			c.report("uneven-vpp", "parallel."+st.name, hint,
				"%s=%d is not divisible by vpp=%d", st.name, n, vpp)
		}
		middle -= n
		stages--
	}
	if bad {
		return
	}
	if pp == 1 {
		// Megatron's arithmetic runs with pp-1 (or pp-2) middle stages here.
		if (middle != 0) != (stages != 0) {
			c.report("uneven-middle", c.unevenPath(), c.anyOf("uneven-middle", c.unevenPath(), setOpt(c.noUneven()...).note("pp=1 has a single stage")),
				"with pp=1 the stage layers leave %d layers for %d middle stages", middle, stages)
		} else if n := c.singleStageLayers(); n != L {
			c.report("uneven-single-stage", c.unevenPath(), c.anyOf("uneven-single-stage", c.unevenPath(), setOpt(c.noUneven()...).note("pp=1 has a single stage")),
				"first_stage_layers/last_stage_layers with pp=1: the only stage builds %d of the %d layers", n, L)
		}
		return
	}
	if (middle != 0) != (stages != 0) {
		c.report("uneven-middle", c.unevenPath(), c.unevenHint("uneven-middle"),
			"%d middle layers remain (layers=%d minus the first/last stage layers) but there %s %d middle %s",
			middle, L, plural(stages, "is", "are"), stages, plural(stages, "stage", "stages"))
		return
	}
	if stages == 0 {
		if vpp > 1 {
			// get_transformer_layer_offset (transformer_layer.py) divides the
			// middle layers per virtual chunk by middle_pipeline_stages = 0
			// on every rank but the first: ZeroDivisionError at start-up.
			opts := []option{setOpt(setting{"parallel.vpp", 1}),
				setOpt(setting{"parallel.first_stage_layers", nil}), setOpt(setting{"parallel.last_stage_layers", nil})}
			opts = append(opts, c.valueOptions("uneven-vpp-no-middle", c.unevenPath(), "parallel.pp", valuesIn(pp+1, c.world(), func(int) bool { return true }), 2)...)
			c.report("uneven-vpp-no-middle", c.unevenPath(), c.anyOf("uneven-vpp-no-middle", c.unevenPath(), opts...),
				"first_stage_layers and last_stage_layers take all %d layers of the pp=%d stages, leaving no middle stage; with vpp=%d Megatron's layer-offset computation divides by the 0 middle stages and fails at start-up", L, pp, vpp)
		}
		return
	}
	if middle%stages != 0 {
		c.report("uneven-middle", c.unevenPath(), c.unevenHint("uneven-middle"),
			"the %d middle layers are not divisible by the %d middle %s", middle, stages, plural(stages, "stage", "stages"))
		return
	}
	if per := middle / stages; vpp > 1 && per%vpp != 0 {
		c.report("uneven-vpp", c.unevenPath(), c.unevenHint("uneven-vpp"),
			"each middle stage holds %d layers, which is not divisible by vpp=%d", per, vpp)
		return
	}
	if middle < 0 {
		c.report("uneven-middle-negative", c.unevenPath(), c.unevenHint("uneven-middle-negative"),
			"first_stage_layers + last_stage_layers exceed layers=%d by %d; Megatron accepts this but builds a different split", L, -middle)
	}
}

// singleStageLayers is what get_num_layers_to_build gives the only rank when
// pp = 1 with uneven flags: the last stage's count wins over the first's.
func (c *checker) singleStageLayers() int {
	if v := c.s.Parallel.LastStageLayers; v != nil {
		return *v
	}
	return *c.s.Parallel.FirstStageLayers
}

// noUneven removes the stage layer counts the spec sets.
func (c *checker) noUneven() []setting {
	var set []setting
	if c.s.Parallel.FirstStageLayers != nil {
		set = append(set, setting{"parallel.first_stage_layers", nil})
	}
	if c.s.Parallel.LastStageLayers != nil {
		set = append(set, setting{"parallel.last_stage_layers", nil})
	}
	return set
}

func (c *checker) unevenPath() string {
	if c.s.Parallel.FirstStageLayers != nil {
		return "parallel.first_stage_layers"
	}
	return "parallel.last_stage_layers"
}

// unevenHint suggests first/last stage layer counts that make the uneven
// split valid with the current pp and vpp.
func (c *checker) unevenHint(code string) string {
	p := c.s.Parallel
	pp, vpp, L := p.PP, max(p.VPP, 1), c.s.Model.Layers
	hasF, hasL := p.FirstStageLayers != nil, p.LastStageLayers != nil
	stages := pp
	if hasF {
		stages--
	}
	if hasL {
		stages--
	}
	var opts []string
	tried := 0
	for edge := vpp; edge < L && len(opts) < 4; edge += vpp {
		n := 0
		if hasF {
			n++
		}
		if hasL {
			n++
		}
		middle := L - n*edge
		if middle < 0 {
			break
		}
		fits := middle == 0
		if stages > 0 {
			fits = middle > 0 && middle%stages == 0 && (middle/stages)%vpp == 0
		}
		if fits && c.acceptsEdges(code, hasF, hasL, edge) {
			opts = append(opts, fmt.Sprint(edge))
		}
		if tried++; tried == maxSearched || (tried >= maxTried && len(opts) > 0) {
			break
		}
	}
	if len(opts) == 0 {
		return fmt.Sprintf("layers − first − last must split evenly over %d middle %s (each a multiple of vpp=%d); no equal first/last value passes every check with pp=%d, vpp=%d", stages, plural(stages, "stage", "stages"), vpp, pp, vpp)
	}
	what := "first_stage_layers and last_stage_layers"
	if hasF != hasL {
		what = c.unevenPath()[len("parallel."):]
	}
	return fmt.Sprintf("with %s both set to the same value, valid values are %s", what, strings.Join(opts, ", "))
}

// acceptsEdges verifies first_stage_layers and/or last_stage_layers (those
// the spec sets) both set to edge.
func (c *checker) acceptsEdges(code string, first, last bool, edge int) bool {
	var set []setting
	if first {
		set = append(set, setting{"parallel.first_stage_layers", edge})
	}
	if last {
		set = append(set, setting{"parallel.last_stage_layers", edge})
	}
	return c.acceptsAll(code, set...)
}

// InterleaveGroupValid is P25/P26 for a microbatch group of n with m
// microbatches on pp stages: pp ≤ n ≤ m, and m mod n is 0 or at least pp
// (get_schedule_table and its assertions in schedules.py at d98e8a64). The
// solver chooses group sizes by it.
func InterleaveGroupValid(n, m, pp int) bool {
	if n < pp || n > m {
		return false
	}
	r := m % n
	return r == 0 || r >= pp
}

// interleave checks P25/P26: with vpp > 1 the microbatch count M must be at
// least the group size N (default pp), N ≥ pp, and M mod N is 0 or ≥ pp.
func (c *checker) interleave() {
	p, t := c.s.Parallel, c.s.Train
	if p.VPP <= 1 || p.PP <= 1 || !c.gridOK() {
		return
	}
	unit := t.MicroBatch * c.d.DP
	if t.GlobalBatch%unit != 0 {
		return // global-batch reports it; M is not defined
	}
	M, N, pp := t.GlobalBatch/unit, c.d.MicrobatchGroup, p.PP
	if N < pp {
		const path = "parallel.microbatch_group_size"
		okN := c.only("interleave-microbatches", path, valuesIn(pp, max(M, pp), func(n int) bool { return true }))
		hint := listHint(fmt.Sprintf("microbatch_group_size must be at least pp=%d (M=%d microbatches): valid values", pp, M), okN,
			fmt.Sprintf("microbatch_group_size must be at least pp=%d; %s: change train.global_batch", pp, noValue(path)))
		if c.acceptsAll("interleave-microbatches", setting{path, nil}) {
			hint += "; or remove it (default pp)"
		}
		c.report("interleave-microbatches", path, hint,
			"microbatch_group_size=%d is smaller than pp=%d", N, pp)
		return
	}
	okM := func(m int) bool { return InterleaveGroupValid(N, m, pp) } // N ≥ pp here
	if okM(M) {
		return
	}
	below, above := c.nearest("interleave-microbatches", "train.global_batch", M*unit, unit, 4*N+pp, func(g int) bool { return okM(g / unit) })
	hint := fmt.Sprintf("global_batch must give M ≥ %d with M mod %d = 0 or ≥ %d; nearest valid global_batch: %s",
		N, N, pp, nearestText(below, above))
	if below == 0 && above == 0 {
		hint = fmt.Sprintf("global_batch must give M ≥ %d with M mod %d = 0 or ≥ %d; %s", N, N, pp, noValue("train.global_batch"))
	}
	if M < N {
		c.report("interleave-microbatches", "train.global_batch", hint,
			"the interleaved schedule needs at least N=%d microbatches (microbatch group, default pp=%d), but global_batch / (micro_batch·dp) = %d / (%d·%d) = %d",
			N, pp, t.GlobalBatch, t.MicroBatch, c.d.DP, M)
		return
	}
	c.report("interleave-microbatches", "train.global_batch", hint,
		"with vpp=%d, M=%d microbatches leave a remainder of %d modulo the microbatch group N=%d, which is below pp=%d (dependency bubbles)",
		p.VPP, M, M%N, N, pp)
}
