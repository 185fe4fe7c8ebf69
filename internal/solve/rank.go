package solve

import (
	"cmp"
	"slices"
)

// DefaultNoiseBand is how close, relatively, two plans' estimated step
// times must be for parc to call them a tie and prefer the simpler plan
// (fewer pipeline stages, no context parallelism, no interleaving, an even
// split: easier to run and to debug). It is the error the calibration
// measures when the model ranks two plans of one run: over the measured
// corpus's pairs of runs of one model, GPU count, sequence and precision
// with different plans, |ln(estimated ratio) − ln(measured ratio)| has a
// median of 5.04% (264 pairs); over pairs of one plan measured in different
// releases, 2.07% (622 pairs: what the software moved between releases),
// which leaves 4.60% in quadrature. TestNoiseBandFromCalibration keeps the
// band between the two (as relative ratios: 5.17% and 4.71%). It was 4%
// (4.4 / 2.4 / 3.7% over 215 pairs) until session 8's out-of-sample rows
// joined the corpus (Megatron-MoE-ModelZoo's Qwen3-235B plans on 256 H100
// among them), 4.5% until session 60 recorded the router fusion of
// Megatron-Bridge's 26.02-26.06 MoE runs, which their scripts set as 26.08's
// do (one plan's runs across those releases then differ less in the model,
// 2.07% from 2.4%, and the band's lower end rose above 4.5%), and 4.6% until
// session 62 counted Megatron-Bridge 25.11's GPT-OSS-120B runs as runs of the
// model of 26.x's (their records differ only in YaRN's mscale factors): 7
// more pairs of different plans (4.90% and 4.44% over 257 before).
const DefaultNoiseBand = 0.048

// DefaultMemoryHeadroom is the fraction of the GPU's memory a plan's
// estimated peak may use: the rest is for what the estimate does not see
// (allocator fragmentation, NCCL and CUDA-graph buffers, the CUDA context),
// and is the same 90% above which `parc vet` warns memory-near-limit.
const DefaultMemoryHeadroom = 0.9

// shapeKey is a parallel shape (the degrees) with one pipeline schedule
// (the virtual stages) and one pipeline split: the search ranks these, and
// its plans differ in micro batch, recompute and optimizer sharding. The
// candidates are distinct parallel shapes: run folds a shape's other
// virtual-stage counts and splits under the first listed as variants.
type shapeKey struct {
	tp, cp, pp, ep, etp, vpp, split int32
}

// distinct is k without its virtual stages and split: the parallel shape a
// candidate lists (the degrees tp, cp, pp, ep, etp, and with them dp).
func (k shapeKey) distinct() shapeKey {
	k.vpp, k.split = 0, 0
	return k
}

func (sv *solver) shapeOf(lf *leaf) shapeKey {
	return shapeKey{lf.tp, lf.cp, lf.pp, lf.ep, lf.etp, lf.vpp, lf.split}
}

// simplicity orders shapes from the simplest: the smaller model-parallel
// group tp·cp·pp (more data parallelism), fewer pipeline stages, less
// context parallelism, fewer virtual stages, the simpler split (even, then
// accounted, then uneven), then ep, tp and etp ascending.
func (sv *solver) simplicity(k shapeKey) [8]int {
	return [8]int{int(k.tp * k.cp * k.pp), int(k.pp), int(k.cp), int(k.vpp), sv.splits[k.split].kind(), int(k.ep), int(k.tp), int(k.etp)}
}

// variantOrder orders the plans of one shape: step time, then peak memory,
// then less recomputation, the simpler optimizer sharding, the smaller
// micro batch.
func (sv *solver) variantOrder(a, b foundPlan) int {
	la, lb := sv.leaves.at(a.leaf), sv.leaves.at(b.leaf)
	return cmp.Or(
		cmp.Compare(a.step, b.step),
		cmp.Compare(a.peak, b.peak),
		cmp.Compare(la.rc, lb.rc),
		cmp.Compare(sv.shards[la.shard].kind(), sv.shards[lb.shard].kind()),
		cmp.Compare(la.mb, lb.mb),
	)
}

// group is one shape and its plans found, best first.
type group struct {
	shape    shapeKey
	plans    []foundPlan
	inBand   bool
	simplest [8]int
}

// inBand reports whether step time t is within the noise band of the
// fastest, best (with room for the last bit of a sum).
func (sv *solver) inBand(t, best float64) bool {
	return t <= best*(1+sv.opts.NoiseBand)*(1+1e-12)
}

// ranked groups the feasible plans found by shape and orders the shapes:
// first every shape whose best plan is within the noise band of the fastest
// (simplest first, then by step time), then the rest by step time, then the
// smaller model-parallel group, then less memory, then the simplicity order.
func (sv *solver) ranked() []group {
	byShape := map[shapeKey]int{}
	var gs []group
	for _, fp := range sv.found {
		k := sv.shapeOf(sv.leaves.at(fp.leaf))
		i, ok := byShape[k]
		if !ok {
			i = len(gs)
			byShape[k] = i
			gs = append(gs, group{shape: k, simplest: sv.simplicity(k)})
		}
		gs[i].plans = append(gs[i].plans, fp)
	}
	if len(gs) == 0 {
		return nil
	}
	best := gs[0].plans[0].step
	for i := range gs {
		slices.SortFunc(gs[i].plans, sv.variantOrder)
		best = min(best, gs[i].plans[0].step)
	}
	for i := range gs {
		gs[i].inBand = sv.inBand(gs[i].plans[0].step, best)
	}
	slices.SortFunc(gs, func(a, b group) int {
		pa, pb := a.plans[0], b.plans[0]
		switch {
		case a.inBand && !b.inBand:
			return -1
		case b.inBand && !a.inBand:
			return 1
		case a.inBand:
			return cmp.Or(slices.Compare(a.simplest[:], b.simplest[:]), cmp.Compare(pa.step, pb.step), cmp.Compare(pa.peak, pb.peak),
				cmp.Compare(a.shape.split, b.shape.split))
		}
		return cmp.Or(cmp.Compare(pa.step, pb.step), cmp.Compare(a.simplest[0], b.simplest[0]), cmp.Compare(pa.peak, pb.peak),
			slices.Compare(a.simplest[:], b.simplest[:]), cmp.Compare(a.shape.split, b.shape.split))
	})
	return gs
}
