package launchplan

import (
	_ "embed"
	"maps"
	"slices"

	"parc.dev/parc/compiler/layout"
)

// Schema is the JSON Schema (draft 2020-12) of launch.json at Version; its
// $id is SchemaID.
//
//go:embed launch.schema.json
var Schema []byte

// SchemaID is the $id of Schema. It names the format version.
const SchemaID = "https://parc.dev/schema/launch/v1.json"

// Build turns a layout into launch.json: one Node per node with its workers
// (block placement: rank = node·gpus_per_node + local rank, GPU = local
// rank), every group family of the layout, and the environment and command
// every worker gets. env and command are copied. masterPort 0 lets the
// launcher pick its default.
func Build(l *layout.Layout, env Env, command []string, masterPort int) *File {
	f := &File{
		Version:     Version,
		WorldSize:   l.World,
		GPUsPerNode: l.GPUsPerNode,
		Order:       l.Order,
		MasterPort:  masterPort,
		Nodes:       make([]Node, l.Nodes),
		Groups:      l.Groups(),
		Env:         maps.Clone(env),
		Command:     slices.Clone(command),
	}
	if f.Env == nil {
		f.Env = Env{}
	}
	if f.Command == nil {
		f.Command = []string{}
	}
	workers := make([]Worker, l.World)
	for r := range workers {
		p := l.Placement(r)
		workers[r] = Worker{Rank: r, LocalRank: p.LocalRank, GPU: p.GPU}
	}
	for n := range f.Nodes {
		lo := n * l.GPUsPerNode
		f.Nodes[n] = Node{Index: n, Workers: workers[lo : lo+l.GPUsPerNode : lo+l.GPUsPerNode]}
	}
	return f
}
