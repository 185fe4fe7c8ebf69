package check

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// launchEnv checks the environment the workers start with against the plan
// (C5, and the FSDP side of O4/O5). When the user sets nothing, the launch
// targets export the value the plan needs.
func (c *checker) launchEnv() {
	p, cc := c.s.Parallel, c.s.Cluster.GPU.ComputeCapability
	const name = "CUDA_DEVICE_MAX_CONNECTIONS"
	v, path, set := c.env(name)
	if !set {
		return
	}
	switch fsdp := c.s.FSDP(); {
	case fsdp != "":
		if v == "1" {
			c.report("cuda-max-connections", path, c.anyOf("cuda-max-connections", path,
				setOpt(setting{path, nil}), setOpt(setting{path, "8"}).note("CUDA's default")),
				"%s=1 but %s needs more than one connection (Megatron asserts CUDA_DEVICE_MAX_CONNECTIONS != 1)", name, fsdp)
		}
	case c.s.NeedsSerialCUDAConnections():
		if v != "1" {
			c.report("cuda-max-connections", path, c.anyOf("cuda-max-connections", path,
				setOpt(setting{path, "1"}), setOpt(setting{path, nil}).note("parc exports 1")),
				"%s=%q but tp=%d, cp=%d on compute capability %.1f (before Blackwell) needs %s=1", name, v, p.TP, p.CP, cc, name)
		}
	}
}

