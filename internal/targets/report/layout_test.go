package report

import (
	"slices"
	"strings"
	"testing"

	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/spec"
)

func TestLayoutText(t *testing.T) {
	l, _ := layout.New(layout.Config{Nodes: 2, GPUsPerNode: 8, TP: 2, PP: 2, CP: 2, EP: 4, ETP: 1, Order: spec.OrderDefault, TieEmbeddings: true})
	s := LayoutSummary(l)
	for _, name := range layout.FamilyNames {
		if !strings.Contains(s, "\n"+name+" ") {
			t.Errorf("summary lacks %s:\n%s", name, s)
		}
	}
	// tp-pp groups (Example B: [0,1,8,9], ...) all cross the two nodes.
	if !strings.Contains(s, "tp-pp      dense      4      4  network           4             4            2") {
		t.Errorf("tp-pp row:\n%s", s)
	}
	m := NodeMap(l, 1)
	lines := strings.Split(m, "\n")
	// rank, tp, cp, dp, pp and the expert axes ep, edp (etp is 1).
	wantRows := []string{"rank", "tp", "cp", "dp", "pp", "ep", "edp"}
	for i, w := range wantRows {
		fields := strings.Fields(strings.TrimPrefix(lines[i+1], "node 0"))
		if fields[0] != w {
			t.Fatalf("row %d is %q, want %s:\n%s", i, fields[0], w, m)
		}
	}
	if got := strings.Fields(lines[6]); !slices.Equal(got, []string{"ep", "0", "1", "2", "3", "0", "1", "2", "3"}) {
		t.Errorf("ep row %v:\n%s", got, m)
	}
	if !strings.Contains(m, "… 1 more nodes") {
		t.Errorf("no elision line:\n%s", m)
	}
	l, _ = layout.New(layout.Config{Nodes: 36, GPUsPerNode: 4, NVLinkDomain: 72, TP: 4, PP: 2, CP: 1, EP: 1, Order: spec.OrderDefault})
	if m := NodeMap(l, 20); !strings.Contains(m, "node 18 (domain 1)") || !strings.Contains(m, "node 17 (domain 0)") {
		t.Errorf("domains:\n%s", m)
	}
}
