package estimate

import (
	"math"
	"testing"

	"parc.dev/parc/internal/diag"
)

// TestSelectiveRecomputeRerunsCollectives checks that selective
// recomputation reruns the forward collectives inside what it checkpoints
// (Megatron-LM at d98e8a64), on two published plans estimated with and
// without the module:
//
//   - "moe": MoELayer.forward checkpoints its custom_forward, which routes,
//     dispatches, runs the experts and combines (moe_layer.py), so the
//     backward repeats the forward's two all-to-alls: six per MoE layer and
//     microbatch where four run without it. NVIDIA's DGX Cloud DeepSeek-V3
//     on 1,024 H100 (v25.08: EP 64, DeepEP, recompute_modules mla_up_proj,
//     mlp, moe), without moe.
//   - "core_attn" (selective's default): Attention's
//     _checkpointed_attention_forward wraps the core attention, inside which
//     Transformer Engine runs the context-parallel ring, so K and V go around
//     it once more: four passes where three run without it (K/V forward; K/V
//     and their gradients backward). Megatron-Bridge 26.02's Llama 3.1 405B on
//     256 GB300 (CP 2, no recomputation), with selective.
func TestSelectiveRecomputeRerunsCollectives(t *testing.T) {
	if testing.Short() {
		t.Skip("loads measured runs")
	}
	for _, c := range []struct {
		row, axis    string
		recompute    string
		modules      []string // nil: the row's own
		otherModules []string
		want         float64 // bytes per step with the module / without
	}{
		{"dgxc-v25.08-deepseek_v3-h100-bf16-1024", "ep", "selective", nil, []string{"mla_up_proj", "mlp"}, 6.0 / 4},
		{"bridge-26.02-llama3.1-405b-gb300-mxfp8-256", "cp", "selective", []string{"core_attn"}, []string{"layernorm"}, 4.0 / 3},
	} {
		rows := calRowsOf(t, c.row)
		if len(rows) != 1 {
			t.Fatalf("%s: got %d rows", c.row, len(rows))
		}
		r := rows[0]
		bytes := func(mods []string) int64 {
			s := *r.s
			s.Train.Recompute = c.recompute
			if mods != nil {
				s.Train.RecomputeModules = mods
			}
			e, _ := Run(&s, r.d, r.links, diag.NoPos)
			return e.Comms[c.axis].BytesPerStep
		}
		with, without := bytes(c.modules), bytes(c.otherModules)
		if got := float64(with) / float64(without); without == 0 || math.Abs(got/c.want-1) > 1e-6 {
			t.Errorf("%s: %s bytes per step %d with the module, %d without: ratio %.4f, want %.4f", c.row, c.axis, with, without, got, c.want)
		}
	}
}
