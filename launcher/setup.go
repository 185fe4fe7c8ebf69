package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"parc.dev/parc/launcher/hostlist"
	"parc.dev/parc/launchplan"
)

// ExitUsage is the exit code for a usage or preflight error: the plan cannot
// be read, this node does not fit it, or the command cannot be found.
// Nothing has been started when Run returns it.
const ExitUsage = 2

// DefaultMasterPort is used when the plan's master_port is 0 (torchrun's default).
const DefaultMasterPort = launchplan.DefaultMasterPort

// DefaultGrace is how long workers get between SIGTERM and SIGKILL when
// neither --grace nor the plan's grace_seconds says.
const DefaultGrace = 10 * time.Second

// defaultGrace is DefaultGrace; tests lower it.
var defaultGrace = DefaultGrace

// nvidiaSMITimeout bounds the GPU query: a node whose driver hangs fails the
// preflight instead of hanging the job.
const nvidiaSMITimeout = 20 * time.Second

// Options configures one `parc launch` on one node.
type Options struct {
	// PlanPath is launch.json.
	PlanPath string
	// NodeRank is this node's index in the plan; nil means SLURM_NODEID.
	NodeRank *int
	// MasterAddr overrides the plan's master_addr and SLURM_JOB_NODELIST.
	MasterAddr string
	// LogDir, when set, receives one file per rank and attempt
	// (LogDir/attempt-A/rank-R.log, stdout and stderr together) instead of
	// rank-prefixed lines on Stdout and Stderr.
	LogDir string
	// MaxRestarts is how many times this node's workers are restarted after
	// a failure (TORCHELASTIC_MAX_RESTARTS).
	MaxRestarts int
	// Grace is the time between the stop signal and SIGKILL; 0 kills at
	// once, negative is an error. nil means the plan's grace_seconds, else
	// DefaultGrace.
	Grace *time.Duration
	// Command is the worker command; empty means the plan's command.
	Command []string
	// Env is the launcher's environment, inherited by workers; nil means
	// os.Environ(). SLURM_*, CUDA_VISIBLE_DEVICES and PATH are read from it.
	Env []string
	// Stdout and Stderr receive the workers' prefixed output and the
	// launcher's own messages (Stderr); nil means os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// Signals, when set, delivers the signals to forward; when nil Run
	// subscribes to SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 itself.
	Signals <-chan os.Signal
}

// environ is a read-only view of an environment list (last entry wins).
type environ map[string]string

func newEnviron(list []string) environ {
	e := environ{}
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			e[k] = v
		}
	}
	return e
}

func (e environ) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

// nodeSetup is everything this node needs, resolved and checked before any
// worker starts.
type nodeSetup struct {
	plan       *launchplan.File
	planPath   string // absolute
	node       launchplan.Node
	nodeRank   int
	masterAddr string
	masterPort int
	command    []string // command[0] resolved to a path
	gpus       string   // "2 GPUs (CUDA_VISIBLE_DEVICES)" for the start-up line
	warnings   []string
	baseEnv    []string
	env        environ // baseEnv as a map
}

// prepare resolves the node rank, master address, GPU count and command,
// and runs every preflight check. Errors here mean nothing may start.
func prepare(ctx context.Context, opts Options, spawn chan<- spawnRequest) (*nodeSetup, error) {
	base := opts.Env
	if base == nil {
		base = os.Environ()
	}
	env := newEnviron(base)
	if opts.PlanPath == "" {
		return nil, errors.New("no launch plan: pass --plan DIR/launch.json")
	}
	planPath, err := filepath.Abs(opts.PlanPath)
	if err != nil {
		return nil, err
	}
	plan, err := LoadPlan(planPath)
	if err != nil {
		return nil, err
	}
	s := &nodeSetup{plan: plan, planPath: planPath, baseEnv: base, env: env}

	rank, err := nodeRank(opts.NodeRank, env)
	if err != nil {
		return nil, err
	}
	s.nodeRank = rank
	i := slices.IndexFunc(plan.Nodes, func(n launchplan.Node) bool { return n.Index == rank })
	if i < 0 {
		return nil, fmt.Errorf("node rank %d is not in the plan, which has %d nodes (indices %s)",
			rank, len(plan.Nodes), nodeIndices(plan))
	}
	s.node = plan.Nodes[i]
	s.node.Workers = slices.Clone(s.node.Workers)
	slices.SortFunc(s.node.Workers, func(a, b launchplan.Worker) int { return a.LocalRank - b.LocalRank })

	if err := checkSlurm(plan, env); err != nil {
		return nil, err
	}
	if err := s.checkGPUs(ctx, env, spawn); err != nil {
		return nil, err
	}

	s.masterAddr, err = masterAddr(opts.MasterAddr, plan, env)
	if err != nil {
		return nil, err
	}
	s.masterPort = plan.MasterPort
	if s.masterPort == 0 {
		s.masterPort = DefaultMasterPort
	}

	cmd := opts.Command
	if len(cmd) == 0 {
		cmd = plan.Command
	}
	if len(cmd) == 0 {
		return nil, errors.New("no worker command: the plan has no command and none was given after --")
	}
	if cmd[0] == "" {
		return nil, errors.New(`the worker command is empty (""): name the program workers run after --`)
	}
	path, err := lookPath(cmd[0], env)
	if err != nil {
		return nil, err
	}
	s.command = append([]string{path}, cmd[1:]...)
	return s, nil
}

