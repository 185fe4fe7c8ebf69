//go:build linux

package launcher

import (
	"parc.dev/parc/internal/testenv"

	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/launchplan"
)

var showVars = "RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK GROUP_WORLD_SIZE " +
	"MASTER_ADDR MASTER_PORT PARC_GPU PARC_TEST_PLAN_VAR TORCHELASTIC_RESTART_COUNT " +
	"TORCHELASTIC_MAX_RESTARTS PARC_RESTART_ATTEMPT OMP_NUM_THREADS"

// Node 1 of a 2×2 plan whose GPUs are given in reverse: the environment of
// each worker comes from the plan, the master address from the first host of
// a real Slurm hostlist.
func TestWorkerEnvironment(t *testing.T) {
	plan := blockPlan(2, 2)
	plan.Nodes[1].Workers = []launchplan.Worker{{Rank: 3, LocalRank: 1, GPU: 0}, {Rank: 2, LocalRank: 0, GPU: 1}}
	path := writePlan(t, plan)
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(1), MaxRestarts: 0,
		Env: cleanEnv(workerVar+"=env", "PARC_TEST_SHOW="+showVars,
			"SLURM_JOB_NODELIST=gpu-[001-004,010],login1", "SLURM_NNODES=2", "CUDA_VISIBLE_DEVICES=0,1"),
	})
	require.NoError(t, r.err, r.stderr)
	require.Equal(t, 0, r.code)
	assert.Equal(t, []string{
		"2: RANK=2 LOCAL_RANK=0 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 NODE_RANK=1 GROUP_RANK=1 GROUP_WORLD_SIZE=2 " +
			"MASTER_ADDR=gpu-001 MASTER_PORT=29512 PARC_GPU=1 PARC_TEST_PLAN_VAR=from-plan " +
			"TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 PARC_RESTART_ATTEMPT=0 OMP_NUM_THREADS=1",
		"2: no newline at the end",
		"3: RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 NODE_RANK=1 GROUP_RANK=1 GROUP_WORLD_SIZE=2 " +
			"MASTER_ADDR=gpu-001 MASTER_PORT=29512 PARC_GPU=0 PARC_TEST_PLAN_VAR=from-plan " +
			"TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 PARC_RESTART_ATTEMPT=0 OMP_NUM_THREADS=1",
		"3: no newline at the end",
	}, sortedLines(r.stdout))
	assert.Contains(t, r.stderr, "2: to stderr\n")
	assert.Contains(t, r.stderr, "3: to stderr\n")
	assert.Contains(t, r.stderr, "parc launch: node 1 of 2: ranks 2,3 of 4, master gpu-001:29512, 2 GPUs (CUDA_VISIBLE_DEVICES)")
}

func TestWorkerEnvironmentPlanPathAndInheritance(t *testing.T) {
	plan := blockPlan(1, 1)
	path := writePlan(t, plan)
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0),
		Env: cleanEnv(workerVar+"=env", "PARC_TEST_SHOW=PARC_LAUNCH_PLAN INHERITED MASTER_ADDR OMP_NUM_THREADS",
			"INHERITED=yes", "PARC_TEST_PLAN_VAR=from-shell", "CUDA_VISIBLE_DEVICES=0"),
	})
	require.NoError(t, r.err, r.stderr)
	// One node: master 127.0.0.1; one worker: OMP_NUM_THREADS untouched.
	assert.Equal(t, "0: PARC_LAUNCH_PLAN="+path+" INHERITED=yes MASTER_ADDR=127.0.0.1 OMP_NUM_THREADS=\n0: no newline at the end\n", r.stdout)
}

func TestPlanEnvOverridesLauncherEnv(t *testing.T) {
	path := writePlan(t, blockPlan(1, 1))
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0),
		Env: cleanEnv(workerVar+"=env", "PARC_TEST_SHOW=PARC_TEST_PLAN_VAR", "PARC_TEST_PLAN_VAR=from-shell", "CUDA_VISIBLE_DEVICES=0"),
	})
	require.NoError(t, r.err)
	assert.Contains(t, r.stdout, "0: PARC_TEST_PLAN_VAR=from-plan\n")
}

