package estimate

import (
	"fmt"
	"strings"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// A remedy is one change a memory hint may suggest, with the value it sets.
type remedy struct {
	text  string // "train.recompute \"full\""
	apply func(s *spec.Spec)
}

// memoryRemedies are the changes that lower a stage's memory without
// changing the grid: a smaller micro batch, more recomputation, sequence
// parallelism, the distributed optimizer, and, slowest, the optimizer state
// on the host (with the precision-aware optimizer it needs).
func (c *costModel) memoryRemedies() []remedy {
	tr := c.s.Train
	var out []remedy
	for mb := tr.MicroBatch - 1; mb >= 1; mb-- {
		out = append(out, remedy{fmt.Sprintf("train.micro_batch %d", mb), func(s *spec.Spec) { s.Train.MicroBatch = mb }})
	}
	var rc []string
	switch tr.Recompute {
	case "none":
		rc = []string{"selective", "full"}
	case "selective":
		rc = []string{"full"}
	}
	for _, r := range rc {
		out = append(out, remedy{fmt.Sprintf("train.recompute %q", r), func(s *spec.Spec) { s.Train.Recompute = r }})
	}
	if c.tp > 1 && !c.d.SP {
		out = append(out, remedy{"parallel.sp true", func(s *spec.Spec) { on := true; s.Parallel.SP = &on }})
	}
	if c.sharding == ShardNone && !c.shardingGiven && !tr.FSDP {
		out = append(out, remedy{"train.distributed_optimizer true", func(s *spec.Spec) { s.Train.DistributedOptimizer = true }})
	}
	if tr.DistributedOptimizer && !tr.FSDP && !tr.OptimizerCPUOffload {
		// Last: the host then runs Adam on the whole shard (several times
		// the GPU's optimizer step; TestOptimizerOffloadMeasured).
		text := "train.optimizer_cpu_offload true"
		if !tr.PrecisionAwareOptim {
			text += " and train.precision_aware_optimizer true"
		}
		out = append(out, remedy{text, func(s *spec.Spec) {
			s.Train.OptimizerCPUOffload, s.Train.OptimizerOffloadFraction, s.Train.PrecisionAwareOptim = true, 1, true
		}})
	}
	return out
}

// peakAfter applies change to a copy of the spec and reports whether the
// result passes every check, and its peak memory per GPU (the estimate's
// most loaded stage).
func (c *costModel) peakAfter(change func(*spec.Spec)) (int64, bool) {
	s2 := *c.s
	change(&s2)
	d2 := spec.Derive(&s2)
	if !c.passes(&s2, d2) {
		return 0, false
	}
	o := c.o
	if !c.shardingGiven {
		o.Sharding = ""
	}
	c2 := newCostModel(&s2, d2, resolveOptions(&s2, o))
	e := &Estimate{Comms: map[string]AxisComm{}}
	c2.params(e)
	c2.memory(e)
	if len(e.Memory.Stages) == 0 {
		return 0, false
	}
	return e.Memory.Stages[e.Memory.PeakStage].Total, true
}

// fittingRemedies lists the remedies that, each on its own, pass every
// check and bring the peak to at most limit bytes, with the peak they give.
func (c *costModel) fittingRemedies(limit int64) []string {
	var out []string
	micro := false // one micro batch suffices: the largest that fits
	for _, r := range c.memoryRemedies() {
		isMicro := strings.HasPrefix(r.text, "train.micro_batch")
		if isMicro && micro {
			continue
		}
		if peak, ok := c.peakAfter(r.apply); ok && peak <= limit {
			out = append(out, fmt.Sprintf("%s (peak %s)", r.text, GiB(peak)))
			micro = micro || isMicro
		}
	}
	return out
}

// globalBatchPasses reports whether train.global_batch = gb passes every
// check.
func (c *costModel) globalBatchPasses(gb int) bool {
	s2 := *c.s
	s2.Train.GlobalBatch = gb
	return c.passes(&s2, spec.Derive(&s2))
}

// passes reports whether s2 (the spec with a hint's value set) has no error
// the spec itself does not have. The estimate runs on specs that passed
// every check; callers that estimate others (tests, the solver's partial
// specs) keep their own errors without losing the hints.
func (c *costModel) passes(s2 *spec.Spec, d2 spec.Derived) bool {
	if c.baseline == nil {
		c.baseline = errorKeys(check.Verdict(c.s, c.d, diag.NoPos))
	}
	return noNewErrors(c.baseline, s2, d2)
}

// noNewErrors reports whether s2 has no error outside baseline (errorKeys
// of the spec it was changed from).
func noNewErrors(baseline map[string]bool, s2 *spec.Spec, d2 spec.Derived) bool {
	for k := range errorKeys(check.Verdict(s2, d2, diag.NoPos)) {
		if !baseline[k] {
			return false
		}
	}
	return true
}

func errorKeys(l diag.List) map[string]bool {
	out := map[string]bool{}
	for _, d := range l {
		if d.Severity == diag.Error {
			out[d.Code+"\x00"+d.Path] = true
		}
	}
	return out
}
