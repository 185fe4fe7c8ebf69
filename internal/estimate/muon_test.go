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
// rank's shard, distributed with the Gram matrix over the dimension tensor
// parallelism leaves whole (4096 for every one of these weights: hidden),
// so X·Xᵀ and B·X take the shard and B the whole 4096×4096 Gram matrix
// (newton_schulz_tp, emerging_optimizers v0.3.0). Adam and SGD have no
// such work.
func TestMuonNewtonSchulzWork(t *testing.T) {
	ns := func(m, n float64) float64 { return 5 * 2 * (2*n*m*m + m*m*m) }
	layer := ns(4096, 4096)*2 + ns(1024, 4096)*2 + ns(4096, 28672) + ns(4096, 14336)
	blockwiseTP2 := ns(2048, 4096)*2 + ns(512, 4096)*2 + ns(4096, 14336) + ns(4096, 7168)
	dist := func(gram, shard float64) float64 { return 5 * (4*gram*gram*shard + 2*gram*gram*gram) }
	distributedTP2 := dist(4096, 2048)*2 + dist(4096, 512)*2 + dist(4096, 14336) + dist(4096, 7168)
	for _, tc := range []struct {
		train string
		want  float64
	}{
		{`optimizer: "muon", distributed_optimizer: true`, 32 * layer / 4},
		{`optimizer: "muon", distributed_optimizer: false`, 32 * layer},
		{`optimizer: "muon", distributed_optimizer: true, muon_tp_mode: "blockwise"`, 32 * blockwiseTP2 / 4},
		{`optimizer: "muon", distributed_optimizer: true, muon_tp_mode: "distributed"`, 32 * distributedTP2 / 4},
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
		got, _ := c.muonWork(0, func(string) string { return LinkNVLink })
		if d := got/tc.want - 1; tc.want == 0 && got != 0 || tc.want > 0 && (d > 1e-9 || d < -1e-9) {
			t.Errorf("%s: Newton-Schulz work %g, want %g", tc.train, got, tc.want)
		}
	}
}

// TestMuonTensorParallelCollectives: the collectives of Muon's step with
// tensor parallelism 2 on Llama 3 8B (the weights of
// TestMuonNewtonSchulzWork), each rank stepping a quarter of them (the
// layer-wise distributed optimizer over dp 4). Duplicated all-gathers each
// weight's fp32 momentum, 4·(2·4096² + 2·1024·4096 + 28672·4096 +
// 4096·14336) bytes a layer (Megatron's TensorParallelMuon and
// newton_schulz_tp, emerging_optimizers v0.3.0: torch.distributed.all_gather
// of x, fp32); distributed all-reduces the fp32 squared norm once and the
// bf16 4096×4096 Gram matrix 5 times per weight; blockwise has none.
func TestMuonTensorParallelCollectives(t *testing.T) {
	nvlink := func(string) string { return LinkNVLink }
	load := func(mode string) *costModel {
		s := loadSpecText(t, `
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 1}
parallel: {tp: 2, pp: 1, sp: true}
train: {seq_length: 8192, micro_batch: 1, global_batch: 128, iters: 10, optimizer: "muon", distributed_optimizer: true, muon_tp_mode: "`+mode+`"}
`)
		return newCostModel(s, spec.Derive(s), DefaultOptions())
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if d := got/want - 1; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: %g s, want %g s", what, got, want)
		}
	}
	c := load("duplicated")
	_, got := c.muonWork(0, nvlink)
	var want float64
	for _, w := range [][2]float64{{4096, 4096}, {4096, 4096}, {1024, 4096}, {1024, 4096}, {28672, 4096}, {4096, 14336}} {
		want += c.gatherTime(4*w[0]*w[1], 2, LinkNVLink)
	}
	near("duplicated", got, 32*want/4)

	c = load("distributed")
	_, got = c.muonWork(0, nvlink)
	near("distributed", got, 32*6*(c.allReduceTime(4, 2, LinkNVLink)+5*c.allReduceTime(2*4096*4096, 2, LinkNVLink))/4)

	c = load("blockwise")
	if _, got = c.muonWork(0, nvlink); got != 0 {
		t.Errorf("blockwise: %g s of collectives, want none", got)
	}
}