func TestCommandAfterDashOverridesPlan(t *testing.T) {
	plan := blockPlan(1, 2)
	plan.Command = []string{"/nonexistent/worker"}
	path := writePlan(t, plan)
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0), Command: []string{"sh", "-c", `echo "rank $RANK args $0"`, "x"},
		Env: cleanEnv("CUDA_VISIBLE_DEVICES=0,1"),
	})
	require.NoError(t, r.err, r.stderr)
	assert.Equal(t, []string{"0: rank 0 args x", "1: rank 1 args x"}, sortedLines(r.stdout))
}

func TestNodeRankFromSlurm(t *testing.T) {
	path := writePlan(t, blockPlan(2, 2))
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path,
		Env: cleanEnv(workerVar+"=env", "PARC_TEST_SHOW=RANK NODE_RANK MASTER_ADDR",
			"SLURM_NODEID=1", "SLURM_NNODES=2", "SLURM_JOB_NODELIST=n[1-2]", "SLURM_STEP_NODELIST=n[3-4]",
			"SLURM_GPUS_ON_NODE=2"),
	})
	require.NoError(t, r.err, r.stderr)
	// The step's node list wins: SLURM_NODEID counts within the step.
	assert.Equal(t, []string{"2: RANK=2 NODE_RANK=1 MASTER_ADDR=n3", "2: no newline at the end",
		"3: RANK=3 NODE_RANK=1 MASTER_ADDR=n3", "3: no newline at the end"}, sortedLines(r.stdout))
}

