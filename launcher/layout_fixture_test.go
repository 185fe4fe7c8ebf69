//go:build linux

package launcher

import (
	"fmt"

	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/targets/launchjson"
	"parc.dev/parc/launchplan"
)

// fixtureLayouts are the degrees each hand-written fixture encodes.
var fixtureLayouts = map[string]layout.Config{
	"plan-2x2-tp2-dp2.json":          {Nodes: 2, GPUsPerNode: 2, TP: 2, PP: 1, CP: 1, EP: 1, Order: "tp-cp-ep-dp-pp", TieEmbeddings: true},
	"plan-2x2-tp2-pp2.json":          {Nodes: 2, GPUsPerNode: 2, TP: 2, PP: 2, CP: 1, EP: 1, Order: "tp-cp-ep-dp-pp", TieEmbeddings: true},
	"plan-2x4-tp2-pp2-dp2-ppdp.json": {Nodes: 2, GPUsPerNode: 4, TP: 2, PP: 2, CP: 1, EP: 1, Order: "tp-cp-ep-pp-dp", TieEmbeddings: true},
}

func buildFixture(c layout.Config) (*launchplan.File, error) {
	l, ds := layout.New(c)
	if ds != nil {
		return nil, fmt.Errorf("%v", ds)
	}
	return launchjson.Build(l, nil, nil, 0), nil
}
