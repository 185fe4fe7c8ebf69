package solve_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/solve"
)

// deepseekFSDPOpen is DeepSeek-V3 written with the contract's fields only on
// 1,024 H100, every degree, the micro batch, recompute and the optimizer
// sharding open: many MoE shapes land within the noise band of the fastest
// and differ only in ep or tp.
const deepseekFSDPOpen = `
model: {name: "deepseek-v3", layers: 61, hidden: 7168, ffn_hidden: 18432, heads: 128, vocab: 129280, max_position_embeddings: 163840, activation: "swiglu", normalization: "rmsnorm", position_embedding: "rope", tie_embeddings: false, bias: false, moe: {experts: 256, topk: 8, ffn_hidden: 2048, shared_ffn_hidden: 2048}}
cluster: {name: "h100", nodes: 128, gpus_per_node: 8, gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}, nvlink_gbps: 450, network_gbps: 50}
parallel: {tp: int, pp: int, vpp: int, cp: int, ep: int, etp: int, account_for_embedding: bool, account_for_loss: bool}
train: {seq_length: 4096, micro_batch: int, global_batch: 16384, precision: "bf16", recompute: string, distributed_optimizer: bool, fsdp: bool, iters: 100}
`

// candidateSimplicity is the noise band's tie-break order as the solve
// command documents it, read from a candidate's own fields: the
// model-parallel group tp·cp·pp, pp, cp, vpp, the split (even, accounted,
// uneven, a layout), ep, tp, etp.
func candidateSimplicity(c solve.Candidate) []int {
	p := c.Parallel
	split := 0
	switch {
	case p.Layout != nil:
		split = 4
	case p.FirstStageLayers != nil || p.LastStageLayers != nil:
		split = 2
	case p.AccountForEmbedding || p.AccountForLoss:
		split = 1
	}
	return []int{p.TP * p.CP * p.PP, p.PP, p.CP, p.VPP, split, p.EP, p.TP, p.ETP}
}

// TestTieBreakReasonNamesTheSimplerEntry: a candidate ranked below the pick
// though its step is shorter (within the noise band, where the simpler plan
// ranks first) says in what the pick is simpler, and that is the first entry
// of the tie-break order, as the solve command documents it, in which the
// two differ; a pick simpler only by its ep or tp is the case to cover.
func TestTieBreakReasonNamesTheSimplerEntry(t *testing.T) {
	words := []string{"a smaller model-parallel group", "fewer pipeline stages", "less context parallelism",
		"fewer virtual stages", "a simpler pipeline split", "a smaller expert-parallel group", "less tensor parallelism",
		"less expert tensor parallelism"}
	checked := make([]int, len(words))
	for _, tc := range []struct {
		name string
		load func(t *testing.T) *load.Result
	}{
		{"deepseek-v3 fsdp open", func(t *testing.T) *load.Result { return loadText(t, "plan.cue", deepseekFSDPOpen) }},
		{"deepseek-v3 acceptance", func(t *testing.T) *load.Result { return loadPath(t, "testdata/acceptance/deepseek-v3-1k.cue") }},
		{"llama3 405b 1k acceptance", func(t *testing.T) *load.Result { return loadPath(t, "testdata/acceptance/llama3-405b-1k.cue") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ds := solve.Solve(tc.load(t), solve.Options{Top: 20})
			require.NotNil(t, r)
			require.False(t, ds.HasErrors(), "%v", ds)
			pick := r.Candidates[0]
			for i, c := range r.Candidates[1:] {
				if c.StepTimeS >= pick.StepTimeS {
					continue
				}
				a, b := candidateSimplicity(pick), candidateSimplicity(c)
				k := 0
				for k < len(a) && a[k] == b[k] {
					k++
				}
				require.Less(t, k, len(a), "rank %d: %s is faster than the pick %s and as simple", i+2, c.Label(), pick.Label())
				assert.True(t, strings.Contains(c.Why, words[k]), "rank %d: %s\nwhy: %s\nwant: %s", i+2, c.Label(), c.Why, words[k])
				assert.NotContains(t, c.Why, "the same shape complexity")
				checked[k]++
			}
		})
	}
	t.Logf("reasons checked, by entry of the tie-break order: %v", checked)
	assert.Positive(t, checked[5], "no candidate was ranked below the pick by its ep alone: the test no longer exercises that entry")
}