func TestMasterAddrPrecedence(t *testing.T) {
	two := blockPlan(2, 1)
	withAddr := blockPlan(2, 1)
	withAddr.MasterAddr = "10.0.0.9"
	slurm := newEnviron([]string{"SLURM_JOB_NODELIST=gpu-[007-009]", "SLURM_NODELIST=other1"})
	for _, c := range []struct {
		name, flag string
		plan       *launchplan.File
		env        environ
		want       string
	}{
		{"flag wins", "10.1.1.1", withAddr, slurm, "10.1.1.1"},
		{"plan next", "", withAddr, slurm, "10.0.0.9"},
		{"job node list", "", two, slurm, "gpu-007"},
		{"node list", "", two, newEnviron([]string{"SLURM_NODELIST=login[2-3]"}), "login2"},
		{"one node", "", blockPlan(1, 1), environ{}, "127.0.0.1"},
	} {
		got, err := masterAddr(c.flag, c.plan, c.env)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	_, err := masterAddr("", two, environ{})
	assert.ErrorContains(t, err, "no master address for a 2-node plan")
	_, err = masterAddr("", two, newEnviron([]string{"SLURM_JOB_NODELIST=n[1-"}))
	assert.ErrorContains(t, err, "SLURM_JOB_NODELIST")
}

// Every preflight failure is exit 2 with one message naming both numbers,
// and no worker has started.
func TestPreflightStartsNothing(t *testing.T) {
	bin := t.TempDir()
	fakeSMI := func(name, script string) string {
		dir := filepath.Join(bin, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\n"+script), 0o755))
		return "PATH=" + dir + ":" + os.Getenv("PATH")
	}
	smi8 := fakeSMI("smi8", `[ "$1" = --query-gpu=index ] || exit 7; for i in 0 1 2 3 4 5 6 7; do echo $i; done`)
	smiBroken := fakeSMI("smibroken", "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver' >&2; exit 9")

	envEq := blockPlan(1, 2)
	envEq.Env["RANK=7"] = "x"
	dup := blockPlan(2, 2)
	dup.Nodes[1].Workers[0].Rank = 0
	for _, c := range []struct {
		name  string
		plan  *launchplan.File
		rank  *int
		env   []string
		cmd   []string
		wants []string
	}{
		{"CUDA_VISIBLE_DEVICES", blockPlan(2, 2), intp(0), []string{"CUDA_VISIBLE_DEVICES=0,1,2,3"}, nil,
			[]string{"this node has 4 GPUs (CUDA_VISIBLE_DEVICES) but the plan needs gpus_per_node=2"}},
		{"SLURM_GPUS_ON_NODE", blockPlan(2, 2), intp(0), []string{"SLURM_GPUS_ON_NODE=8"}, nil,
			[]string{"this node has 8 GPUs (SLURM_GPUS_ON_NODE) but the plan needs gpus_per_node=2"}},
		{"nvidia-smi", blockPlan(2, 2), intp(0), []string{smi8}, nil,
			[]string{"this node has 8 GPUs (nvidia-smi) but the plan needs gpus_per_node=2"}},
		{"nvidia-smi narrowed", blockPlan(2, 2), intp(0), []string{smi8, "CUDA_VISIBLE_DEVICES=0,1,2"}, nil,
			[]string{"this node has 3 GPUs (CUDA_VISIBLE_DEVICES, nvidia-smi sees 8) but the plan needs gpus_per_node=2"}},
		{"nvidia-smi broken", blockPlan(2, 2), intp(0), []string{smiBroken}, nil,
			[]string{"nvidia-smi failed", "could not communicate with the NVIDIA driver"}},
		{"no GPUs in Slurm", blockPlan(2, 2), intp(0), []string{"CUDA_VISIBLE_DEVICES=NoDevFiles"}, nil,
			[]string{"this node has 0 GPUs"}},
		{"node not in plan", blockPlan(2, 2), intp(5), []string{"CUDA_VISIBLE_DEVICES=0,1"}, nil,
			[]string{"node rank 5 is not in the plan, which has 2 nodes (indices 0,1)"}},
		{"SLURM_NODEID not in plan", blockPlan(2, 2), nil, []string{"SLURM_NODEID=2", "SLURM_NNODES=2", "CUDA_VISIBLE_DEVICES=0,1"}, nil,
			[]string{"node rank 2 is not in the plan"}},
		{"no node rank", blockPlan(2, 2), nil, []string{"CUDA_VISIBLE_DEVICES=0,1"}, nil,
			[]string{"no node rank: pass --node-rank N"}},
		{"SLURM_NNODES", blockPlan(2, 2), nil, []string{"SLURM_NODEID=0", "SLURM_NNODES=3", "CUDA_VISIBLE_DEVICES=0,1"}, nil,
			[]string{"Slurm allocated 3 nodes (SLURM_NNODES) but the plan has 2 nodes"}},
		{"srun tasks per node", blockPlan(2, 2), nil, []string{"SLURM_NODEID=0", "SLURM_NNODES=2", "SLURM_STEP_NUM_TASKS=4",
			"SLURM_STEP_NUM_NODES=2", "CUDA_VISIBLE_DEVICES=0,1"}, nil,
			[]string{"this srun step runs 4 tasks on 2 nodes", "--ntasks-per-node=1"}},
		{"no master", blockPlan(2, 2), intp(1), []string{"CUDA_VISIBLE_DEVICES=0,1"}, nil,
			[]string{"no master address for a 2-node plan"}},
		{"command not found", blockPlan(1, 2), intp(0), []string{"CUDA_VISIBLE_DEVICES=0,1"}, []string{"no-such-command-parc"},
			[]string{"no-such-command-parc: command not found"}},
		{"empty command", blockPlan(1, 2), intp(0), []string{"CUDA_VISIBLE_DEVICES=0,1"}, []string{"", "x"},
			[]string{`the worker command is empty ("")`}},
		{"env name with =", envEq, intp(0), []string{"CUDA_VISIBLE_DEVICES=0,1"}, nil,
			[]string{`env name "RANK=7" is not a variable name`}},
		{"bad plan", dup, intp(0), []string{"CUDA_VISIBLE_DEVICES=0,1"}, nil,
			[]string{"is not a consistent launch plan:\n  rank 0 is listed on node 0 and on node 1\n  rank 2 is on no node"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pids := t.TempDir()
			path := writePlan(t, c.plan)
			env := cleanEnv(append([]string{workerVar + "=env", "PARC_TEST_PIDDIR=" + pids}, c.env...)...)
			r := runLauncher(t, context.Background(), Options{PlanPath: path, NodeRank: c.rank, Env: env, Command: c.cmd, MasterAddr: ""})
			assert.Equal(t, ExitUsage, r.code)
			require.Error(t, r.err)
			for _, w := range c.wants {
				assert.Contains(t, r.err.Error(), w)
			}
			if c.name != "bad plan" && c.name != "env name with =" { // a plan lists all its problems, one a line
				assert.NotContains(t, r.err.Error(), "\n", "one line")
			}
			assert.Empty(t, readPids(t, pids), "no worker may start")
			assert.Empty(t, r.stdout)
		})
	}
}

func TestNvidiaSMINarrowedByCUDAVisibleDevices(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\nprintf '0\\n1\\n2\\n3\\n'\n"), 0o755))
	path := writePlan(t, blockPlan(1, 2))
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0),
		Env: cleanEnv(workerVar+"=true", "PATH="+dir+":"+os.Getenv("PATH"), "CUDA_VISIBLE_DEVICES=2,3"),
	})
	require.NoError(t, r.err)
	assert.Contains(t, r.stderr, "2 GPUs (CUDA_VISIBLE_DEVICES, nvidia-smi sees 4)")
}

