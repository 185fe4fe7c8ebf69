package estimate

import (
	"math"
	"testing"
)

// An absurdly large plan must come out as too large, never wrap to negative.
func TestRoundSaturates(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want int64
	}{
		{1e30, math.MaxInt64}, {math.Inf(1), math.MaxInt64}, {-1e30, math.MinInt64}, {math.NaN(), 0}, {2.5, 3}, {1 << 40, 1 << 40},
	} {
		if got := round(c.in); got != c.want {
			t.Errorf("round(%g) = %d, want %d", c.in, got, c.want)
		}
	}
}

// train.fsdp shards the weights and gradients too: less state per GPU than
// the distributed optimizer, which shards only the optimizer state.
func TestFSDPShardsEverything(t *testing.T) {
	s := llama70B()
	s.Train.DistributedOptimizer = true
	opt := run(t, s)
	s.Train.FSDP = true
	full := run(t, s)
	if full.Assumptions.Sharding != ShardFull || opt.Assumptions.Sharding != ShardOptimizer {
		t.Fatalf("sharding: fsdp %q, distributed optimizer %q", full.Assumptions.Sharding, opt.Assumptions.Sharding)
	}
	a, b := full.Memory.Stages[1], opt.Memory.Stages[1]
	if a.Gradients >= b.Gradients || a.Optimizer > b.Optimizer {
		t.Errorf("fsdp state %d+%d+%d not below distributed optimizer %d+%d+%d",
			a.Weights, a.Gradients, a.Optimizer, b.Weights, b.Gradients, b.Optimizer)
	}
	if full.Memory.Model != "parc" {
		t.Errorf("Megatron's formula does not model FSDP, got model %q", full.Memory.Model)
	}
}

// The assumptions say what the model timed: attention the spec runs
// unfused (kernels.attention_backend) is reported unfused, whatever the
// option assumes for an unset backend.
func TestAssumptionsNameTheAttentionRun(t *testing.T) {
	s := llama70B()
	if e := run(t, s); !e.Assumptions.FusedAttention {
		t.Errorf("backend unset: attention fused %v, want the option's true", e.Assumptions.FusedAttention)
	}
	s.Kernels.AttentionBackend = "unfused"
	if e := run(t, s); e.Assumptions.FusedAttention {
		t.Errorf("attention_backend unfused: reported fused")
	}
}
