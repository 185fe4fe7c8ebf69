package slurm_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/targets/launchjson"
	"parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/targets/slurm"
	"parc.dev/parc/internal/targets/template"
	"parc.dev/parc/internal/testenv"
	"parc.dev/parc/launchplan"
)

// The local test cluster (scripts/setup-test-env.sh, scripts/slurm/): nodes
// n1..n4 with 8 CPUs, 16000 MB and 8 (fake) GPUs each; partition gpu has all
// four, partition debug n1 and n2.
const (
	localNodes       = 4
	localGPUsPerNode = 8
	localCPUsPerNode = 8
	localMemMB       = 16000
)

var localPartitions = map[string]int{"gpu": 4, "debug": 2}

// fitsLocalCluster says, from the cluster's configuration alone, whether
// Slurm can ever give the plan's batch script an allocation there.
func fitsLocalCluster(p *plan.Plan) bool {
	c := p.Spec.Cluster
	d := slurm.NewData(p)
	nodes := localNodes
	if sl := c.Slurm; sl != nil {
		if sl.Partition != nil {
			n, ok := localPartitions[*sl.Partition]
			if !ok {
				return false
			}
			nodes = n
		}
		if sl.Constraint != nil || sl.Reservation != nil {
			return false
		}
		if sl.Mem != nil && *sl.Mem != "0" {
			var mb int
			if _, err := fmt.Sscanf(*sl.Mem, "%d", &mb); err != nil || !strings.HasSuffix(*sl.Mem, "M") || mb > localMemMB {
				return false
			}
		}
	}
	return c.Nodes <= nodes && c.GPUsPerNode <= localGPUsPerNode &&
		d.TasksPerNode*max(d.CPUsPerTask, 1) <= localCPUsPerNode
}

// TestSbatchTestOnly asks the real local Slurm whether it would run every
// example's batch script in every launcher mode: the ones that fit the
// cluster must be accepted, the others (and deliberately mismatched ones)
// rejected.
func TestSbatchTestOnly(t *testing.T) {
	testenv.NeedSlurm(t)
	dir := t.TempDir()
	type job struct {
		name string
		p    *plan.Plan
		fits bool
	}
	var jobs []job
	for name, p := range examples(t) {
		for _, l := range launchers {
			s := p.Spec
			s.Launch.Launcher = l
			q := *p
			q.Spec = s
			jobs = append(jobs, job{name + "-" + l, &q, fitsLocalCluster(&q)})
		}
	}
	mismatch := map[string]func(s *spec.Spec){
		"too-many-nodes":    func(s *spec.Spec) { s.Cluster.Nodes, s.Train.GlobalBatch = 5, 40 },
		"too-many-gpus":     func(s *spec.Spec) { s.Cluster.GPUsPerNode = 16; s.Cluster.CPUsPerNode = ptr(16) },
		"no-such-partition": func(s *spec.Spec) { s.Cluster.Slurm.Partition = ptr("nosuch") },
		"debug-too-small":   func(s *spec.Spec) { s.Cluster.Nodes = 4; s.Cluster.Slurm.Partition = ptr("debug") },
		"too-many-cpus": func(s *spec.Spec) {
			s.Cluster.CPUsPerNode, s.Cluster.Slurm.CPUsPerTask, s.Launch.Launcher = nil, ptr(2), "srun"
		},
	}
	for name, edit := range mismatch {
		p := tiny(t, edit)
		require.False(t, fitsLocalCluster(p), name)
		jobs = append(jobs, job{"mismatch-" + name, p, false})
	}
	accepted := 0
	for _, j := range jobs {
		f := filepath.Join(dir, j.name+".sbatch")
		require.NoError(t, os.WriteFile(f, []byte(render(t, j.p)), 0o644))
		out, err := exec.Command("sbatch", "--test-only", f).CombinedOutput()
		if j.fits {
			accepted++
			assert.NoError(t, err, "%s should fit the local cluster: %s", j.name, out)
		} else {
			assert.Error(t, err, "%s should not fit the local cluster: %s", j.name, out)
		}
	}
	assert.Positive(t, accepted, "at least one example fits the local cluster")
}