func TestGPUCountUnknownWarns(t *testing.T) {
	path := writePlan(t, blockPlan(1, 2))
	r := runLauncher(t, context.Background(), Options{PlanPath: path, NodeRank: intp(0), Env: cleanEnv(workerVar + "=true")})
	require.NoError(t, r.err)
	assert.Contains(t, r.stderr, "warning: cannot count this node's GPUs")
}

func TestLoadPlanChecksGroups(t *testing.T) {
	f := blockPlan(2, 2)
	f.Groups = launchplan.Groups{"tp": {{0, 1}, {2, 3}}, "dp": {{0, 2}, {1, 7}}}
	data, err := json.Marshal(f)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "launch.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = LoadPlan(path)
	assert.ErrorContains(t, err, "group dp[1] holds rank 7, outside the world of 4")

	require.NoError(t, os.WriteFile(path, []byte(`{"version": 1, "groups": {"tp": [[0, 0.5]]}}`), 0o644))
	_, err = LoadPlan(path)
	assert.ErrorContains(t, err, "groups.tp[0]: a member is not a whole number")
}

func TestFixturesLoad(t *testing.T) {
	matches, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, matches)
	for _, m := range matches {
		_, err := LoadPlan(m)
		assert.NoError(t, err, m)
	}
}

// One worker exits 3: every other worker is gone well within the grace
// period (they die on SIGTERM) and the launcher exits 3.
func TestWorkerFailureStopsEveryWorker(t *testing.T) {
	pids := t.TempDir()
	path := writePlan(t, blockPlan(1, 4))
	grace := 10 * time.Second
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0), Grace: durp(grace),
		Env: cleanEnv(workerVar+"=exit", "PARC_TEST_FAIL_RANK=2", "PARC_TEST_CODE=3",
			"PARC_TEST_PIDDIR="+pids, "CUDA_VISIBLE_DEVICES=0,1,2,3"),
	})
	assert.Equal(t, 3, r.code)
	require.Error(t, r.err)
	assert.Equal(t, "rank 2 exited with code 3 (attempt 1 of 1)", r.err.Error())
	assert.Less(t, r.elapsed, grace)
	assert.Contains(t, r.stderr, "rank 2 (pid")
	assert.Contains(t, r.stderr, "stopping the other 3 workers of this node")
	got := readPids(t, pids)
	assert.Len(t, got, 4)
	for name, pid := range got {
		assert.False(t, testenv.PIDAlive(pid), "%s (pid %d) outlived the launcher", name, pid)
	}
}

// A worker that ignores SIGTERM is SIGKILLed after the grace period.
func TestWorkerIgnoringSIGTERMIsKilled(t *testing.T) {
	pids := t.TempDir()
	path := writePlan(t, blockPlan(1, 3))
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0), Grace: durp(300 * time.Millisecond),
		Env: cleanEnv(workerVar+"=ignore-term", "PARC_TEST_FAIL_RANK=0",
			"PARC_TEST_PIDDIR="+pids, "CUDA_VISIBLE_DEVICES=0,1,2"),
	})
	assert.Equal(t, 3, r.code)
	assert.Contains(t, r.stderr, "2 workers still running after 300ms: SIGKILL")
	assert.Less(t, r.elapsed, 20*time.Second)
	for name, pid := range readPids(t, pids) {
		assert.False(t, testenv.PIDAlive(pid), "%s (pid %d) outlived the launcher", name, pid)
	}
}

