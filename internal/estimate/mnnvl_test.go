package estimate

import (
	"math"
	"testing"
)

// TestMultiNodeNVLinkDataParallel checks the data-parallel collectives of a
// group that spans several NVL72 racks against two measured runs.
//
// With multi-node NVLink, NCCL's local level is the NVLink clique, not the
// host (src/graph/topo.cc, ncclTopoGetSystem, NVIDIA/nccl 5067397c), so the
// members of a data-parallel group inside one GB200 rack share its NVLink and
// each carries only 1/k of what crosses to the other rack. Counting the
// 4-GPU tray as the local level instead sends half of every FSDP gather over
// the NICs.
//
// The truth is two published runs of one plan: Llama 3.1 405B, Megatron-FSDP
// at tp 2, 64-way across two racks of 128 GB200 GPUs, GBS 64
// (testdata/measured/runs.jsonl; Megatron-Bridge 25.09 with 95 layers'
// activations offloaded, 729 tokens/s/GPU; NeMo 25.07, 706). Counted per
// tray they came out at −51% and −64%.
func TestMultiNodeNVLinkDataParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("loads measured runs")
	}
	ids := []string{"bridge-25.09-llama3.1-405b-gb200-fp8-cs-128", "nemo-25.07-llama3.1-405b-gb200-fp8-128"}
	cal := DefaultCalibration()
	for _, row := range calRowsOf(t, ids...) {
		if row.links["dp"] != LinkNetwork {
			t.Fatalf("%s: the data-parallel group should span two NVLink domains, links %v", row.id, row.links)
		}
		est := row.estimated(cal)
		if e := est/row.measured - 1; math.Abs(e) > 0.15 {
			t.Errorf("%s: estimated %.0f tokens/s/GPU, measured %.0f (%+.1f%%; bound ±15%%)", row.id, est, row.measured, 100*e)
		}
	}
}