// --- real jobs ---------------------------------------------------------------

func python(t *testing.T) string { return testenv.Python(t) }

func freePort(t *testing.T) int { return testenv.FreePort(t) }

// hostileName is a job name and directory name that breaks naive quoting.
const hostileName = `x"; rm -rf ~; " $(touch PWNED) 'q' \ ` + "`id`"

// realPlan is the tiny example shrunk to 2 nodes x 2 workers, running the
// worker stand-in from a directory whose name needs quoting. The workers
// write their records into root/results.
func realPlan(t *testing.T, launcher string, edit func(s *spec.Spec)) (*plan.Plan, string) {
	py := python(t)
	root := t.TempDir()
	progDir := filepath.Join(root, `prog dir "q" 'x' $HOME`)
	require.NoError(t, os.MkdirAll(progDir, 0o755))
	worker, err := os.ReadFile("testdata/worker.py")
	require.NoError(t, err)
	program := filepath.Join(progDir, "worker $(touch PWNED).py")
	require.NoError(t, os.WriteFile(program, worker, 0o644))
	results := filepath.Join(root, "results")
	require.NoError(t, os.MkdirAll(results, 0o755))
	p := tiny(t, func(s *spec.Spec) {
		s.Cluster.GPUsPerNode = 2
		s.Cluster.Slurm.JobName = ptr(hostileName)
		s.Cluster.Slurm.Time = ptr("00:05:00")
		s.Cluster.Env = map[string]string{
			"PARC_TEST_ENV":   "PARC_TEST_VALUE,CUDA_DEVICE_MAX_CONNECTIONS,SLURM_JOB_NAME",
			"PARC_TEST_VALUE": hostileName,
			"PARC_TEST_OUT":   results,
		}
		s.Launch.Launcher, s.Launch.Python, s.Launch.Program = launcher, py, program
		s.Launch.MasterPort = freePort(t)
		s.Checkpoint = &spec.Checkpoint{Save: ptr(filepath.Join(root, "ck pt 'x'")), Interval: 5, Format: "torch_dist"}
		if edit != nil {
			edit(s)
		}
	})
	return p, root
}

// compile writes what `parc compile` writes for the scripts into a new
// directory whose name needs quoting, and returns it.
func compile(t *testing.T, p *plan.Plan, root string) (dir string, args []string) {
	dir = filepath.Join(root, `out dir "o" 'p'`)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	args, diags := megatron.Args(p, nil)
	require.Empty(t, diags)
	require.NoError(t, os.WriteFile(filepath.Join(dir, megatron.ArgsFile), megatron.File(args), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, slurm.ScriptName), []byte(render(t, p)), 0o644))
	lp := launchjson.Build(p.Layout, megatron.Env(p), megatron.Command(p, args), p.Spec.Launch.MasterPort)
	require.NoError(t, os.WriteFile(filepath.Join(dir, slurm.LaunchFile), launchplan.Encode(lp), 0o644))
	return dir, args
}

// submit runs sbatch in cwd and returns the job id.
func submit(t *testing.T, cwd string, sbatchArgs ...string) string {
	cmd := exec.Command("sbatch", append([]string{"--parsable"}, sbatchArgs...)...)
	cmd.Dir = cwd
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	id := strings.TrimSpace(strings.Split(string(out), ";")[0])
	t.Cleanup(func() { _ = exec.Command("scancel", id).Run() })
	return id
}

// jobState is the job's state in squeue, "" once it has left the queue.
func jobState(id string) string {
	out, _ := exec.Command("squeue", "-h", "-j", id, "-o", "%T").Output()
	return strings.TrimSpace(string(out))
}