func TestWorkerKilledBySignalIsReported(t *testing.T) {
	path := writePlan(t, blockPlan(1, 2))
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0), Grace: durp(time.Second),
		Command: []string{"sh", "-c", `if [ "$RANK" = 1 ]; then kill -SEGV $$; fi; sleep 30`},
		Env:     cleanEnv("CUDA_VISIBLE_DEVICES=0,1"),
	})
	assert.Equal(t, 128+11, r.code)
	assert.EqualError(t, r.err, "rank 1 was killed by SIGSEGV (attempt 1 of 1)")
}

// Signals given to the launcher reach every worker; SIGUSR2 only passes
// through, SIGTERM stops the workers, which here save and exit 0.
func TestSignalsReachEveryWorker(t *testing.T) {
	path := writePlan(t, blockPlan(1, 2))
	sigs := make(chan os.Signal, 1)
	var out testenv.SyncBuffer
	done := make(chan result, 1)
	go func() {
		var errb testenv.SyncBuffer
		code, err := Run(context.Background(), Options{
			PlanPath: path, NodeRank: intp(0), Signals: sigs, Stdout: &out, Stderr: &errb,
			Env: cleanEnv(workerVar+"=signals", "CUDA_VISIBLE_DEVICES=0,1"),
		})
		done <- result{code: code, err: err, stderr: errb.String()}
	}()
	require.True(t, waitFor(10*time.Second, func() bool { return strings.Count(out.String(), "ready") == 2 }), out.String())
	sigs <- sysUSR2
	require.True(t, waitFor(10*time.Second, func() bool { return strings.Count(out.String(), "got SIGUSR2") == 2 }), out.String())
	sigs <- sysTERM
	r := <-done
	assert.Equal(t, 0, r.code, r.stderr)
	assert.NoError(t, r.err)
	assert.Equal(t, []string{"0: got SIGTERM", "0: got SIGUSR2", "0: ready", "1: got SIGTERM", "1: got SIGUSR2", "1: ready"},
		sortedLines(out.String()))
	assert.Contains(t, r.stderr, "SIGTERM: forwarding it to every worker")
}

func TestContextCancelStopsWorkers(t *testing.T) {
	pids := t.TempDir()
	path := writePlan(t, blockPlan(1, 2))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(10*time.Second, func() bool { entries, _ := os.ReadDir(pids); return len(entries) == 2 })
		cancel()
	}()
	r := runLauncher(t, ctx, Options{
		PlanPath: path, NodeRank: intp(0), Grace: durp(5 * time.Second),
		Env: cleanEnv(workerVar+"=exit", "PARC_TEST_FAIL_RANK=-1", "PARC_TEST_PIDDIR="+pids, "CUDA_VISIBLE_DEVICES=0,1"),
	})
	assert.Equal(t, 128+15, r.code)
	assert.ErrorContains(t, r.err, "stopped (context canceled)")
	assert.Contains(t, r.err.Error(), "was killed by SIGTERM")
}

func TestRestarts(t *testing.T) {
	path := writePlan(t, blockPlan(1, 2))
	env := cleanEnv(workerVar+"=restart", "PARC_TEST_FAIL_RANK=0", "PARC_TEST_OK_ATTEMPT=2", "CUDA_VISIBLE_DEVICES=0,1")

	r := runLauncher(t, context.Background(), Options{PlanPath: path, NodeRank: intp(0), MaxRestarts: 2, Grace: durp(5 * time.Second), Env: env})
	assert.Equal(t, 0, r.code, r.stderr)
	assert.NoError(t, r.err)
	// Rank 1 may be stopped before it prints in the failing attempts.
	for _, line := range []string{"0: attempt 0/2 restart_count=0", "0: attempt 1/2 restart_count=1", "0: attempt 2/2 restart_count=2", "1: attempt 2/2 restart_count=2"} {
		assert.Equal(t, 1, strings.Count(r.stdout, line), "%q in\n%s", line, r.stdout)
	}
	assert.Contains(t, r.stderr, "restarting this node's workers (restart 1 of 2)")
	assert.Contains(t, r.stderr, "restarting this node's workers (restart 2 of 2)")

	r = runLauncher(t, context.Background(), Options{PlanPath: path, NodeRank: intp(0), MaxRestarts: 1, Grace: durp(5 * time.Second), Env: env})
	assert.Equal(t, 5, r.code)
	assert.EqualError(t, r.err, "rank 0 exited with code 5 (attempt 2 of 2)")
}

