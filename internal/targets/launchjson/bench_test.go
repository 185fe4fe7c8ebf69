package launchjson

import (
	"parc.dev/parc/launchplan"
	"testing"

	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/spec"
)

// Benchmark configurations: 8-GPU nodes, default order.
var (
	bench1k   = layout.Config{Nodes: 128, GPUsPerNode: 8, TP: 8, PP: 4, CP: 1, EP: 8, Order: spec.OrderDefault, TieEmbeddings: true}
	bench16k  = layout.Config{Nodes: 2048, GPUsPerNode: 8, TP: 8, PP: 8, CP: 2, EP: 8, Order: spec.OrderDefault, TieEmbeddings: true}
	bench131k = layout.Config{Nodes: 16384, GPUsPerNode: 8, TP: 8, PP: 16, CP: 2, EP: 16, Order: spec.OrderDefault, TieEmbeddings: true}
)

// benchLayout measures the whole layout stage plus launch.json: New (groups
// and per-family link summaries), Build (every group materialised, every
// worker) and Encode (the bytes written to disk).
func benchLayout(b *testing.B, c layout.Config) {
	b.ReportAllocs()
	var size int
	for b.Loop() {
		l, ds := layout.New(c)
		if l == nil {
			b.Fatal(ds)
		}
		size = len(launchplan.Encode(Build(l, launchplan.Env{"NCCL_DEBUG": "WARN"}, []string{"python3", "pretrain_gpt.py"}, 29500)))
	}
	b.ReportMetric(float64(size), "bytes/file")
}

func BenchmarkLayout1k(b *testing.B)   { benchLayout(b, bench1k) }
func BenchmarkLayout16k(b *testing.B)  { benchLayout(b, bench16k) }
func BenchmarkLayout131k(b *testing.B) { benchLayout(b, bench131k) }
