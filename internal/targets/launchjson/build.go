package launchjson

import (
	"maps"
	"slices"

	"parc.dev/parc/internal/layout"
	"parc.dev/parc/launchplan"
)

// Build turns a layout into launch.json: one Node per node with its workers
// (block placement: rank = node·gpus_per_node + local rank, GPU = local
// rank), every group family of the layout, and the environment and command
// every worker gets. env and command are copied. masterPort 0 lets the
// launcher pick its default.
func Build(l *layout.Layout, env launchplan.Env, command []string, masterPort int) *launchplan.File {
	f := &launchplan.File{
		Version:     launchplan.Version,
		WorldSize:   l.World,
		GPUsPerNode: l.GPUsPerNode,
		Order:       l.Order,
		MasterPort:  masterPort,
		Nodes:       make([]launchplan.Node, l.Nodes),
		Groups:      l.Groups(),
		Env:         maps.Clone(env),
		Command:     slices.Clone(command),
	}
	if f.Env == nil {
		f.Env = launchplan.Env{}
	}
	if f.Command == nil {
		f.Command = []string{}
	}
	workers := make([]launchplan.Worker, l.World)
	for r := range workers {
		p := l.Placement(r)
		workers[r] = launchplan.Worker{Rank: r, LocalRank: p.LocalRank, GPU: p.GPU}
	}
	for n := range f.Nodes {
		lo := n * l.GPUsPerNode
		f.Nodes[n] = launchplan.Node{Index: n, Workers: workers[lo : lo+l.GPUsPerNode : lo+l.GPUsPerNode]}
	}
	return f
}
