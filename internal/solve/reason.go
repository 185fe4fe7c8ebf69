package solve

import (
	"fmt"
	"math"
	"parc.dev/parc/internal/estimate"
	"slices"
	"strings"
)

// axisWord names axis ax's exposed communication by the collective the
// estimate runs on it (estimate.Collective*): sequence parallelism turns the
// tp all-reduces into all-gathers and reduce-scatters, the distributed
// optimizer the gradient all-reduce into a reduce-scatter and a parameter
// all-gather.
func axisWord(ax, collective string) string {
	switch ax {
	case "tp", "ep", "etp":
		// The expert-tensor-parallel group always gathers the routed
		// tokens and reduce-scatters them back (estimate's collective).
		if collective == estimate.CollectiveGatherScatter || ax == "etp" {
			return ax + " all-gather/reduce-scatter"
		}
		if ax == "tp" {
			return "tp all-reduce"
		}
		return "ep all-to-all"
	case "cp":
		if collective == estimate.CollectiveAllToAll {
			return "cp all-to-all"
		}
		return "cp ring exchange"
	case "dp", "edp":
		group := "dp"
		if ax == "edp" {
			group = "expert dp"
		}
		switch collective {
		case estimate.CollectiveShardedDP, estimate.CollectiveGradShardedDP:
			return group + " gradient reduce-scatter and parameter all-gather"
		case estimate.CollectiveFSDP:
			return group + " FSDP gathers and reduce-scatters"
		case estimate.CollectiveAllReduce:
			return group + " gradient all-reduce"
		}
		return group + " gradient reduction"
	case "pp":
		return "pp send/recv"
	case "embd":
		return "embedding all-reduce"
	}
	return ax + " communication"
}

// factor is one part of the step time that differs from the best plan.
type factor struct {
	delta float64
	text  string
}