func nodeIndices(plan *launchplan.File) string {
	idx := make([]string, len(plan.Nodes))
	for i, n := range plan.Nodes {
		idx[i] = strconv.Itoa(n.Index)
	}
	return strings.Join(idx, ",")
}

// nodeRank: the flag, else SLURM_NODEID.
func nodeRank(flag *int, env environ) (int, error) {
	if flag != nil {
		if *flag < 0 {
			return 0, fmt.Errorf("--node-rank is %d, it must be 0 or more", *flag)
		}
		return *flag, nil
	}
	v, ok := env.lookup("SLURM_NODEID")
	if !ok {
		return 0, errors.New("no node rank: pass --node-rank N, or run under Slurm (srun sets SLURM_NODEID)")
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("SLURM_NODEID is %q, not a node index", v)
	}
	return n, nil
}

// masterAddr: the flag, else the plan, else the first host of the Slurm
// node list (the step's, which SLURM_NODEID counts in, else the job's), else
// 127.0.0.1 for a one-node plan.
func masterAddr(flag string, plan *launchplan.File, env environ) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if plan.MasterAddr != "" {
		return plan.MasterAddr, nil
	}
	for _, k := range []string{"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"} {
		if v, ok := env.lookup(k); ok && v != "" {
			first, err := hostlist.First(v)
			if err != nil {
				return "", fmt.Errorf("cannot take the master address from %s: %w", k, err)
			}
			return first, nil
		}
	}
	if len(plan.Nodes) == 1 {
		return "127.0.0.1", nil
	}
	return "", fmt.Errorf("no master address for a %d-node plan: pass --master-addr, set master_addr in the plan, or run under Slurm (SLURM_JOB_NODELIST)", len(plan.Nodes))
}

// checkSlurm: under Slurm, the allocation must have the plan's node count,
// and an srun step must run one launcher per node.
func checkSlurm(plan *launchplan.File, env environ) error {
	if v, ok := env.lookup("SLURM_NNODES"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("SLURM_NNODES is %q, not a number", v)
		}
		if n != len(plan.Nodes) {
			return fmt.Errorf("Slurm allocated %d nodes (SLURM_NNODES) but the plan has %d nodes", n, len(plan.Nodes))
		}
	}
	tasks, okT := env.lookup("SLURM_STEP_NUM_TASKS")
	nodes, okN := env.lookup("SLURM_STEP_NUM_NODES")
	if okT && okN && strings.TrimSpace(tasks) != strings.TrimSpace(nodes) {
		return fmt.Errorf("this srun step runs %s tasks on %s nodes, but parc launch must run once per node (srun --ntasks-per-node=1)", tasks, nodes)
	}
	return nil
}

