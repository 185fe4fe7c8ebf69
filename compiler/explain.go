package compiler

import (
	"strings"

	"parc.dev/parc/compiler/layout"
	"parc.dev/parc/compiler/plan"
)

// Explain renders the human report of `parc explain`: the estimates, then the
// rank layout (group families, and a node × GPU map of the first nodes).
func Explain(p *plan.Plan, mapNodes int) string {
	var b strings.Builder
	b.WriteString(explainEstimate(p))
	if p.Layout != nil {
		b.WriteString("\nRank layout\n\n")
		b.WriteString(layout.Summary(p.Layout))
		b.WriteString("\n")
		b.WriteString(layout.NodeMap(p.Layout, mapNodes))
	}
	return b.String()
}