// why says what makes c slower than best: the part of the step time that
// grew the most (compute, bubble, or one axis's exposed communication), and
// the second one when it accounts for a quarter of the difference or more;
// then a memory note above 90% of the GPU.
func (sv *solver) why(c, best *Candidate, band float64) string {
	b, cb := best.Breakdown, c.Breakdown
	step := c.StepTimeS
	var fs []factor
	compute := fmt.Sprintf("compute %.3g s vs %.3g s", cb.ComputeS, b.ComputeS)
	shape := shapeDifferences(c, best)
	switch {
	case recomputeWords(c.Train) != recomputeWords(best.Train) && len(shape) == 0:
		compute = fmt.Sprintf("%s recompute: compute %.3g s vs %.3g s (%s)", recomputeWords(c.Train), cb.ComputeS, b.ComputeS, recomputeWords(best.Train))
	case len(shape) == 1 && (c.Parallel.PP != best.Parallel.PP || c.Parallel.VPP != best.Parallel.VPP):
		compute = fmt.Sprintf("compute %.3g s vs %.3g s (the slowest pipeline stage holds more)", cb.ComputeS, b.ComputeS)
	case len(shape) > 0:
		// Several settings differ: the compute difference is theirs
		// together, not one setting's.
		if recomputeWords(c.Train) != recomputeWords(best.Train) {
			shape = append(shape, fmt.Sprintf("recompute %s vs %s", recomputeWords(c.Train), recomputeWords(best.Train)))
		}
		compute = fmt.Sprintf("compute %.3g s vs %.3g s (%s)", cb.ComputeS, b.ComputeS, strings.Join(shape, ", "))
	}
	fs = append(fs, factor{cb.ComputeS - b.ComputeS, compute})
	fs = append(fs, factor{cb.BubbleS - b.BubbleS, fmt.Sprintf("bubble %.1f%% vs %.1f%% of the step (pp=%d vpp=%d, %d microbatches vs pp=%d vpp=%d, %d)",
		100*cb.BubbleS/step, 100*b.BubbleS/best.StepTimeS, c.Parallel.PP, c.Parallel.VPP, cb.Microbatches,
		best.Parallel.PP, best.Parallel.VPP, b.Microbatches)})
	axes := map[string]bool{}
	for ax := range cb.ExposedCommS {
		axes[ax] = true
	}
	for ax := range b.ExposedCommS {
		axes[ax] = true
	}
	names := make([]string, 0, len(axes))
	for ax := range axes {
		names = append(names, ax)
	}
	slices.Sort(names)
	for _, ax := range names {
		x, y := cb.ExposedCommS[ax], b.ExposedCommS[ax]
		if x == y {
			continue
		}
		word := axisWord(ax, cb.Collectives[ax])
		text := fmt.Sprintf("%s exposed %.3g s vs %.3g s", word, x, y)
		if l := cb.Links[ax]; l == "network" && b.Links[ax] != "network" {
			text = fmt.Sprintf("%s crosses the network: exposed %.3g s vs %.3g s", word, x, y)
		}
		fs = append(fs, factor{x - y, text})
	}
	slices.SortStableFunc(fs, func(a, b factor) int {
		switch {
		case a.delta > b.delta:
			return -1
		case a.delta < b.delta:
			return 1
		}
		return 0
	})
	total := c.StepTimeS - best.StepTimeS
	var parts []string
	switch {
	case c.InNoiseBand && total < 0:
		parts = append(parts, fmt.Sprintf("%.1f%% faster than the pick, within the %.3g%% noise band, where the simpler plan ranks first (%s)",
			-100*total/best.StepTimeS, 100*band, sv.simpler(best, c)))
	case c.InNoiseBand && fs[0].delta > 0:
		parts = append(parts, fmt.Sprintf("%+.1f%% step time, within the noise band: %s", 100*total/best.StepTimeS, fs[0].text))
	case c.InNoiseBand:
		parts = append(parts, fmt.Sprintf("same step time as the pick, within the noise band, where the simpler plan ranks first (%s)", sv.simpler(best, c)))
	case fs[0].delta <= 0:
		// Out of the band c is the slower (the pick is in it), by what no
		// part of the breakdown shows.
		parts = append(parts, fmt.Sprintf("%+.1f%% step time", 100*total/best.StepTimeS))
	default:
		parts = append(parts, fmt.Sprintf("%+.1f%% step time: %s", 100*total/best.StepTimeS, fs[0].text))
		if len(fs) > 1 && fs[1].delta >= 0.25*total && !math.IsInf(fs[1].delta, 0) {
			parts = append(parts, fs[1].text)
		}
	}
	if c.Memory.FractionOfGPU > 0.9 {
		parts = append(parts, fmt.Sprintf("memory %.0f%% of the GPU", 100*c.Memory.FractionOfGPU))
	}
	return strings.Join(parts, "; ")
}

// recomputeWords is a plan's recomputation as the table prints it:
// full, full[first k layers of each chunk], selective, selective[modules],
// or none.
func recomputeWords(t Train) string {
	if t.Recompute == "selective" && len(t.RecomputeModules) > 0 {
		return "selective[" + strings.Join(t.RecomputeModules, ",") + "]"
	}
	if t.Recompute == "full" && t.RecomputeLayers != nil {
		return fmt.Sprintf("full[first %d layers of each chunk]", *t.RecomputeLayers)
	}
	return t.Recompute
}

// shapeDifferences lists the degrees and the micro batch in which c
// differs from best, as "tp 4 vs 1".
func shapeDifferences(c, best *Candidate) []string {
	var out []string
	for _, d := range []struct {
		name string
		x, y int
	}{
		{"tp", c.Parallel.TP, best.Parallel.TP}, {"pp", c.Parallel.PP, best.Parallel.PP},
		{"vpp", c.Parallel.VPP, best.Parallel.VPP}, {"cp", c.Parallel.CP, best.Parallel.CP},
		{"ep", c.Parallel.EP, best.Parallel.EP}, {"etp", c.Parallel.ETP, best.Parallel.ETP},
		{"micro_batch", c.Train.MicroBatch, best.Train.MicroBatch},
	} {
		if d.x != d.y {
			out = append(out, fmt.Sprintf("%s %d vs %d", d.name, d.x, d.y))
		}
	}
	return out
}

