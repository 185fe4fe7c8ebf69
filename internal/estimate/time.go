package estimate

import (
	"maps"
	"math"
	"slices"
	"sort"
)

// AllReduceBytes is what one GPU sends in a ring all-reduce of size bytes over
// n GPUs: a reduce-scatter and an all-gather, 2(n−1)/n of the tensor.
func AllReduceBytes(size float64, n int) float64 {
	if n <= 1 {
		return 0
	}
	return 2 * float64(n-1) / float64(n) * size
}

// GatherBytes is what one GPU sends in a ring all-gather or reduce-scatter
// of a tensor of size bytes (the full tensor) over n GPUs: (n−1)/n of it.
func GatherBytes(size float64, n int) float64 {
	if n <= 1 {
		return 0
	}
	return float64(n-1) / float64(n) * size
}

// TPBytesPerLayer is what one GPU of a tensor-parallel group of t moves per
// transformer layer and microbatch: two all-reduces forward and two backward
// of the s·b·h activation (Shoeybi et al. 2019; with sequence parallelism the
// same bytes as all-gathers and reduce-scatters, Korthikanti et al. 2022).
func TPBytesPerLayer(s, b, h, t int, elemBytes float64) float64 {
	return 4 * AllReduceBytes(float64(s)*float64(b)*float64(h)*elemBytes, t)
}

// stageTime is one pipeline rank's cost of one microbatch.
type stageTime struct {
	flops, recompute, core float64 // FLOPs of the tp·cp group: model, recompute extra, core attention
	bytes                  map[string]float64
	perLayer               map[string]float64
}

func (c *costModel) peakFLOPs() float64 {
	peak := c.s.Cluster.GPU.BF16TFLOPs * 1e12
	switch c.s.Train.Precision {
	case "fp8":
		peak *= 2
	case "fp32":
		peak /= 2
	}
	return peak
}

func (c *costModel) bandwidth(link string) float64 {
	if link == LinkNVLink {
		return c.s.Cluster.NVLinkGBps
	}
	return c.s.Cluster.NetworkGBps
}

