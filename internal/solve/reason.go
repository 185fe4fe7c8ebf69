package solve

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// axisWords names what each axis's exposed communication is.
var axisWords = map[string]string{
	"tp":   "tp all-reduce",
	"cp":   "cp ring exchange",
	"pp":   "pp send/recv",
	"dp":   "dp gradient reduction",
	"ep":   "ep all-to-all",
	"etp":  "etp all-gather",
	"edp":  "expert dp gradient reduction",
	"embd": "embedding all-reduce",
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
func why(c, best *Candidate) string {
	b, cb := best.Breakdown, c.Breakdown
	step := c.StepTimeS
	var fs []factor
	compute := fmt.Sprintf("compute %.3g s vs %.3g s", cb.ComputeS, b.ComputeS)
	if c.Train.Recompute != best.Train.Recompute {
		compute = fmt.Sprintf("%s recompute: compute %.3g s vs %.3g s (%s)", c.Train.Recompute, cb.ComputeS, b.ComputeS, best.Train.Recompute)
	} else if c.Parallel.PP != best.Parallel.PP || c.Parallel.VPP != best.Parallel.VPP {
		compute = fmt.Sprintf("compute %.3g s vs %.3g s (the slowest pipeline stage holds more)", cb.ComputeS, b.ComputeS)
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
		word := axisWords[ax]
		if word == "" {
			word = ax + " communication"
		}
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
	if total <= 0 || fs[0].delta <= 0 {
		parts = append(parts, fmt.Sprintf("same step time as the best; ranked lower by the tie-break (model-parallel size tp·pp·cp %d vs %d, then memory)",
			c.key.model, best.key.model))
	} else {
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
