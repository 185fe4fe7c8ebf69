package layout

import (
	"slices"
	"strings"
	"testing"

	"parc.dev/parc/internal/spec"
)

// FuzzParseOrder: any string either parses into distinct known axes that
// join back to it, or yields an error.
func FuzzParseOrder(f *testing.F) {
	for _, s := range []string{spec.OrderDefault, spec.OrderPPDP, "", "-", "tp", "tp-tp", "TP-CP", "tp--dp", "gtp_remat-tp", "tp-cp-ep-dp-pp-xx", "dp-pp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		axes, err := ParseOrder(s)
		if axes == nil {
			if err == nil {
				t.Fatalf("%q: nil axes without an error", s)
			}
			return
		}
		if err != nil || strings.Join(axes, "-") != s {
			t.Fatalf("%q: %v %v", s, axes, err)
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
	f.Add(2, 8, 2, 2, 1, 1, 2, spec.OrderDefault)
	f.Add(4, 4, 2, 4, 2, 4, 1, spec.OrderPPDP)
	f.Add(3, 4, 3, 1, 2, 2, 0, "tp-dp-pp")
	f.Add(1, 8, 0, 1, 1, 1, 1, "x")
	f.Add(2, 8, 16, 1, 1, 1, 1, spec.OrderDefault)
	f.Add(-1, 8, 1, 1, 1, 1, 1, spec.OrderDefault)
	f.Fuzz(func(t *testing.T, nodes, gpn, tp, pp, cp, ep, etp int, order string) {
		if nodes > 64 || gpn > 16 {
			return // keep every run small
		}
		l, err := New(Config{Nodes: nodes, GPUsPerNode: gpn, TP: tp, PP: pp, CP: cp, EP: ep, ETP: etp, Order: order})
		if l == nil {
			if err == nil {
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