// stageCost computes rank r's FLOPs and bytes per microbatch.
func (c *costModel) stageCost(r int) stageTime {
	a := newMegatronArgs(c.s, c.d)
	f := a.flopTerms()
	tr := c.s.Train
	tokens := float64(tr.MicroBatch) * float64(tr.SeqLength)
	s2 := tokens * float64(tr.SeqLength)
	const six = 6
	denseLinear := six*f.hidden*f.ffn*f.ffnFactor + f.selfAttn
	moeLinear := six*f.hidden*(f.moeFFN*a.topk*f.ffnFactor+f.sharedFFN*f.ffnFactor) + f.selfAttn

	st := stageTime{bytes: map[string]float64{}, perLayer: map[string]float64{}}
	elem := 2.0
	if tr.Precision == "fp32" {
		elem = 4
	}
	T := c.am.tokens // tokens on this GPU's sequence shard
	h := c.am.h
	ar := AllReduceBytes(elem*T*h, c.tp)
	full := tr.Recompute == "full"
	fwdExtra := 0.0
	if full {
		fwdExtra = 1
	}
	// TP: 2 all-reduces per block (attention, MLP), half forward half backward.
	tpDense := (4 + 2*fwdExtra) * ar
	tpMoE := (2 + fwdExtra) * ar
	if c.sh.fs > 0 {
		tpMoE += (2 + fwdExtra) * ar
	}
	st.perLayer["tp"] = 4 * ar

	// CP: K and V of the local shard, heads split over tp.
	kv := 2 * elem * T * c.am.kv / float64(c.tp)
	var cpLayer float64
	if c.cp > 1 {
		n := float64(c.cp - 1)
		switch c.s.Parallel.CPCommType {
		case "a2a":
			// Ulysses: all-to-all of Q, K, V before and O after, forward and backward.
			x := elem * T * (2*c.am.q + 2*c.am.kv) / float64(c.tp)
			cpLayer = (2 + fwdExtra) * n / float64(c.cp) * x
		default:
			// Ring (p2p, a2a+p2p) or all-gather: K/V go around forward; K/V and
			// their gradients backward.
			cpLayer = (3 + fwdExtra) * n * kv
		}
	}
	st.perLayer["cp"] = cpLayer

	// EP: dispatch and combine forward and backward of the routed tokens.
	routed := T * c.am.topk / float64(c.tp)
	var epLayer, etpLayer float64
	if c.sh.experts > 0 {
		if c.ep > 1 {
			if c.s.Model.MoE != nil && c.s.Model.MoE.Dispatcher == "allgather" {
				epLayer = (4 + 2*fwdExtra) * float64(c.ep-1) * elem * (T / float64(c.tp)) * h
			} else {
				epLayer = (4 + 2*fwdExtra) * elem * routed * h * float64(c.ep-1) / float64(c.ep)
			}
		}
		if c.etp > 1 {
			etpLayer = (4 + 2*fwdExtra) * float64(c.etp-1) * elem * routed * h
		}
	}
	st.perLayer["ep"], st.perLayer["etp"] = epLayer, etpLayer

	for _, ch := range c.stages[r] {
		for l := ch.First; l < ch.First+ch.Count; l++ {
			moe := c.sh.isMoE(l)
			lin := denseLinear
			if moe {
				lin = moeLinear
				st.bytes["tp"] += tpMoE
				st.bytes["ep"] += epLayer
				st.bytes["etp"] += etpLayer
			} else {
				st.bytes["tp"] += tpDense
			}
			st.bytes["cp"] += cpLayer
			st.flops += tokens*lin + s2*f.selfAttnCore
			st.core += s2 * f.selfAttnCore
			switch tr.Recompute {
			case "full":
				st.recompute += (tokens*lin + s2*f.selfAttnCore) / 3
			case "selective":
				st.recompute += s2 * f.selfAttnCore / 3
			}
		}
	}
	if r == 0 {
		st.bytes["tp"] += ar / 2 // embedding output: one reduction forward
	}
	if r == c.pp-1 {
		st.bytes["tp"] += ar / 2 // output layer input: gathered forward, reduced backward
		mtp := f.mtpLayers
		lastLinear := denseLinear
		if a.lastLayerIsMoE() == 1 {
			lastLinear = moeLinear
		}
		st.flops += tokens*six*f.hidden*f.paddedVocab*(mtp+1) +
			tokens*six*mtp*(3*f.hidden+2*f.hidden*f.hidden) +
			mtp*(tokens*lastLinear+s2*f.selfAttnCore)
		st.core += mtp * s2 * f.selfAttnCore
	}
	// PP: the boundary activation (sequence-parallel shard) once per chunk
	// boundary, forward and backward.
	if c.pp > 1 {
		act := elem * T * h / c.am.rep
		var sends float64
		for v := range c.vpp {
			if r != c.pp-1 || v != c.vpp-1 {
				sends++ // forward activation to the next stage
			}
			if r != 0 || v != 0 {
				sends++ // backward gradient to the previous stage
			}
		}
		st.bytes["pp"] = sends * act
	}
	return st
}