var (
	slurmMemRE = regexp.MustCompile(`^[0-9]+[KMGTkmgt]?$`)
	digitsRE   = regexp.MustCompile(`^[0-9]+$`)
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ReservedEnv are the variables the launch scripts (submit.sbatch,
// torchrun.sh) and parc launch set or read from the plan; the spec's
// environment may not set them. TORCH_ELASTIC_SHUTDOWN_TIMEOUT is the grace
// period torchrun gets from launch.grace_seconds; PARC_LAUNCH_SHIM marks
// parc launch's worker shim (launcher/shim_linux.go).
// bashReadOnly are the variables bash makes read-only: the launch scripts'
// `export NAME=value` of one fails, and under `set -e` stops the script
// before any worker starts (bash 5.2: "UID: readonly variable").
var bashReadOnly = []string{"BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "SHELLOPTS", "UID"}

var ReservedEnv = []string{"MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "PARC_PLAN_DIR",
	"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "PARC_LAUNCH_SHIM"}

// searchPathUsable reports whether a PATH the spec sets still finds the
// launch scripts' own commands: it names /usr/bin or /bin and expands
// nothing (the scripts export it single-quoted, parc launch as is).
func searchPathUsable(path string) bool {
	if strings.Contains(path, "$") {
		return false
	}
	dirs := strings.Split(path, ":")
	return slices.Contains(dirs, "/usr/bin") || slices.Contains(dirs, "/bin") ||
		slices.Contains(dirs, "/usr/bin/") || slices.Contains(dirs, "/bin/")
}

// launchValues reports what the launch scripts cannot express: environment
// names that are not shell variable names or that the scripts set
// themselves, values with a NUL (no environment holds one) or a line break
// where one cannot be written (#SBATCH directives), and an empty or
// unusable program to run.
func (c *checker) launchValues() {
	s := c.s
	for _, src := range []struct {
		path string
		env  map[string]string
	}{{"cluster.env", s.Cluster.Env}, {"launch.env", s.Launch.Env}} {
		// Every reserved name of one block goes together: they share the
		// block's position, so removing one leaves that diagnostic.
		var reserved, readOnly, noNUL []setting
		keys := slices.Sorted(maps.Keys(src.env))
		named := make([]bool, len(keys)) // a name a shell can export
		for i, k := range keys {
			named[i] = envNameRE.MatchString(k)
		}
		for i, k := range keys {
			switch {
			case !named[i]:
			case slices.Contains(bashReadOnly, k):
				readOnly = append(readOnly, setting{src.path + "." + k, nil})
			case slices.Contains(ReservedEnv, k):
				reserved = append(reserved, setting{src.path + "." + k, nil})
			case strings.ContainsRune(src.env[k], 0):
				noNUL = append(noNUL, setting{src.path + "." + k, strings.ReplaceAll(src.env[k], "\x00", "")})
			}
		}
		for i, k := range keys {
			switch {
			case !named[i]:
				c.report("env-name", src.path, "use letters, digits and _ (not starting with a digit)",
					"%q is not an environment variable name a shell can export", k)
			case slices.Contains(bashReadOnly, k):
				c.report("env-name", src.path, c.anyOf("env-name", src.path, setOpt(readOnly...))+" (read-only in bash)",
					"%s is read-only in bash: the launch scripts' export of it fails and stops them before any worker starts", k)
			case slices.Contains(ReservedEnv, k):
				c.report("env-reserved", src.path, c.anyOf("env-reserved", src.path, setOpt(reserved...))+
					" (the launch scripts set "+strings.Join(ReservedEnv, ", ")+")",
					"%s is set by the launch scripts from the plan", k)
			case strings.ContainsRune(src.env[k], 0):
				c.report("env-value", src.path, "remove the NUL character: "+c.anyOf("env-value", src.path, setOpt(noNUL...)),
					"the value of %s contains a NUL character, which no environment can hold", k)
			case k == "PATH" && !searchPathUsable(src.env[k]):
				c.report("env-path", src.path, c.anyOf("env-path", src.path, setOpt(setting{src.path + ".PATH", nil}))+
					", or write the whole search path (with /usr/bin and the directory that holds torchrun)",
					"PATH %q replaces the search path the launch scripts and workers run with: it is written as is ($PATH is not expanded) and must name /usr/bin or /bin", src.env[k])
			}
		}
	}
	if sl := s.Cluster.Slurm; sl != nil {
		for _, f := range []struct {
			path string
			v    *string
		}{
			{"job_name", sl.JobName}, {"partition", sl.Partition}, {"account", sl.Account}, {"qos", sl.QOS},
			{"time", sl.Time}, {"constraint", sl.Constraint}, {"reservation", sl.Reservation}, {"mem", sl.Mem},
			{"output", sl.Output}, {"error", sl.Error}, {"dependency", sl.Dependency},
		} {
			if f.v != nil && strings.ContainsAny(*f.v, "\n\r\x00") {
				path := "cluster.slurm." + f.path
				c.report("slurm-line-break", path, "remove the line break: "+c.anyOf("slurm-line-break", path, setOpt(setting{path, oneLine(*f.v)})),
					"%q cannot be written in an #SBATCH directive: it contains a line break", *f.v)
			}
		}
	}
	if s.Cluster.Slurm == nil || s.Cluster.Slurm.JobName == nil {
		if strings.ContainsAny(s.Model.Name, "\n\r\x00") {
			c.report("slurm-line-break", "model.name", "remove the line break: "+c.anyOf("slurm-line-break", "model.name",
				setOpt(setting{"model.name", oneLine(s.Model.Name)}), setOpt(setting{"cluster.slurm.job_name", oneLine(s.Model.Name)})),
				"the model name %q is the job name and cannot be written in an #SBATCH directive: it contains a line break", s.Model.Name)
		}
	}
	for _, f := range []struct{ path, v, def string }{
		{"launch.python", s.Launch.Python, "python3"}, {"launch.program", s.Launch.Program, "pretrain_gpt.py"},
		{"launch.parc_binary", s.Launch.ParcBinary, "parc"},
	} {
		if strings.ContainsRune(f.v, 0) || f.v == "" {
			// The schema's default (python3, pretrain_gpt.py, parc) is a
			// program that exists; the name without its NULs is the one
			// the user wrote. Both verified.
			opts := []option{setOpt(setting{f.path, f.def}).note("the schema's default")}
			if v := strings.ReplaceAll(f.v, "\x00", ""); v != "" {
				opts = append([]option{setOpt(setting{f.path, v})}, opts...)
			}
			c.report("launch-command", f.path, "give a program name or path: "+c.anyOf("launch-command", f.path, opts...), "%s %q cannot be run", f.path, f.v)
		}
	}
	c.optionLikePaths()
}

// optionLikePaths reports the paths and programs the launch scripts and
// Slurm read that start with "-": python would take launch.program "-c" as
// an option, `exec` launch.python, srun launch.parc_binary. (The values parc
// gives Megatron are checked where its arguments are built, megatron.Args.)
func (c *checker) optionLikePaths() {
	s := c.s
	l := &s.Launch
	// set is the field with "./" written before the value.
	type field struct {
		path, v string
		set     setting
	}
	scalar := func(path, v string) field { return field{path, v, setting{path, "./" + v}} }
	fields := []field{scalar("launch.python", l.Python), scalar("launch.program", l.Program), scalar("launch.parc_binary", l.ParcBinary)}
	opt := func(path string, v *string) {
		if v != nil {
			fields = append(fields, scalar(path, *v))
		}
	}
	opt("launch.workdir", l.Workdir)
	opt("launch.templates", l.Templates)
	if ct := l.Container; ct != nil {
		opt("launch.container.workdir", ct.Workdir)
		// The mounts share one position: one hint fixes them all.
		fixed := slices.Clone(ct.Mounts)
		for i, m := range fixed {
			if strings.HasPrefix(m, "-") {
				fixed[i] = "./" + m
			}
		}
		for _, m := range ct.Mounts {
			fields = append(fields, field{"launch.container.mounts", m, setting{"launch.container.mounts", fixed}})
		}
	}
	if sl := s.Cluster.Slurm; sl != nil {
		opt("cluster.slurm.output", sl.Output)
		opt("cluster.slurm.error", sl.Error)
	}
	for _, f := range fields {
		if strings.HasPrefix(f.v, "-") {
			c.report("option-like-path", f.path, "to name a file or directory whose name starts with -, "+c.anyOf("option-like-path", f.path, setOpt(f.set)),
				"%s = %q starts with \"-\": a program it is given to would read it as an option", f.path, f.v)
		}
	}
}

// oneLine is v without line breaks and NULs.
func oneLine(v string) string { return strings.NewReplacer("\n", "", "\r", "", "\x00", "").Replace(v) }

// SlurmTime parses a Slurm time limit (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM,
// D-HH:MM:SS, or infinite/unlimited) into seconds; -1 means no limit.
func SlurmTime(s string) (int, error) {
	switch strings.ToLower(s) {
	case "infinite", "unlimited":
		return -1, nil
	}
	bad := fmt.Errorf("%q is not a Slurm time limit (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)", s)
	days := 0
	rest := s
	if i := strings.IndexByte(s, '-'); i >= 0 {
		if !digitsRE.MatchString(s[:i]) {
			return 0, bad
		}
		days, _ = strconv.Atoi(s[:i])
		rest = s[i+1:]
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 {
		return 0, bad
	}
	n := make([]int, len(parts))
	for i, part := range parts {
		if !digitsRE.MatchString(part) || len(part) > 9 {
			return 0, bad
		}
		n[i], _ = strconv.Atoi(part)
	}
	if rest != s { // D-HH[:MM[:SS]]
		sec := days * 86400
		units := []int{3600, 60, 1}
		for i, v := range n {
			sec += v * units[i]
		}
		return sec, nil
	}
	switch len(n) {
	case 1: // MM
		return n[0] * 60, nil
	case 2: // MM:SS
		return n[0]*60 + n[1], nil
	}
	return n[0]*3600 + n[1]*60 + n[2], nil // HH:MM:SS
}

// grace checks the grace period against the preemption warning and what
// the launcher can give.
func (c *checker) grace() {
	s := c.s
	g := s.GraceSeconds()
	path := "launch.grace_seconds"
	if s.Launch.GraceSeconds == nil {
		path = "launch.launcher"
	}
	// both is the fix when the launcher and the grace period are wrong
	// together (torchrun with a preemption warning above its 30 s).
	both := func(ps int) string {
		if c.acceptsAll("launch-grace", setting{"launch.launcher", "parc"}, setting{"launch.grace_seconds", ps}) {
			return fmt.Sprintf(`set launch.launcher "parc" and grace_seconds to %d`, ps)
		}
		return noValue("launch.grace_seconds")
	}
	if sl := s.Cluster.Slurm; sl != nil && sl.PreemptSignalSeconds != nil && s.Launch.GraceSeconds != nil && g < *sl.PreemptSignalSeconds {
		ps := *sl.PreemptSignalSeconds
		hint := fmt.Sprintf("set grace_seconds to %d", ps)
		if c.acceptsAll("launch-grace", setting{"launch.grace_seconds", nil}) {
			hint += " (or remove launch.grace_seconds: that is the default)"
		}
		if !c.accepts("launch-grace", "launch.grace_seconds", ps) {
			hint = both(ps)
		}
		c.report("launch-grace", path, hint,
			"grace_seconds=%d is shorter than the preemption warning (cluster.slurm.preempt_signal_seconds=%d): workers checkpointing on the warning are SIGKILLed after %d s",
			g, ps, g)
	}
}

// slurm checks the Slurm fields parc writes into the batch script.
func (c *checker) slurm() {
	cl := c.s.Cluster
	sl := cl.Slurm
	if sl == nil {
		return
	}
	limit := -1
	if sl.Time != nil {
		sec, err := SlurmTime(*sl.Time)
		if err != nil {
			c.report("slurm-time", "cluster.slurm.time", "e.g. "+c.anyOf("slurm-time", "cluster.slurm.time",
				setOpt(setting{"cluster.slurm.time", "30"}).note("minutes"), setOpt(setting{"cluster.slurm.time", "04:00:00"}),
				setOpt(setting{"cluster.slurm.time", "2-00:00:00"})), "%v", err)
		} else {
			limit = sec
		}
	}
	if sl.Mem != nil && !slurmMemRE.MatchString(*sl.Mem) {
		c.report("slurm-mem", "cluster.slurm.mem", "e.g. "+c.anyOf("slurm-mem", "cluster.slurm.mem",
			setOpt(setting{"cluster.slurm.mem", "0"}).note("all of the node's memory"), setOpt(setting{"cluster.slurm.mem", "500G"}),
			setOpt(setting{"cluster.slurm.mem", "64000M"})),
			"mem %q is not a Slurm memory size", *sl.Mem)
	}
	sbatchOption := func(opt string) bool {
		return strings.HasPrefix(opt, "-") && strings.TrimLeft(opt, "-") != "" && !strings.ContainsAny(opt, "\n\r")
	}
	// Every contradicting count goes in one hint: they share the position.
	rest := slices.DeleteFunc(slices.Clone(sl.Extra), func(opt string) bool {
		_, _, bad := c.slurmCount(opt)
		return sbatchOption(opt) && bad
	})
	for i, opt := range sl.Extra {
		if !sbatchOption(opt) {
			// "mail-type=END" was meant as --mail-type=END; an entry with
			// a line break or nothing in it can only go. The list is one
			// field: every entry is fixed at once, and verified.
			var fixed, kept []string
			for _, o := range sl.Extra {
				switch {
				case sbatchOption(o):
					fixed, kept = append(fixed, o), append(kept, o)
				case strings.TrimLeft(o, "-") != "" && !strings.ContainsAny(o, "\n\r"):
					fixed = append(fixed, "--"+strings.TrimLeft(o, "-"))
				}
			}
			hint := `write it as "--option=value": ` + c.anyOf("slurm-option", "cluster.slurm.extra",
				setOpt(setting{"cluster.slurm.extra", fixed}), setOpt(setting{"cluster.slurm.extra", kept}).note("without it"))
			if slices.Equal(fixed, kept) {
				// No entry can be rewritten (a line break): the two
				// alternatives would be the same list.
				hint = "remove it: " + c.anyOf("slurm-option", "cluster.slurm.extra", setOpt(setting{"cluster.slurm.extra", kept}))
			}
			c.report("slurm-option", "cluster.slurm.extra", hint, "extra[%d] = %q is not an sbatch option", i, opt)
			continue
		}
		if field, want, bad := c.slurmCount(opt); bad {
			c.report("slurm-nodes", "cluster.slurm.extra", c.anyOf("slurm-nodes", "cluster.slurm.extra",
				setOpt(setting{"cluster.slurm.extra", rest}).note("parc writes it from "+field)),
				"extra[%d] = %q contradicts %s = %d", i, opt, field, want)
		}
	}
	if sl.CPUsPerTask != nil && cl.CPUsPerNode != nil && *sl.CPUsPerTask*cl.GPUsPerNode > *cl.CPUsPerNode {
		hint := fmt.Sprintf("use cpus_per_task ≤ %d", *cl.CPUsPerNode/cl.GPUsPerNode)
		if *cl.CPUsPerNode/cl.GPUsPerNode < 1 || !c.acceptsRange("slurm-cpus", "cluster.slurm.cpus_per_task", 1, *cl.CPUsPerNode/cl.GPUsPerNode) {
			hint = noValue("cluster.slurm.cpus_per_task") + fmt.Sprintf(": cpus_per_node=%d is fewer than one CPU per GPU", *cl.CPUsPerNode)
		}
		c.report("slurm-cpus", "cluster.slurm.cpus_per_task", hint,
			"cpus_per_task=%d × %d tasks per node = %d exceeds cpus_per_node=%d",
			*sl.CPUsPerTask, cl.GPUsPerNode, *sl.CPUsPerTask*cl.GPUsPerNode, *cl.CPUsPerNode).
			Related("cluster.cpus_per_node", "cpus_per_node = %d", *cl.CPUsPerNode)
	}
	c.slurmSegment()
	if ps := sl.PreemptSignalSeconds; ps != nil {
		switch {
		case *ps > 65535:
			top := 65535
			if limit > 0 && limit-1 < top {
				top = limit - 1 // also below the time limit
			}
			hint := fmt.Sprintf("use at most %d", top)
			if top < 1 || !c.acceptsRange("slurm-preempt", "cluster.slurm.preempt_signal_seconds", 1, top) {
				hint = noValue("cluster.slurm.preempt_signal_seconds")
			}
			c.report("slurm-preempt", "cluster.slurm.preempt_signal_seconds", hint,
				"preempt_signal_seconds=%d exceeds Slurm's limit of 65535", *ps)
		case limit > 0 && *ps >= limit:
			hint := fmt.Sprintf("use fewer than %d seconds", limit)
			if !c.acceptsRange("slurm-preempt", "cluster.slurm.preempt_signal_seconds", 1, limit-1) {
				hint = noValue("cluster.slurm.preempt_signal_seconds") + ": raise cluster.slurm.time"
			}
			c.report("slurm-preempt", "cluster.slurm.preempt_signal_seconds", hint,
				"preempt_signal_seconds=%d is not below the time limit %q (%d s)", *ps, *sl.Time, limit).
				Related("cluster.slurm.time", "time = %q", *sl.Time)
		}
	}
}

// slurmSegment checks cluster.slurm.segment (Slurm's --segment, topology/
// block) against the node count and the NVLink domain. Slurm allocates a
// job in whole segments: "If the requested node count (--nodes) is larger
// than the requested segment size, it must also be evenly divisible by the
// segment size. If all nodes fit within a single segment, this option has
// no effect." (SchedMD/slurm doc/man/man1/sbatch.1 at 284c3b95;
// src/plugins/topology/block/eval_nodes_block.c rejects the job). Each
// segment lies in one block (on GB200/GB300 one NVL72 rack), so the
// segments are the NVLink domains the job is sure of; parc's layout and
// estimate take blocks of nvlink_domain consecutive ranks as the domains
// (Slurm's block distribution puts consecutive ranks on consecutive nodes
// of the allocation), which matches only when nvlink_domain is the
// segment's GPUs: Megatron-Bridge's launcher pairs them so
// (scripts/performance/utils/executors.py slurm_executor: --segment 16 on
// 64 four-GPU nodes = 64-GPU domains).
func (c *checker) slurmSegment() {
	cl := c.s.Cluster
	sg := cl.Slurm.Segment
	if sg == nil || *sg < 1 || cl.Nodes <= *sg {
		return
	}
	seg := *sg
	if cl.Nodes%seg != 0 {
		div := c.near("slurm-segment", "cluster.slurm.segment", seg, divisors(cl.Nodes))
		c.report("slurm-segment", "cluster.slurm.segment",
			listHint(fmt.Sprintf("divisors of nodes=%d", cl.Nodes), div, noValue("cluster.slurm.segment")),
			"segment=%d does not divide nodes=%d: Slurm allocates a job in whole segments", seg, cl.Nodes).
			Related("cluster.nodes", "nodes = %d", cl.Nodes)
		return
	}
	if g := seg * cl.GPUsPerNode; g != cl.NVLinkDomain {
		c.report("slurm-segment-domain", "cluster.slurm.segment",
			c.anyOf("slurm-segment-domain", "cluster.slurm.segment", setOpt(setting{"cluster.nvlink_domain", g})),
			"segment=%d keeps %d GPUs together in one block, but parc places NVLink domains of nvlink_domain=%d consecutive ranks",
			seg, g, cl.NVLinkDomain).
			Related("cluster.nvlink_domain", "nvlink_domain = %d", cl.NVLinkDomain)
	}
}

// slurmCount says whether an extra option sets the node, task or GPU count
// to something other than what the cluster says, and which field it
// contradicts.
// GresGPUs is the GPU count of a Slurm --gres value (gpu:N or gpu:type:N),
// as written; ok is false for another resource.
func GresGPUs(val string) (string, bool) {
	g, ok := strings.CutPrefix(val, "gpu:")
	if !ok {
		return "", false
	}
	return g[strings.LastIndexByte(g, ':')+1:], true
}

func (c *checker) slurmCount(opt string) (field string, want int, bad bool) {
	cl := c.s.Cluster
	name, val, hasVal := strings.Cut(opt, "=")
	if !hasVal && strings.HasPrefix(opt, "-N") && len(opt) > 2 {
		name, val, hasVal = "-N", opt[2:], true
	}
	if !hasVal {
		return "", 0, false
	}
	switch name {
	case "--nodes", "-N":
		want, field = cl.Nodes, "cluster.nodes"
	case "--ntasks-per-node", "--gpus-per-node":
		want, field = cl.GPUsPerNode, "cluster.gpus_per_node"
	case "--ntasks":
		want, field = cl.Nodes*cl.GPUsPerNode, "cluster.nodes × gpus_per_node"
	case "--gres":
		g, ok := GresGPUs(val)
		if !ok {
			return "", 0, false
		}
		val, want, field = g, cl.GPUsPerNode, "cluster.gpus_per_node"
	default:
		return "", 0, false
	}
	n, err := strconv.Atoi(val)
	return field, want, err != nil || n != want
}
