package estimate

import (
	"fmt"
	"math"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// TestFSDPCollectivesPerLayer: Megatron-FSDP gathers and reduces the
// parameters one FSDP unit (decoder layer) at a time, whatever the
// data-parallel size: FullyShardedDataParallel makes every TransformerLayer
// and MoETransformerLayer a unit (mcore_fsdp_adapter.py), and
// _get_parameter_groups buckets the parameters by unit, expert or not, with
// the rest (embedding, output layer, final norm) in buckets of their own and
// the buckets of one unit aggregated into one NCCL group
// (param_and_grad_buffer.py at d98e8a64). Megatron's DDP and distributed
// optimizer instead fill buckets of max(40M, 1M·dp·cp) parameters
// (resolve_ddp_bucket_size in training.py). So a fully sharded plan pays one collective's latency
// per layer, microbatch and pass, which grows with the ring of a large
// data-parallel group, and the distributed optimizer one per bucket and step.
func TestFSDPCollectivesPerLayer(t *testing.T) {
	plan := func(layers, nodes int, sharding string) *spec.Spec {
		return loadPlanText(t, fmt.Sprintf(`package plan

import "parc.dev/stdlib/clusters"

model: {layers: %d, hidden: 4096, heads: 32, vocab: 32000, bias: false, moe: {experts: 64, topk: 4, ffn_hidden: 1024}}
cluster: clusters.dgx_h100 & {nodes: %d}
parallel: {tp: 1, pp: 2, ep: 8}
train: {seq_length: 4096, micro_batch: 1, global_batch: %d, precision: "bf16", iters: 10, %s}
`, layers, nodes, 4*nodes*8/2, sharding))
	}
	for _, tc := range []struct {
		name     string
		sharding string
		dense    func(layers, stage int) float64 // collectives of a reduction or gather, dense parameters
		expert   func(layers, stage int) float64
	}{
		{"megatron-fsdp", `fsdp: true`,
			func(l, _ int) float64 { return float64(l/2 + 1) }, // the stage's layers, and the embedding or output layer
			func(l, _ int) float64 { return float64(l / 2) }},
		{"megatron-fsdp optim_grads", `fsdp: true, data_parallel_sharding_strategy: "optim_grads"`,
			func(l, _ int) float64 { return float64(l/2 + 1) },
			func(l, _ int) float64 { return float64(l / 2) }},
		{"distributed optimizer", `distributed_optimizer: true`, nil, nil},
	} {
		for _, layers := range []int{8, 32} {
			s := plan(layers, 64, tc.sharding)
			d := spec.Derive(s)
			c := newCostModel(s, d, resolveOptions(s, DefaultOptions()))
			for r := range c.pp {
				dense, expert := c.stageParams[r].denseExpertPerGPU(int64(c.tp), int64(c.etp), int64(c.ep))
				// Megatron's DDP bucket: max(40M, 1M·dp·cp) parameters,
				// resolved once from the dp·cp group for the dense and the
				// expert buffer alike (training.py resolve_ddp_bucket_size at
				// d98e8a64).
				bucket := math.Max(40e6, 1e6*float64(c.dp*c.cp))
				wantD := math.Max(1, math.Ceil(float64(dense)/bucket))
				wantE := math.Max(1, math.Ceil(float64(expert)/bucket))
				if tc.dense != nil {
					wantD, wantE = tc.dense(layers, r), tc.expert(layers, r)
				}
				if got := c.dataParallelBuckets(float64(dense), r, false); got != wantD {
					t.Errorf("%s, %d layers, stage %d: %g dense collectives, want %g", tc.name, layers, r, got, wantD)
				}
				if got := c.dataParallelBuckets(float64(expert), r, true); got != wantE {
					t.Errorf("%s, %d layers, stage %d: %g expert collectives, want %g", tc.name, layers, r, got, wantE)
				}
			}
		}
	}

	// Eight times the data-parallel GPUs (64 to 512 nodes, the same
	// microbatches per GPU): each of those per-layer collectives becomes a
	// ring of 4,095 steps instead of 511, and the traffic's time grows by
	// that latency for three collectives per layer and microbatch, while its
	// bytes per GPU barely change.
	dpTime := func(nodes int) (float64, spec.Derived, *costModel) {
		s := loadPlanText(t, fmt.Sprintf(`package plan

import "parc.dev/stdlib/clusters"

model: {layers: 32, hidden: 4096, heads: 32, vocab: 32000, bias: false}
cluster: clusters.dgx_h100 & {nodes: %d}
train: {seq_length: 4096, micro_batch: 1, global_batch: %d, precision: "bf16", iters: 10, fsdp: true}
`, nodes, 2*8*nodes))
		d := spec.Derive(s)
		e, _ := RunWith(s, d, DefaultLinks(s, d), diag.NoPos, DefaultOptions())
		return e.Comms["dp"].TimeS, d, newCostModel(s, d, resolveOptions(s, DefaultOptions()))
	}
	small, ds, c := dpTime(64)
	large, dl, _ := dpTime(512)
	l := c.s.Model.Layers
	// NCCL's tuning model of a ring all-gather or reduce-scatter in the
	// Simple protocol over n ranks on n/8 nodes (NVIDIA/nccl 5067397c
	// src/graph/tuning.cc: base 8.4 µs, 14 µs per inter-node step, the
	// other steps at NVLink's 3.4 µs).
	ring := func(n int) float64 {
		nodes := n / 8
		return 8.4e-6 + float64(nodes-1)*14e-6 + float64(n-nodes)*3.4e-6
	}
	want := float64(ds.Microbatches) * 3 * float64(l+1) * (ring(dl.DP) - ring(ds.DP))
	if got := large - small; math.Abs(got-want) > 0.1*want {
		t.Errorf("fsdp over %d and %d GPUs: the data-parallel traffic takes %.3g s and %.3g s, %.3g s more; want about the added latency of 3 collectives per layer and microbatch, %.3g s",
			ds.DP, dl.DP, small, large, got, want)
	}
}
