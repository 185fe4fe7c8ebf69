package layout

import (
	"slices"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
)

// FuzzParseOrder: any string either parses into distinct known axes that
// join back to it, or yields only order-* errors on parallel.order.
func FuzzParseOrder(f *testing.F) {
	for _, s := range []string{DefaultOrder, PPDPOrder, "", "-", "tp", "tp-tp", "TP-CP", "tp--dp", "gtp_remat-tp", "tp-cp-ep-dp-pp-xx", "dp-pp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		axes, ds := ParseOrder(s, diag.NoPos)
		if axes == nil {
			if !ds.HasErrors() {
				t.Fatalf("%q: nil axes without an error", s)
			}
			for _, d := range ds {
				if !strings.HasPrefix(d.Code, "order-") || d.Path != "parallel.order" {
					t.Fatalf("%q: %+v", s, d)
				}
			}
			return
		}
		if len(ds) != 0 || strings.Join(axes, "-") != s {
			t.Fatalf("%q: %v %v", s, axes, ds)
		}
		seen := map[string]bool{}
		for _, a := range axes {
			if !slices.Contains(Axes, a) || seen[a] {
				t.Fatalf("%q: bad axis %q", s, a)
			}
			seen[a] = true
		}
	})
}

// FuzzNew: any degrees and order give either a layout whose families
// partition the world, or an error; never a panic.
func FuzzNew(f *testing.F) {
	f.Add(2, 8, 2, 2, 1, 1, 2, DefaultOrder)
	f.Add(4, 4, 2, 4, 2, 4, 1, PPDPOrder)
	f.Add(3, 4, 3, 1, 2, 2, 0, "tp-dp-pp")
	f.Add(1, 8, 0, 1, 1, 1, 1, "x")
	f.Add(2, 8, 16, 1, 1, 1, 1, DefaultOrder)
	f.Add(-1, 8, 1, 1, 1, 1, 1, DefaultOrder)
	f.Fuzz(func(t *testing.T, nodes, gpn, tp, pp, cp, ep, etp int, order string) {
		if nodes > 64 || gpn > 16 {
			return // keep every run small
		}
		l, ds := New(Config{Nodes: nodes, GPUsPerNode: gpn, TP: tp, PP: pp, CP: cp, EP: ep, ETP: etp, Order: order}, diag.NoPos)
		if l == nil {
			if !ds.HasErrors() {
				t.Fatal("no layout and no error")
			}
			return
		}
		for _, fam := range l.Families() {
			seen := make([]bool, l.World)
			n := 0
			for _, g := range fam.Groups() {
				for _, r := range g {
					if r < 0 || r >= l.World || seen[r] {
						t.Fatalf("%s: bad or repeated rank %d", fam.Name, r)
					}
					seen[r] = true
					n++
				}
			}
			if fam.Token != "" && n != l.World {
				t.Fatalf("%s covers %d of %d ranks", fam.Name, n, l.World)
			}
		}
	})
}
