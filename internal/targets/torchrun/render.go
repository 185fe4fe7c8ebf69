package torchrun

import (
	_ "embed"
	"path"
	"strings"

	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/targets/template"
)

// ScriptName is the script's file name, and TemplateName its template
// (torchrun.sh.tmpl).
const (
	ScriptName   = "torchrun.sh"
	TemplateName = ScriptName
)

//go:embed torchrun.sh.tmpl
var builtin string

// Data is what torchrun.sh.tmpl is executed on.
type Data struct {
	Plan *plan.Plan
	// Source is the spec's file name, without directories.
	Source      string
	ScriptName  string
	ArgsFile    string
	Nodes       int
	LastNode    int
	GPUsPerNode int
	World       int
	Env         []megatron.EnvVar
	Python      string
	Program     string
	Workdir     string
	MasterPort  int
	// GraceSeconds is the plan's grace period (Spec.GraceSeconds), given to
	// torchrun as TORCH_ELASTIC_SHUTDOWN_TIMEOUT and to Main.
	GraceSeconds int
	// Main is the Python program that runs torchrun with the grace period.
	Main string
}

// NewData computes the template data of a plan.
func NewData(p *plan.Plan) *Data {
	s := &p.Spec
	d := &Data{
		Plan: p, Source: path.Base(strings.ReplaceAll(p.Source, `\`, "/")), ScriptName: ScriptName,
		ArgsFile: megatron.ArgsFile, Nodes: s.Cluster.Nodes, LastNode: s.Cluster.Nodes - 1,
		GPUsPerNode: s.Cluster.GPUsPerNode, World: s.Cluster.Nodes * s.Cluster.GPUsPerNode,
		Env: megatron.SortedEnv(p), Python: s.Launch.Python, Program: s.Launch.Program,
		MasterPort: s.Launch.MasterPort, GraceSeconds: s.GraceSeconds(), Main: Main,
	}
	if d.Source == "." || d.Source == "/" {
		d.Source = "a spec given in memory"
	}
	if s.Launch.Workdir != nil {
		d.Workdir = *s.Launch.Workdir
	}
	return d
}

// Render renders torchrun.sh with the Set's template (the user's override or
// the built-in one).
func Render(p *plan.Plan, set *template.Set) ([]byte, error) {
	return set.Render(TemplateName, builtin, NewData(p))
}