// checkGPUs compares the GPUs this node can use with the plan's
// gpus_per_node. The count comes from nvidia-smi when it is installed,
// narrowed by CUDA_VISIBLE_DEVICES when that is set (nvidia-smi ignores it);
// without nvidia-smi from CUDA_VISIBLE_DEVICES, else SLURM_GPUS_ON_NODE. When
// none is available the check is skipped with a warning.
func (s *nodeSetup) checkGPUs(ctx context.Context, env environ, spawn chan<- spawnRequest) error {
	want := s.plan.GPUsPerNode
	var (
		n      int
		source string
	)
	smi, smiErr := lookPath("nvidia-smi", env)
	switch {
	case smiErr == nil:
		c, err := nvidiaSMICount(ctx, smi, spawn)
		if err != nil {
			return err
		}
		n, source = c, "nvidia-smi"
		if v, ok := env.lookup("CUDA_VISIBLE_DEVICES"); ok {
			visible := visibleDevices(v)
			if visible > c {
				return fmt.Errorf("CUDA_VISIBLE_DEVICES=%q names %d GPUs but nvidia-smi sees %d on this node", v, visible, c)
			}
			n, source = visible, "CUDA_VISIBLE_DEVICES, nvidia-smi sees "+strconv.Itoa(c)
		}
	default:
		if v, ok := env.lookup("CUDA_VISIBLE_DEVICES"); ok {
			n, source = visibleDevices(v), "CUDA_VISIBLE_DEVICES"
		} else if v, ok := env.lookup("SLURM_GPUS_ON_NODE"); ok {
			c, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("SLURM_GPUS_ON_NODE is %q, not a number", v)
			}
			n, source = c, "SLURM_GPUS_ON_NODE"
		} else {
			s.warnings = append(s.warnings, fmt.Sprintf(
				"cannot count this node's GPUs (no nvidia-smi, CUDA_VISIBLE_DEVICES or SLURM_GPUS_ON_NODE); not checking gpus_per_node=%d", want))
			s.gpus = "GPUs not checked"
			return nil
		}
	}
	if n != want {
		return fmt.Errorf("this node has %d GPUs (%s) but the plan needs gpus_per_node=%d", n, source, want)
	}
	s.gpus = fmt.Sprintf("%d GPUs (%s)", n, source)
	return nil
}

// visibleDevices counts the entries of CUDA_VISIBLE_DEVICES. Slurm writes
// "NoDevFiles" when a job has no GPU.
func visibleDevices(v string) int {
	v = strings.TrimSpace(v)
	if v == "" || v == "NoDevFiles" {
		return 0
	}
	return len(strings.Split(v, ","))
}

// lookPath finds a command in the PATH of env (not of the launcher's own
// process, so that Options.Env is honoured).
func lookPath(name string, env environ) (string, error) {
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			return "", fmt.Errorf("worker command %s: %w", name, err)
		}
		return name, nil
	}
	for _, dir := range filepath.SplitList(env["PATH"]) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in PATH", name)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// workerEnv is the environment of one worker: the launcher's own, then the
// plan's env on top, then the launcher's variables.
func (s *nodeSetup) workerEnv(w launchplan.Worker, attempt, maxRestarts int) []string {
	vars := map[string]string{
		"RANK":                         strconv.Itoa(w.Rank),
		"LOCAL_RANK":                   strconv.Itoa(w.LocalRank),
		"WORLD_SIZE":                   strconv.Itoa(s.plan.WorldSize),
		"LOCAL_WORLD_SIZE":             strconv.Itoa(len(s.node.Workers)),
		"NODE_RANK":                    strconv.Itoa(s.nodeRank),
		"GROUP_RANK":                   strconv.Itoa(s.nodeRank),
		"GROUP_WORLD_SIZE":             strconv.Itoa(len(s.plan.Nodes)),
		"ROLE_RANK":                    strconv.Itoa(w.Rank),
		"ROLE_NAME":                    "default",
		"ROLE_WORLD_SIZE":              strconv.Itoa(s.plan.WorldSize),
		"MASTER_ADDR":                  s.masterAddr,
		"MASTER_PORT":                  strconv.Itoa(s.masterPort),
		"TORCHELASTIC_RESTART_COUNT":   strconv.Itoa(attempt),
		"TORCHELASTIC_MAX_RESTARTS":    strconv.Itoa(maxRestarts),
		"TORCHELASTIC_USE_AGENT_STORE": "False", // no agent store: rank 0 hosts the TCPStore
		"PARC_RESTART_ATTEMPT":         strconv.Itoa(attempt),
		"PARC_LAUNCH_PLAN":             s.planPath,
		"PARC_GPU":                     strconv.Itoa(w.GPU),
	}
	over := map[string]string{}
	for k, v := range s.plan.Env {
		over[k] = v
	}
	for k, v := range vars {
		over[k] = v
	}
	// torchrun: OMP_NUM_THREADS=1 when several workers share a node and the
	// user has not chosen.
	if _, set := s.env["OMP_NUM_THREADS"]; !set && len(s.node.Workers) > 1 {
		if _, planSet := over["OMP_NUM_THREADS"]; !planSet {
			over["OMP_NUM_THREADS"] = "1"
		}
	}
	out := make([]string, 0, len(s.baseEnv)+len(over))
	for _, kv := range s.baseEnv {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := over[k]; !replaced {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(over)) {
		out = append(out, k+"="+over[k])
	}
	return out
}
