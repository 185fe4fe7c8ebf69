package solve_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"parc.dev/parc/internal/solve"
)

// hugeOpen is schema-valid and as large as the schema allows where it costs
// the search: 65,536 layers, 4,096 nodes of 1,024 GPUs, the longest
// sequence, and the degrees open. No plan fits, so no bound prunes: before
// the work budget the search estimated every plan, for minutes (tp, pp, cp
// and vpp open: past 100 s, 1 GB).
const hugeOpen = `
model: {name: "huge", layers: 65536, hidden: 1048576, heads: 65536, vocab: 67108864, activation: "swiglu"}
cluster: {nodes: 4096, gpus_per_node: 1024, gpu: {name: "G", memory_gib: 4096, bf16_tflops: 100000}, nvlink_gbps: 100000, network_gbps: 100000}
parallel: {tp: int, pp: int, cp: int, vpp: int}
train: {seq_length: 67108864, micro_batch: 1, global_batch: 1073741824, iters: 10}
`

// TestSearchBudget: a search too large to finish stops at its work budget
// with solve-search-too-large at the first open field, and picks nothing.
func TestSearchBudget(t *testing.T) {
	res := loadText(t, "huge.cue", hugeOpen)
	start := time.Now()
	r, d := failedSearch(t, res)
	t.Logf("%.1f s, %d plans estimated", time.Since(start).Seconds(), r.Evaluated)
	assert.Equal(t, solve.CodeSearchTooLarge, d.Code)
	assert.Equal(t, "parallel.tp", d.Path)
	assert.Equal(t, 4, d.Line, "at the user's parallel.tp")
	assert.Contains(t, d.Message, "65536 layers per plan")
	assert.NotContains(t, d.Hint, "|", "the hint suggests no value it has not checked")
}