// waitGone waits until the job has left squeue (accounting is off, so
// squeue is all there is), failing after timeout.
func waitGone(t *testing.T, id string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for jobState(id) != "" {
		if time.Now().After(deadline) {
			_ = exec.Command("scancel", id).Run()
			t.Fatalf("job %s still in the queue after %s", id, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitFor waits until n workers wrote a tag record into out.
func waitFor(t *testing.T, out, tag string, n int, timeout time.Duration, log string) {
	deadline := time.Now().Add(timeout)
	for len(records(t, out, tag)) < n {
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(log)
			t.Fatalf("%d %s records after %s:\n%s", len(records(t, out, tag)), tag, timeout, data)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type workerRecord struct {
	Rank       int               `json:"rank"`
	WorldSize  int               `json:"world_size"`
	LocalRank  int               `json:"local_rank"`
	MasterAddr string            `json:"master_addr"`
	MasterPort string            `json:"master_port"`
	Node       string            `json:"node"`
	Sum        float64           `json:"sum"`
	Argv       []string          `json:"argv"`
	Env        map[string]string `json:"env"`
}

// records reads the files the workers wrote into out for tag ("worker",
// "waiting", "checkpoint").
func records(t *testing.T, out, tag string) []workerRecord {
	files, err := filepath.Glob(filepath.Join(out, tag+"-*.json"))
	require.NoError(t, err)
	var recs []workerRecord
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var r workerRecord
		require.NoError(t, json.Unmarshal(data, &r), "%s", data)
		recs = append(recs, r)
	}
	return recs
}

// checkWorkers checks that every rank ran once with the environment the plan
// implies: ranks 0..W-1, node-major (rank = node·G + local rank), all on
// MASTER_ADDR = the first node of the allocation, one all_reduce over all
// of them, the plan's arguments and environment.
func checkWorkers(t *testing.T, p *plan.Plan, results, log string, args []string) {
	recs := records(t, results, "worker")
	out, _ := os.ReadFile(log)
	g, w := p.Spec.Cluster.GPUsPerNode, p.Derived.World
	require.Len(t, recs, w, "%s", out)
	slices.SortFunc(recs, func(a, b workerRecord) int { return a.Rank - b.Rank })
	nodeOf := map[int]string{}
	for i, r := range recs {
		assert.Equal(t, i, r.Rank)
		assert.Equal(t, w, r.WorldSize)
		assert.Equal(t, i%g, r.LocalRank, "rank %d", i)
		assert.Equal(t, fmt.Sprint(p.Spec.Launch.MasterPort), r.MasterPort)
		assert.Equal(t, float64(w*(w+1)/2), r.Sum, "all_reduce over every rank")
		assert.Equal(t, args, r.Argv, "rank %d got megatron.args verbatim", i)
		assert.Equal(t, map[string]string{
			"PARC_TEST_VALUE": hostileName, "CUDA_DEVICE_MAX_CONNECTIONS": "1",
			"SLURM_JOB_NAME": hostileName, // sbatch read the quoted #SBATCH --job-name
		}, r.Env)
		if n, ok := nodeOf[i/g]; ok {
			assert.Equal(t, n, r.Node, "ranks %d..%d share a node", i/g*g, i/g*g+g-1)
		}
		nodeOf[i/g] = r.Node
	}
	assert.Len(t, slices.Compact(slices.Sorted(func(yield func(string) bool) {
		for _, n := range nodeOf {
			if !yield(n) {
				return
			}
		}
	})), p.Spec.Cluster.Nodes, "one node per node index")
	for _, r := range recs {
		assert.Equal(t, nodeOf[0], r.MasterAddr, "MASTER_ADDR is the first host of the allocation (node of rank 0)")
	}
	assert.Contains(t, string(out), "submit.sbatch: job ")
}

// parcBinary builds the parc CLI when it has the launch command.
func parcBinary(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "parc")
	build := exec.Command("go", "build", "-o", bin, "parc.dev/parc/cmd/parc")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("cmd/parc does not build: %s", out)
	}
	if out, err := exec.Command(bin, "launch", "--help").CombinedOutput(); err != nil {
		t.Skipf("parc has no launch command yet: %s", out)
	}
	return bin
}

// TestJobs submits the batch script to the real local Slurm in every
// launcher mode, from the output directory and from elsewhere, and checks
// what every worker received. The job name, the program path, the output
// directory, an environment value and the checkpoint path all need quoting.
func TestJobs(t *testing.T) {
	testenv.NeedSlurm(t)
	cases := []struct {
		name, launcher string
		// how: "cwd" = sbatch run in the output dir; "chdir" = from elsewhere
		// with --chdir; "path" = from elsewhere, found through scontrol.
		how string
	}{
		{"torchrun", "torchrun", "cwd"},
		{"srun", "srun", "chdir"},
		{"srun-from-elsewhere", "srun", "path"},
		{"parc", "parc", "cwd"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var edit func(s *spec.Spec)
			if c.launcher == "parc" {
				bin := parcBinary(t)
				edit = func(s *spec.Spec) { s.Launch.ParcBinary = bin }
			}
			p, root := realPlan(t, c.launcher, edit)
			dir, args := compile(t, p, root)
			elsewhere := t.TempDir()
			logFile := filepath.Join(root, "job.out")
			var id string
			switch c.how {
			case "cwd":
				id = submit(t, dir, "--output="+logFile, slurm.ScriptName)
			case "chdir":
				id = submit(t, elsewhere, "--chdir="+dir, "--output="+logFile, filepath.Join(dir, slurm.ScriptName))
			case "path":
				id = submit(t, elsewhere, "--output="+logFile, filepath.Join(dir, slurm.ScriptName))
			}
			waitGone(t, id, 90*time.Second)
			checkWorkers(t, p, filepath.Join(root, "results"), logFile, args)
			for _, d := range []string{root, dir, elsewhere} {
				assert.NoFileExists(t, filepath.Join(d, "PWNED"), "a quoted value was executed")
			}
		})
	}
}

// TestPreemption checks the SIGUSR2 path of the batch script on the real
// cluster: the script forwards SIGTERM to every worker (they "checkpoint"
// and exit) and requeues the job. The signal is sent with scancel instead of
// waiting for the time limit.
func TestPreemption(t *testing.T) {
	testenv.NeedSlurm(t)
	for _, launcher := range []string{"srun", "torchrun"} {
		t.Run(launcher, func(t *testing.T) {
			t.Parallel()
			p, root := realPlan(t, launcher, func(s *spec.Spec) {
				s.Cluster.Slurm.PreemptSignalSeconds = ptr(60)
				s.Launch.Env = map[string]string{"PARC_TEST_MODE": "preempt"}
			})
			dir, _ := compile(t, p, root)
			logFile := filepath.Join(root, "job.out")
			id := submit(t, dir, "--output="+logFile, slurm.ScriptName)
			w := p.Derived.World
			results := filepath.Join(root, "results")
			waitFor(t, results, "waiting", w, 60*time.Second, logFile)
			out, err := exec.Command("scancel", "--batch", "--signal=USR2", id).CombinedOutput()
			require.NoError(t, err, "%s", out)
			waitFor(t, results, "checkpoint", w, 60*time.Second, logFile)
			// The script requeues the job: it comes back pending (Slurm holds a
			// requeued job back for a while) with a restart count of 1.
			deadline := time.Now().Add(60 * time.Second)
			for {
				show, _ := exec.Command("scontrol", "show", "job", id).Output()
				if strings.Contains(string(show), "Restarts=1") {
					break
				}
				if time.Now().After(deadline) {
					log, _ := os.ReadFile(logFile)
					t.Fatalf("job %s was not requeued:\n%s\n%s", id, show, log)
				}
				time.Sleep(200 * time.Millisecond)
			}
			log, _ := os.ReadFile(logFile)
			assert.Contains(t, string(log), "requeueing job "+id)
			ranks := map[int]bool{}
			for _, r := range records(t, results, "checkpoint") {
				ranks[r.Rank] = true
			}
			assert.Len(t, ranks, w, "every rank checkpointed once")
		})
	}
}

var _ = template.Builtin