func TestLogDir(t *testing.T) {
	logs := filepath.Join(t.TempDir(), "logs")
	path := writePlan(t, blockPlan(1, 2))
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0), LogDir: logs,
		Env: cleanEnv(workerVar+"=env", "PARC_TEST_SHOW=RANK", "CUDA_VISIBLE_DEVICES=0,1"),
	})
	require.NoError(t, r.err)
	assert.Empty(t, r.stdout)
	for _, rank := range []string{"0", "1"} {
		data, err := os.ReadFile(filepath.Join(logs, "attempt-0", "rank-"+rank+".log"))
		require.NoError(t, err)
		assert.Contains(t, string(data), "RANK="+rank+"\n")
		assert.Contains(t, string(data), "to stderr\n")
	}

	// A failure shows the end of the failing rank's log.
	r = runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0), LogDir: logs, Grace: durp(5 * time.Second),
		Command: []string{"sh", "-c", `if [ "$RANK" = 1 ]; then echo "Traceback: boom"; exit 4; fi; sleep 30`},
		Env:     cleanEnv("CUDA_VISIBLE_DEVICES=0,1"),
	})
	assert.Equal(t, 4, r.code)
	assert.Contains(t, r.stderr, "last lines of "+filepath.Join(logs, "attempt-0", "rank-1.log")+":\n  Traceback: boom")
}

func TestPrefixedOutput(t *testing.T) {
	var out testenv.SyncBuffer
	o := newOutput(&out, &out)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	long := strings.Repeat("x", 100<<10)
	go func() {
		w.WriteString("one\ntwo\n" + long + "\nlast")
		w.Close()
	}()
	var wg waitGroup
	wg.Add(1)
	o.copyLines(&o.stdout, []byte(" 7: "), r, &wg.WaitGroup)
	assert.Equal(t, " 7: one\n 7: two\n 7: "+long+"\n 7: last\n", out.String())
}

// A signal during the teardown after a failure kills at once and prevents
// the restart.
func TestSignalDuringTeardownPreventsRestart(t *testing.T) {
	path := writePlan(t, blockPlan(1, 2))
	sigs := make(chan os.Signal, 1)
	var errb testenv.SyncBuffer
	done := make(chan result, 1)
	go func() {
		code, err := Run(context.Background(), Options{
			PlanPath: path, NodeRank: intp(0), Signals: sigs, Stdout: &testenv.SyncBuffer{}, Stderr: &errb,
			Grace: durp(time.Minute), MaxRestarts: 3,
			Env: cleanEnv(workerVar+"=ignore-term", "PARC_TEST_FAIL_RANK=0", "CUDA_VISIBLE_DEVICES=0,1"),
		})
		done <- result{code: code, err: err}
	}()
	require.True(t, waitFor(20*time.Second, func() bool { return strings.Contains(errb.String(), "stopping the other 1 worker of") }), errb.String())
	sigs <- sysTERM
	select {
	case r := <-done:
		assert.Equal(t, 3, r.code)
		assert.EqualError(t, r.err, "rank 0 exited with code 3 (attempt 1 of 4)")
		assert.Contains(t, errb.String(), "SIGTERM while stopping: killing every worker now")
		assert.NotContains(t, errb.String(), "restarting")
	case <-time.After(30 * time.Second):
		t.Fatalf("the launcher waited for the grace period:\n%s", errb.String())
	}
}

// A command that passes the preflight but cannot be executed: exit 2 and
// nothing left running.
func TestStartFailure(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "not-a-program")
	require.NoError(t, os.WriteFile(bad, []byte{0x7f, 'E', 'L', 'F', 0, 1, 2}, 0o755))
	path := writePlan(t, blockPlan(1, 2))
	r := runLauncher(t, context.Background(), Options{
		PlanPath: path, NodeRank: intp(0), Command: []string{bad}, Env: cleanEnv("CUDA_VISIBLE_DEVICES=0,1"),
	})
	assert.Equal(t, ExitUsage, r.code)
	assert.ErrorContains(t, r.err, "cannot start rank 0: fork/exec "+bad+": exec format error")
}
