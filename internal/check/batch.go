package check

import "fmt"

// batch checks the global batch against micro_batch × dp (B4/B5: Megatron's
// eval-batch check reports it first, the microbatch calculator again).
func (c *checker) batch() {
	t := c.s.Train
	if !c.gridOK() {
		return // dp is not defined; world-not-divisible says why
	}
	unit := t.MicroBatch * c.d.DP
	if t.GlobalBatch%unit == 0 {
		return
	}
	below, above := c.nearest("global-batch", "train.global_batch", t.GlobalBatch, unit, 24, nil)
	hint := fmt.Sprintf("nearest valid global_batch: %s", nearestText(below, above))
	if below == 0 && above == 0 {
		hint = fmt.Sprintf("global_batch must be a multiple of micro_batch·dp = %d; %s", unit, noValue("train.global_batch"))
	}
	if c.vppOn() && c.s.Parallel.PP > 1 {
		// Also satisfy the interleaved schedule's microbatch rule.
		N, pp := c.d.MicrobatchGroup, c.s.Parallel.PP
		ok := func(g int) bool {
			m := g / unit
			r := m % max(N, 1)
			return g%unit == 0 && m >= N && (r == 0 || r >= pp)
		}
		b, a := c.nearest("global-batch", "train.global_batch", t.GlobalBatch, unit, 8*N+pp, ok)
		if b > 0 || a > 0 {
			hint += fmt.Sprintf(" (with the interleaved schedule: %s)", nearestText(b, a))
		}
	}
	if t.GlobalBatch < unit {
		c.report("global-batch", "train.global_batch", hint,
			"global_batch=%d is smaller than micro_batch·dp = %d·%d = %d", t.GlobalBatch, t.MicroBatch, c.d.DP, unit).
			Related("train.micro_batch", "micro_batch = %d", t.MicroBatch)
		return
	}
	c.report("global-batch", "train.global_batch", hint,
		"global_batch=%d is not divisible by micro_batch·dp = %d·%d = %d", t.GlobalBatch, t.MicroBatch, c.d.DP, unit).
		Related("train.micro_batch", "micro_batch = %d", t.MicroBatch)
}