// time fills comms, compute, step time, tokens/s and MFU.
func (c *costModel) time(e *Estimate, link func(string) string) {
	e.FLOPsPerStep = MegatronFLOPs(c.s, c.d)
	peak := c.peakFLOPs()
	eff := c.efficiency
	rate := peak * eff
	e.Compute.PeakTFLOPs = peak / 1e12
	e.Compute.Efficiency = eff

	groupOf := map[string]string{"tp": "tp", "cp": "cp", "ep": "ep", "etp": "etp", "pp": "pp"}
	sizeOf := map[string]int{"tp": c.tp, "cp": c.cp, "ep": c.ep, "etp": c.etp, "pp": c.pp}
	patterns := map[string]string{
		"tp":  "2 all-reduces forward + 2 backward per layer and microbatch (all-gather/reduce-scatter with sp)",
		"cp":  "ring exchange of K/V forward, K/V and their gradients backward, per layer and microbatch",
		"ep":  "all-to-all dispatch + combine forward and backward per MoE layer and microbatch",
		"etp": "all-gather + reduce-scatter of the routed tokens forward and backward per MoE layer",
		"pp":  "point-to-point activation forward and gradient backward per microbatch and virtual stage",
	}
	if c.s.Parallel.CPCommType == "a2a" {
		patterns["cp"] = "all-to-all of Q/K/V and output, forward and backward, per layer and microbatch"
	}
	if c.s.Model.MoE != nil && c.s.Model.MoE.Dispatcher == "allgather" {
		patterns["ep"] = "all-gather dispatch + reduce-scatter combine forward and backward per MoE layer and microbatch"
	}

	m := float64(c.m)
	costs := make([]stageTime, c.pp)
	mbTime := make([]float64, c.pp)
	compTime := make([]float64, c.pp)
	perGPU := float64(c.tp * c.cp)
	type axisStage struct{ bytes, exposed float64 }
	axes := map[string][]axisStage{}
	for ax, n := range sizeOf {
		if n > 1 {
			axes[ax] = make([]axisStage, c.pp)
		}
	}
	overlapPP := c.vpp > 1 && c.s.Parallel.OverlapP2P
	for r := range c.pp {
		st := c.stageCost(r)
		costs[r] = st
		comp := (st.flops + st.recompute) / perGPU / rate
		compTime[r] = comp
		t := comp
		// Sum the axes in a fixed order: float addition is not associative,
		// and map order would make step times differ in the last bit.
		for _, ax := range slices.Sorted(maps.Keys(st.bytes)) {
			b := st.bytes[ax]
			if sizeOf[ax] <= 1 || b == 0 {
				continue
			}
			tm := b / (c.bandwidth(link(groupOf[ax])) * 1e9)
			exposed := tm
			switch ax {
			case "cp":
				if c.s.Parallel.CPCommType != "a2a" {
					attn := st.core * (1 + boolF(c.s.Train.Recompute != "none")/3) / perGPU / rate
					exposed = math.Max(0, tm-attn)
				}
			case "pp":
				if overlapPP {
					exposed = 0
				}
			}
			t += exposed
			axes[ax][r] = axisStage{bytes: b * m, exposed: exposed * m}
		}
		mbTime[r] = t
	}
	slow := 0
	for r := range c.pp {
		if mbTime[r] > mbTime[slow] {
			slow = r
		}
	}
	pipeTime := (m + float64(c.pp-1)/float64(c.vpp)) * mbTime[slow]
	e.Pipeline.BubbleTimeS = pipeTime - m*mbTime[slow]
	e.Compute.SlowestStage = slow
	e.Compute.MicrobatchTimeS = mbTime[slow]
	e.Compute.TimeS = m * compTime[slow]
	e.Compute.FLOPsPerGPU = m * (costs[slow].flops + costs[slow].recompute) / perGPU

	for ax, per := range axes {
		if c.axisIdle(ax) {
			continue
		}
		best := 0
		for r := range per {
			if per[r].bytes > per[best].bytes {
				best = r
			}
		}
		l := link(groupOf[ax])
		bw := c.bandwidth(l)
		ac := AxisComm{
			Group: groupOf[ax], Size: sizeOf[ax], Pattern: patterns[ax],
			BytesPerStep: round(per[best].bytes), Link: l, BandwidthGBps: bw,
			TimeS: per[best].bytes / (bw * 1e9), ExposedS: per[best].exposed, Stage: best,
		}
		if pl := costs[best].perLayer[ax]; pl > 0 {
			ac.BytesPerLayer = round(pl)
		}
		e.Comms[ax] = ac
	}

	// Data-parallel gradient and parameter traffic, once per step.
	step := pipeTime
	dpFam := "dp"
	if c.cp > 1 {
		dpFam = "dp-cp"
	}
	for _, x := range []struct {
		axis, fam string
		size      int
		expert    bool
	}{
		{"dp", dpFam, c.dp * c.cp, false},
		{"edp", "edp", c.edp, true},
	} {
		if x.size <= 1 || (x.expert && c.sh.experts == 0) {
			continue
		}
		best, bestBytes := 0, -1.0
		var bestExposed float64
		l := link(x.fam)
		bw := c.bandwidth(l) * 1e9
		for r := range c.pp {
			dense, expert := c.stageParams[r].denseExpertPerGPU(int64(c.tp), int64(c.etp), int64(c.ep))
			n := float64(dense)
			if x.expert {
				n = float64(expert)
			}
			grad, gather := c.dataParallelBytes(n, x.size)
			exposed := c.exposedDataParallel(grad/bw, gather/bw, compTime[r])
			if b := grad + gather; b > bestBytes {
				best, bestBytes, bestExposed = r, b, exposed
			}
		}
		e.Comms[x.axis] = AxisComm{
			Group: x.fam, Size: x.size, Pattern: c.dataParallelPattern(),
			BytesPerStep: round(bestBytes), Link: l, BandwidthGBps: bw / 1e9,
			TimeS: bestBytes / bw, ExposedS: bestExposed, Stage: best,
		}
		step += bestExposed
	}
	// Tied embeddings across the pipeline: the first and last stage all-reduce
	// the word-embedding gradient (fp32).
	if c.sh.tied && c.pp > 1 {
		l := link("embd")
		bw := c.bandwidth(l) * 1e9
		b := AllReduceBytes(4*float64(c.sh.wordEmbeddings())/float64(c.tp), 2)
		e.Comms["embd"] = AxisComm{
			Group: "embd", Size: 2, Pattern: "all-reduce of the tied word-embedding gradient between the first and last stage",
			BytesPerStep: round(b), Link: l, BandwidthGBps: bw / 1e9, TimeS: b / bw, ExposedS: b / bw,
		}
		step += b / bw
	}
	e.StepTimeS = step
	if step > 0 {
		e.TokensPerS = float64(c.s.Train.GlobalBatch) * float64(c.s.Train.SeqLength) / step
		bf16 := c.s.Cluster.GPU.BF16TFLOPs * 1e12
		if bf16 > 0 {
			e.MFU = e.FLOPsPerStep / (step * float64(c.world) * bf16)
		}
	}
}