// tieBreakWords words each entry of solver.simplicity in which one plan is
// simpler than another, with the two values; the split's entry (a kind)
// is worded from the splits themselves.
var tieBreakWords = [8]string{
	"a smaller model-parallel group: tp·cp·pp %d vs %d", "fewer pipeline stages: %d vs %d",
	"less context parallelism: cp=%d vs %d", "fewer virtual stages: vpp=%d vs %d", "",
	"a smaller expert-parallel group: ep=%d vs %d", "less tensor parallelism: tp=%d vs %d",
	"less expert tensor parallelism: etp=%d vs %d",
}

// simpler says in what plan a is simpler than plan b, by the first entry
// in which their shapes' simplicity keys differ: the order the noise band's
// tie-break looks at (solver.simplicity, solver.ranked).
func (sv *solver) simpler(a, b *Candidate) string {
	sa, sb := sv.shapeOf(sv.leaves.at(a.leaf)), sv.shapeOf(sv.leaves.at(b.leaf))
	ka, kb := sv.simplicity(sa), sv.simplicity(sb)
	for i := range ka {
		switch {
		case ka[i] == kb[i]:
		case i == 4:
			return fmt.Sprintf("a simpler pipeline split: %s vs %s", sv.splitWords(sa), sv.splitWords(sb))
		default:
			return fmt.Sprintf(tieBreakWords[i], ka[i], kb[i])
		}
	}
	// Equal keys: ranked asks the step time next, so b (slower or tied
	// with a) ties, and memory, then the split's index, decides.
	if a.Memory.PerGPUPeakBytes < b.Memory.PerGPUPeakBytes {
		return "the same shape complexity and step time; less memory"
	}
	return "the same shape complexity, step time and memory; the split listed first"
}

// splitWords names a shape's pipeline split as the table prints it.
func (sv *solver) splitWords(k shapeKey) string {
	if w := sv.splits[k.split].String(); w != "" {
		return w
	}
	return "even"
}

// explain says in plain words why the first candidate was chosen: what its
// step is made of, its memory against the headroom, the margin to the
// runner-up, and, when a faster shape lies within the noise band, why the
// simpler plan won.
func (sv *solver) explain(cs []Candidate, gs []group) string {
	c := &cs[0]
	b := c.Breakdown
	type part struct {
		s    float64
		text string
	}
	parts := []part{{b.ComputeS, "compute"}, {b.BubbleS, "the pipeline bubble"}, {b.SlowestNodeWaitS, "waiting for the slowest node"}}
	for ax, x := range b.ExposedCommS {
		parts = append(parts, part{x, "waiting on " + axisWord(ax, b.Collectives[ax])})
	}
	slices.SortStableFunc(parts, func(a, b part) int {
		switch {
		case a.s > b.s:
			return -1
		case a.s < b.s:
			return 1
		}
		return strings.Compare(a.text, b.text)
	})
	var words []string
	for _, p := range parts {
		if p.s >= 0.01*c.StepTimeS {
			words = append(words, fmt.Sprintf("%s %.3g s (%.0f%%)", p.text, p.s, 100*p.s/c.StepTimeS))
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "parc picks %s: %.4g s per step, %s; peak memory %s per GPU, %.0f%% of the GPU (headroom %.0f%%).",
		c.Label(), c.StepTimeS, strings.Join(words, ", "), estimate.GiB(c.Memory.PerGPUPeakBytes),
		100*c.Memory.FractionOfGPU, 100*sv.opts.MemoryHeadroom)
	if len(cs) > 1 {
		r := &cs[1]
		fmt.Fprintf(&out, " The runner-up, %s, is %+.1f%%: %s.", r.Label(), r.VsBestPct, r.Why)
	} else {
		out.WriteString(" No other parallel shape passes every check.")
	}
	if f := sv.fastest(gs); len(f) > 0 && f[0].shape != gs[0].shape {
		fp := f[0].plans[0]
		lf := sv.leaves.at(fp.leaf)
		// The margin the band was judged on (ranked: the search's step of
		// each shape), not the verified pick's step against the search's.
		fmt.Fprintf(&out, " The pick is rated %.1f%% slower than the fastest plan, %s, within the %.3g%% noise band, so the simpler plan wins.",
			100*(gs[0].plans[0].step/fp.step-1), sv.leafLabel(lf), 100*sv.opts.NoiseBand)
	}
	return out.String()
}
