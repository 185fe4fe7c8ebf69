package compiler

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRankBudgetDoesNotBalanceRouting: a per-rank budget
// (model.moe.expert_rank_capacity_factor) caps the busiest GPU at that many
// times its share but balances nothing, so a plan without a balancing loss,
// expert bias or forced balancing still gets moe-routing-unbounded (its
// estimate a lower bound; MLPerf Training v6.0's GPT-OSS 20B ran so, with
// budgets of 5 and 7), and the message names the cap. A capacity factor,
// which drops what an expert receives beyond it, or forced balancing keeps
// it quiet.
func TestRankBudgetDoesNotBalanceRouting(t *testing.T) {
	base := moe("8", "ep: 8") + "model: moe: router_load_balancing: \"none\"\n"
	warned := func(extra string) (bool, string) {
		_, ds := Vet(Source{Path: "p.cue", Data: []byte(base + extra)})
		for _, d := range ds {
			if d.Code == "moe-routing-unbounded" {
				return true, d.Message
			}
		}
		return false, ""
	}
	ok, msg := warned("model: moe: {dispatcher: \"flex\", flex_dispatcher_backend: \"hybridep\", expert_rank_capacity_factor: 5}\nkernels: use_transformer_engine_op_fuser: true\n")
	assert.True(t, ok)
	assert.Contains(t, msg, "caps a GPU at 5 times its share")
	ok, _ = warned("model: moe: capacity_factor: 1.0\n")
	assert.False(t, ok, "a capacity factor drops the excess")
	ok, _ = warned("model: moe: router_force_load_balancing: true\n")
	assert.False(t, ok, "forced balancing")
}
