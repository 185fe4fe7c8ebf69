package estimate

import (
	"testing"

	"parc.dev/parc/internal/spec"
)

// TestMuonNewtonSchulzWork: Muon's step iterates on the 2-D weights of
// Llama 3 8B as its config.json gives them (hidden 4096, 32 query heads
// and 8 key-value heads of 128, MLP 14336 with SwiGLU): per layer a query
// and an output projection of 4096×4096, a key and a value projection of
// 1024×4096 (--muon-split-qkv), fc1 of 28672×4096 and fc2 of 4096×14336,
// at Keller Jordan's count of 2(2nm² + m³) FLOPs per iteration of an m×n
// matrix, m ≤ n (the Muon write-up, "Muon: An optimizer for hidden layers
// in neural networks", 2024), 5 iterations; nothing for the embedding, the
// output layer and the norms (Adam's). The layer-wise distributed optimizer
// steps each weight on one of the dp·cp ranks; duplicated tensor
// parallelism iterates on the whole matrix on every rank, blockwise on the
// rank's shard. Adam and SGD have no such work.
func TestMuonNewtonSchulzWork(t *testing.T) {
	ns := func(m, n float64) float64 { return 5 * 2 * (2*n*m*m + m*m*m) }
	layer := ns(4096, 4096)*2 + ns(1024, 4096)*2 + ns(4096, 28672) + ns(4096, 14336)
	blockwiseTP2 := ns(2048, 4096)*2 + ns(512, 4096)*2 + ns(4096, 14336) + ns(4096, 7168)
	for _, tc := range []struct {
		train string
		want  float64
	}{
		{`optimizer: "muon", distributed_optimizer: true`, 32 * layer / 4},
		{`optimizer: "muon", distributed_optimizer: false`, 32 * layer},
		{`optimizer: "muon", distributed_optimizer: true, muon_tp_mode: "blockwise"`, 32 * blockwiseTP2 / 4},
		{`optimizer: "adam", distributed_optimizer: true`, 0},
		{`optimizer: "sgd", distributed_optimizer: true`, 0},
	} {
		s := loadSpecText(t, `
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 1}
parallel: {tp: 2, pp: 1, sp: true}
train: {seq_length: 8192, micro_batch: 1, global_batch: 128, iters: 10, `+tc.train+`}
`)
		c := newCostModel(s, spec.Derive(s), DefaultOptions())
		got := c.muonStepFLOPs(0)
		if d := got/tc.want - 1; tc.want == 0 && got != 0 || tc.want > 0 && (d > 1e-9 || d < -1e-9) {
			t.Errorf("%s: Newton-Schulz work %g, want %g", tc.train, got, tc.want)
		}
	}
}
