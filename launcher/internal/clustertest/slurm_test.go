package clustertest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/targets/launchjson"
	"parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/targets/slurm"
	"parc.dev/parc/internal/targets/template"
	"parc.dev/parc/internal/testenv"
	"parc.dev/parc/launcher/hostlist"
	"parc.dev/parc/launchplan"
)

// launchBinary builds the parc CLI when it has the launch command, else the
// launcher's stand-in with the same flags (launcher/internal/testmain).
func launchBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	parc := filepath.Join(dir, "parc")
	if exec.Command("go", "build", "-o", parc, "parc.dev/parc/cmd/parc").Run() == nil &&
		exec.Command(parc, "launch", "--help").Run() == nil {
		return parc
	}
	stand := filepath.Join(dir, "parc-launch")
	out, err := exec.Command("go", "build", "-o", stand, "parc.dev/parc/launcher/internal/testmain").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Log("cmd/parc has no launch command yet: using launcher/internal/testmain")
	return stand
}

func freePort(t *testing.T) int { return testenv.FreePort(t) }

// job is a compiled plan in a directory, ready for sbatch.
type job struct {
	dir  string
	port int
}

// compileJob compiles the tiny GPT example on 2 nodes × 4 (fake) GPUs,
// tp 2 · pp 2 · dp 2, in `parc launch` mode with the given worker, and
// writes megatron.args, submit.sbatch and launch.json as parc compile does.
func compileJob(t *testing.T, python, program string) job {
	t.Helper()
	bin := launchBinary(t)
	p, diags := compiler.Vet(compiler.Source{Path: "../../../examples/tiny-gpt-local.cue"})
	require.False(t, diags.HasErrors(), "%v", diags)
	s := p.Spec
	s.Cluster.GPUsPerNode = 4
	s.Launch.Launcher, s.Launch.ParcBinary = "parc", bin
	s.Launch.Python, s.Launch.Program = python, program
	s.Launch.MasterPort = freePort(t)
	p, diags = compiler.Resolve(p.Source, &s, diag.NoPos)
	require.False(t, diags.HasErrors(), "%v", diags)

	dir := t.TempDir()
	args, ds := megatron.Args(p, nil)
	require.Empty(t, ds)
	script, err := slurm.Render(p, template.Builtin())
	require.NoError(t, err)
	require.Contains(t, string(script), `"$PARC" launch --plan`)
	lp := launchjson.Build(p.Layout, megatron.Env(p), megatron.Command(p, args), p.Spec.Launch.MasterPort)
	for name, data := range map[string][]byte{
		megatron.ArgsFile: megatron.File(args), slurm.ScriptName: script, slurm.LaunchFile: launchplan.Encode(lp),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	return job{dir: dir, port: s.Launch.MasterPort}
}

// jobResult is how a job ended: its final state, the exit code Slurm
// recorded ("3:0"), the nodes it ran on, in order (Slurm chooses them: a test
// may not assume which), and its output.
type jobResult struct {
	state, exit string
	nodes       []string
	log         string
}

// run submits the job and waits for it.
func (j job) run(t *testing.T) jobResult {
	t.Helper()
	logFile := filepath.Join(j.dir, "job.out")
	sb := exec.Command("sbatch", "--parsable", "--output="+logFile, slurm.ScriptName)
	sb.Dir = j.dir
	out, err := sb.CombinedOutput()
	require.NoError(t, err, "sbatch: %s", out)
	id := strings.TrimSpace(strings.Split(string(out), ";")[0])
	t.Cleanup(func() { _ = exec.Command("scancel", id).Run() })
	start := time.Now()
	r := waitDone(t, id, 150*time.Second)
	t.Logf("job %s %s (exit %s) on %v after %s", id, r.state, r.exit, r.nodes, time.Since(start).Round(100*time.Millisecond))
	data, _ := os.ReadFile(logFile)
	r.log = string(data)
	return r
}

// Real PyTorch through the emitted submit.sbatch: srun starts one launcher
// per node, each starts its 4 gloo workers, and every worker creates every
// group of launch.json and all-reduces in it.
func TestGlooThroughSubmitSbatch(t *testing.T) {
	testenv.NeedSlurm(t)
	python := testenv.Python(t)
	worker, err := filepath.Abs("../../testdata/gloo_worker.py")
	require.NoError(t, err)
	j := compileJob(t, python, worker)
	r := j.run(t)
	log := r.log
	require.Equal(t, "COMPLETED", r.state, "job log:\n%s", log)
	require.Len(t, r.nodes, 2)

	// Each launcher checked the node before starting: Slurm's node count,
	// and 4 GPUs from the allocation. The master is the job's first node,
	// whichever Slurm chose.
	for n := range 2 {
		assert.Contains(t, log, fmt.Sprintf("parc launch: node %d of 2: ranks %s of 8, master %s:%d, 4 GPUs",
			n, []string{"0,1,2,3", "4,5,6,7"}[n], r.nodes[0], j.port))
	}
	plan, err := launchplan.Decode(mustRead(t, filepath.Join(j.dir, slurm.LaunchFile)))
	require.NoError(t, err)
	for _, n := range plan.Nodes {
		for _, w := range n.Workers {
			groups := 0
			for _, fam := range plan.Groups {
				for _, g := range fam {
					if slices.Contains(g, w.Rank) {
						groups++
					}
				}
			}
			assert.Contains(t, log, fmt.Sprintf("%d: OK rank=%d node=%d local=%d groups=%d\n",
				w.Rank, w.Rank, n.Index, w.LocalRank, groups))
		}
	}
	assert.NotContains(t, log, "FAIL")
	if t.Failed() {
		js, _ := json.Marshal(plan.Groups)
		t.Logf("groups %s\njob log:\n%s", js, log)
	}
}

// Fault injection across nodes: rank 5 (node 1) exits 3. Its launcher stops
// node 1's other workers and exits 3; srun (--kill-on-bad-exit) then stops
// the step on node 0, whose launcher stops its workers. The job fails in
// seconds, and no worker is left on any node. (srun reports the highest task
// exit code, here node 0's 143 = SIGTERM, as the job's.)
func TestFailFastThroughSubmitSbatch(t *testing.T) {
	testenv.NeedSlurm(t)
	// sleep 1000.<pid><ns>: unique to this run, to find its leftovers even
	// while other runs of this test share the machine.
	marker := fmt.Sprintf("1000.%d%09d", os.Getpid(), time.Now().Nanosecond())
	program := filepath.Join(t.TempDir(), "worker.sh")
	require.NoError(t, os.WriteFile(program, []byte(`if [ "$RANK" = 5 ]; then sleep 1; echo "rank 5 fails"; exit 3; fi
echo "rank $RANK waiting"
exec sleep `+marker+"\n"), 0o755))
	j := compileJob(t, "/bin/sh", program)
	start := time.Now()
	r := j.run(t)
	log := r.log
	assert.Equal(t, "FAILED", r.state, log)
	assert.NotEqual(t, "0:0", r.exit, log)
	require.Len(t, r.nodes, 2, log)
	assert.Less(t, time.Since(start), 60*time.Second)
	assert.Contains(t, log, "parc launch: rank 5 (pid")
	assert.Contains(t, log, "exited with code 3; stopping the other 3 workers of this node")
	assert.Contains(t, log, "parc launch: rank 5 exited with code 3 (attempt 1 of 1)")
	// Task 1 (node 1 of the plan) runs on the job's second node, whichever
	// Slurm chose (issue 12, item 19: n2 only when the cluster is idle).
	assert.Contains(t, log, r.nodes[1]+": task 1: Exited with exit code 3")
	out, _ := exec.Command("pgrep", "-f", "^sleep "+regexp.QuoteMeta(marker)+"$").Output()
	assert.Empty(t, strings.TrimSpace(string(out)), "workers left running after the job:\n%s", log)
}

// waitDone polls the job every 200 ms (sbatch --wait polls every 2 to 32 s)
// and returns its final state (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...),
// exit code ("3:0") and nodes.
func waitDone(t *testing.T, id string, timeout time.Duration) jobResult {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, _ := exec.Command("scontrol", "-o", "show", "job", id).Output()
		var r jobResult
		for _, f := range strings.Fields(string(out)) {
			if v, ok := strings.CutPrefix(f, "JobState="); ok {
				r.state = v
			}
			if v, ok := strings.CutPrefix(f, "ExitCode="); ok {
				r.exit = v
			}
			if v, ok := strings.CutPrefix(f, "NodeList="); ok && v != "(null)" {
				nodes, err := hostlist.Expand(v)
				require.NoError(t, err, "NodeList=%s", v)
				r.nodes = nodes
			}
		}
		switch r.state {
		case "", "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED":
		default:
			return r
		}
		if time.Now().After(deadline) {
			_ = exec.Command("scancel", id).Run()
			t.Fatalf("job %s still running after %s", id, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}
