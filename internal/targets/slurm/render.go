package slurm

import (
	_ "embed"
	"fmt"
	"path"
	"strconv"
	"strings"

	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/targets/template"
	"parc.dev/parc/internal/targets/torchrun"
)

// ScriptName is the batch script's file name, and TemplateName its template
// (submit.sbatch.tmpl).
const (
	ScriptName   = "submit.sbatch"
	TemplateName = ScriptName
	// LaunchFile is the launch plan `parc launch` reads in parc mode.
	LaunchFile = "launch.json"
)

//go:embed submit.sbatch.tmpl
var builtin string

// Directive is one #SBATCH line: Option, and =Value when HasValue.
type Directive struct {
	Option   string
	Value    string
	HasValue bool
}

// Data is what submit.sbatch.tmpl is executed on.
type Data struct {
	Plan *plan.Plan
	// Source is the spec's file name (without directories, so the output
	// does not depend on where the compiler ran).
	Source     string
	ScriptName string
	ArgsFile   string
	LaunchFile string
	Launcher   string // torchrun | srun | parc
	JobName    string
	Nodes      int
	// GPUsPerNode is also the number of workers per node.
	GPUsPerNode int
	World       int
	// TasksPerNode is the Slurm tasks per node: one per GPU with srun, else one.
	TasksPerNode int
	// CPUsPerTask is 0 when neither cluster.slurm.cpus_per_task nor
	// cluster.cpus_per_node is given.
	CPUsPerTask int
	Directives  []Directive
	Env         []megatron.EnvVar
	Python      string
	Program     string
	Workdir     string
	MasterPort  int
	// SrunOptions are the options of the srun that starts the workers beyond
	// the node and task counts: CPUs per task and the pyxis container options.
	SrunOptions []string
	// PreemptSeconds is cluster.slurm.preempt_signal_seconds (0 = no preemption handling).
	PreemptSeconds int
	ParcBinary     string
	// GraceSeconds is the plan's grace period (Spec.GraceSeconds): in
	// launch.json for parc, TORCH_ELASTIC_SHUTDOWN_TIMEOUT and TorchrunMain
	// for torchrun.
	GraceSeconds int
	// TorchrunMain is the Python program that runs torchrun with the grace
	// period (torchrun.Main).
	TorchrunMain string
}

// NewData computes the template data of a plan.
func NewData(p *plan.Plan) *Data {
	s := &p.Spec
	cl, l := &s.Cluster, &s.Launch
	d := &Data{
		Plan: p, Source: path.Base(strings.ReplaceAll(p.Source, `\`, "/")),
		ScriptName: ScriptName, ArgsFile: megatron.ArgsFile, LaunchFile: LaunchFile,
		Launcher: l.Launcher, JobName: s.Model.Name,
		Nodes: cl.Nodes, GPUsPerNode: cl.GPUsPerNode, World: cl.Nodes * cl.GPUsPerNode, TasksPerNode: 1,
		Env: megatron.SortedEnv(p), Python: l.Python, Program: l.Program, MasterPort: l.MasterPort,
		ParcBinary: l.ParcBinary, GraceSeconds: s.GraceSeconds(), TorchrunMain: torchrun.Main,
	}
	if d.Source == "." || d.Source == "/" {
		d.Source = "a spec given in memory"
	}
	if l.Launcher == "srun" {
		d.TasksPerNode = cl.GPUsPerNode
	}
	sl := cl.Slurm
	if sl == nil {
		sl = &specSlurm{Exclusive: true}
	}
	if sl.JobName != nil {
		d.JobName = *sl.JobName
	}
	switch {
	case sl.CPUsPerTask != nil:
		d.CPUsPerTask = *sl.CPUsPerTask
	case cl.CPUsPerNode != nil:
		d.CPUsPerTask = max(1, *cl.CPUsPerNode/d.TasksPerNode)
	}
	if l.Workdir != nil {
		d.Workdir = *l.Workdir
	}
	if sl.PreemptSignalSeconds != nil {
		d.PreemptSeconds = *sl.PreemptSignalSeconds
	}

	add := func(opt, val string) { d.Directives = append(d.Directives, Directive{opt, val, true}) }
	opt := func(name string) {
		if v := stringValue(sl, name); v != nil {
			add(name, *v)
		}
	}
	add("--job-name", d.JobName)
	add("--nodes", strconv.Itoa(d.Nodes))
	add("--ntasks-per-node", strconv.Itoa(d.TasksPerNode))
	add("--gpus-per-node", strconv.Itoa(d.GPUsPerNode))
	if d.CPUsPerTask > 0 {
		add("--cpus-per-task", strconv.Itoa(d.CPUsPerTask))
	}
	opt("--mem")
	opt("--time")
	opt("--partition")
	opt("--account")
	opt("--qos")
	opt("--constraint")
	opt("--reservation")
	if sl.Segment != nil {
		add("--segment", strconv.Itoa(*sl.Segment))
	}
	opt("--dependency")
	if sl.Exclusive {
		d.Directives = append(d.Directives, Directive{Option: "--exclusive"})
	}
	opt("--output")
	opt("--error")
	if sl.Requeue || d.PreemptSeconds > 0 {
		d.Directives = append(d.Directives, Directive{Option: "--requeue"})
		// A requeued job appends to its log instead of truncating it.
		add("--open-mode", "append")
	}
	if d.PreemptSeconds > 0 {
		// B: signals only this script; it forwards SIGTERM to the workers.
		add("--signal", fmt.Sprintf("B:USR2@%d", d.PreemptSeconds))
	}
	for _, e := range sl.Extra {
		d.Directives = append(d.Directives, Directive{Option: e})
	}

	if d.CPUsPerTask > 0 {
		// srun does not inherit --cpus-per-task from sbatch (Slurm 22.05+).
		d.SrunOptions = append(d.SrunOptions, "--cpus-per-task="+strconv.Itoa(d.CPUsPerTask))
	}
	if c := l.Container; c != nil {
		d.SrunOptions = append(d.SrunOptions, "--container-image="+c.Image)
		if len(c.Mounts) > 0 {
			d.SrunOptions = append(d.SrunOptions, "--container-mounts="+strings.Join(c.Mounts, ","))
		}
		switch {
		case c.Workdir != nil:
			d.SrunOptions = append(d.SrunOptions, "--container-workdir="+*c.Workdir)
		case l.Workdir != nil:
			d.SrunOptions = append(d.SrunOptions, "--container-workdir="+*l.Workdir)
		}
	}
	return d
}

// Render renders submit.sbatch with the Set's template (the user's override
// or the built-in one).
func Render(p *plan.Plan, set *template.Set) ([]byte, error) {
	return set.Render(TemplateName, builtin, NewData(p))
}