func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// dataParallelBytes is what one GPU sends per step to reduce the gradients of
// n parameters and gather the parameters back over a data-parallel group.
// Gradients are reduced in fp32 (Megatron forces
// accumulate_allreduce_grads_in_fp32 for bf16); parameters are gathered at
// their own width.
func (c *costModel) dataParallelBytes(n float64, size int) (grad, gather float64) {
	gb := 4.0
	wb := c.state.Weights
	switch c.sharding {
	case ShardOptimizer:
		return GatherBytes(n*gb, size), GatherBytes(n*wb, size)
	case ShardFull:
		// Parameters gathered before every forward and backward, gradients
		// reduce-scattered after every backward, each microbatch.
		m := float64(c.m)
		return m * GatherBytes(n*gb, size), 2 * m * GatherBytes(n*wb, size)
	}
	return AllReduceBytes(n*gb, size), 0
}

func (c *costModel) dataParallelPattern() string {
	switch c.sharding {
	case ShardOptimizer:
		return "reduce-scatter of fp32 gradients + all-gather of parameters, once per step"
	case ShardFull:
		return "all-gather of parameters forward and backward + reduce-scatter of gradients, every microbatch"
	}
	return "all-reduce of fp32 gradients, once per step"
}

// exposedDataParallel is the part of the data-parallel traffic the step waits
// for: gradient reduction overlaps the last backward (2/3 of a microbatch)
// with overlap_grad_reduce, the parameter gather the first forward (1/3) with
// overlap_param_gather; with full sharding the traffic of every microbatch
// overlaps that microbatch's compute when overlap_grad_reduce is on.
func (c *costModel) exposedDataParallel(grad, gather, compute float64) float64 {
	tr := c.s.Train
	mb := compute / float64(c.m)
	if c.sharding == ShardFull {
		if tr.OverlapGradReduce {
			return math.Max(0, grad+gather-compute)
		}
		return grad + gather
	}
	if tr.OverlapGradReduce {
		grad = math.Max(0, grad-mb*2/3)
	}
	if tr.OverlapParamGather {
		gather = math.Max(0, gather-mb/3)
	}
	return grad + gather
}

// sortedAxes lists the axes of comms in a fixed order.
func sortedAxes(comms map[string]AxisComm) []string {
	rank := map[string]int{"tp": 0, "cp": 1, "pp": 2, "dp": 3, "ep": 4, "etp": 5, "edp": 6, "embd": 7}
	var out []string
	for k := range comms {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, oki := rank[out[i]]
		rj, okj := rank[out[j]]
		if oki != okj {
			return oki
		}
		if ri != rj {
			return ri < rj
		}
		return out[i] < out[j]
	})
	return out
}

// Axes lists the axes of an estimate's comms in a fixed, readable order.
func (e *Estimate) Axes() []string { return sortedAxes(e.Comms) }

// axisIdle reports an axis of size > 1 that moves nothing in this model
// (ep and etp on a dense model).
func (c *costModel) axisIdle(ax string) bool {
	return (ax == "ep" || ax == "etp") && c.sh.experts == 0
}
