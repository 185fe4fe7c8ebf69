package layout

import (
	"testing"

	"parc.dev/parc/internal/spec"
)

// BenchmarkNew131k: the layout stage alone (grids, 16 families, link
// summaries) for 16,384 nodes × 8 GPUs, TP8 CP2 PP16 EP16. launch.json is
// measured in internal/targets/launchjson.
func BenchmarkNew131k(b *testing.B) {
	c := Config{Nodes: 16384, GPUsPerNode: 8, TP: 8, PP: 16, CP: 2, EP: 16, Order: spec.OrderDefault, TieEmbeddings: true}
	b.ReportAllocs()
	for b.Loop() {
		if l, ds := New(c); l == nil {
			b.Fatal(ds)
		}
	}
}
