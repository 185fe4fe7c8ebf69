//go:build linux

package launcher

import (
	"parc.dev/parc/internal/testenv"

	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startLauncherProcess runs Run in a separate process (this test binary in
// launcher mode), as `parc launch` runs, so that real signals can be sent.
func startLauncherProcess(t *testing.T, o childOptions, env []string) (*exec.Cmd, *testenv.SyncBuffer, *testenv.SyncBuffer) {
	t.Helper()
	spec, err := json.Marshal(o)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(env, launcherVar+"="+string(spec))
	var out, errb testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, &out, &errb
}

// The launcher killed with SIGKILL can do nothing, yet leaves no orphan: the
// workers' shims get the parent-death signal and kill every descendant,
// their children included.
func TestLauncherSIGKILLLeavesNoOrphan(t *testing.T) {
	pids := t.TempDir()
	path := writePlan(t, blockPlan(1, 2))
	cmd, _, errb := startLauncherProcess(t, childOptions{Plan: path, NodeRank: intp(0)},
		cleanEnv(workerVar+"=sleep-with-child", "PARC_TEST_PIDDIR="+pids, "CUDA_VISIBLE_DEVICES=0,1"))
	require.True(t, waitFor(20*time.Second, func() bool { return len(readPids(t, pids)) == 4 }), errb.String())
	got := readPids(t, pids)
	for name, pid := range got {
		require.True(t, testenv.PIDAlive(pid), "%s not running before the kill", name)
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	for name, pid := range got {
		assert.True(t, waitFor(5*time.Second, func() bool { return !testenv.PIDAlive(pid) }),
			"%s (pid %d) outlived the SIGKILLed launcher", name, pid)
	}
}

// Issue 12, item 9: the launcher SIGKILLed while a worker's `setsid sleep`
// (its own session and process group, re-parented when its parent exits)
// runs: neither the process-group kill nor the parent-death signal reaches
// it, and once the launcher is gone it is not the launcher's descendant any
// more. The worker's shim, its subreaper, still has it and kills it. Each
// worker leaves two such sleeps, one whose parent (a subshell) has exited
// and one whose parent (the worker) still runs; the sleeps carry a token
// unique to this run, so the check finds exactly them, by command line.
func TestLauncherSIGKILLKillsEscapedGrandchildren(t *testing.T) {
	token := fmt.Sprintf("1000.%d%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	path := writePlan(t, blockPlan(1, 2))
	cmd, _, errb := startLauncherProcess(t, childOptions{Plan: path, NodeRank: intp(0), GraceMS: intp(5000),
		Command: []string{"sh", "-c", "(setsid sleep " + token + " &) ; setsid sleep " + token + " & echo started; wait"}},
		cleanEnv("CUDA_VISIBLE_DEVICES=0,1"))
	require.True(t, waitFor(20*time.Second, func() bool { return len(testenv.Sleepers(token)) == 4 }),
		"%v\n%s", testenv.Sleepers(token), errb.String())
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	assert.True(t, waitFor(5*time.Second, func() bool { return len(testenv.Sleepers(token)) == 0 }),
		"setsid sleeps outlived the SIGKILLed launcher: %v", testenv.Sleepers(token))
	for _, pid := range testenv.Sleepers(token) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Real SIGUSR2 and SIGINT sent to the launcher process reach every worker.
func TestRealSignalsReachEveryWorker(t *testing.T) {
	path := writePlan(t, blockPlan(1, 3))
	cmd, out, errb := startLauncherProcess(t, childOptions{Plan: path, NodeRank: intp(0), GraceMS: intp(5000)},
		cleanEnv(workerVar+"=signals", "CUDA_VISIBLE_DEVICES=0,1,2"))
	require.True(t, waitFor(20*time.Second, func() bool { return strings.Count(out.String(), "ready") == 3 }), errb.String())
	require.NoError(t, cmd.Process.Signal(syscall.SIGUSR2))
	require.True(t, waitFor(10*time.Second, func() bool { return strings.Count(out.String(), "got SIGUSR2") == 3 }), out.String())
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	require.NoError(t, err, errb.String())
	assert.Equal(t, 3, strings.Count(out.String(), "got SIGINT"), out.String())
}

// SIGQUIT stops the job like SIGTERM, as torchrun's agent takes it: the
// workers get it and the grace period, and the launcher reports 128+3.
// Before, Go's default handler dumped the launcher's goroutines and exited 2,
// and the workers died at once through their shims' parent-death signal.
func TestRealSIGQUITStopsGracefully(t *testing.T) {
	path := writePlan(t, blockPlan(1, 2))
	cmd, out, errb := startLauncherProcess(t, childOptions{Plan: path, NodeRank: intp(0), GraceMS: intp(5000)},
		cleanEnv(workerVar+"=signals", "CUDA_VISIBLE_DEVICES=0,1"))
	require.True(t, waitFor(20*time.Second, func() bool { return strings.Count(out.String(), "ready") == 2 }), errb.String())
	require.NoError(t, cmd.Process.Signal(syscall.SIGQUIT))
	err := cmd.Wait()
	assert.Equal(t, 2, strings.Count(out.String(), "got SIGQUIT"), "every worker gets SIGQUIT:\n%s\n%s", out.String(), errb.String())
	assert.Contains(t, errb.String(), "SIGQUIT: forwarding it to every worker")
	assert.NotContains(t, errb.String(), "goroutine ")
	var ee *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &ee)
		t.Errorf("exit %d; the workers saved and exited 0, so the launcher exits 0:\n%s", ee.ExitCode(), errb.String())
	}
}

// SIGTERM to the launcher: workers that do not handle it die of it, their
// children are killed with their process group, and the launcher reports
// 128+15.
func TestLauncherSIGTERMStopsWorkerTrees(t *testing.T) {
	pids := t.TempDir()
	path := writePlan(t, blockPlan(1, 2))
	cmd, _, errb := startLauncherProcess(t, childOptions{Plan: path, NodeRank: intp(0), GraceMS: intp(5000)},
		cleanEnv(workerVar+"=sleep-with-child", "PARC_TEST_PIDDIR="+pids, "CUDA_VISIBLE_DEVICES=0,1"))
	require.True(t, waitFor(20*time.Second, func() bool { return len(readPids(t, pids)) == 4 }), errb.String())
	got := readPids(t, pids)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 143, ee.ExitCode(), errb.String())
	assert.Contains(t, errb.String(), "stopped (SIGTERM)")
	// The launcher has returned: everything it started is already gone.
	for name, pid := range got {
		assert.False(t, testenv.PIDAlive(pid), "%s (pid %d) outlived the launcher", name, pid)
	}
}

// Two launcher processes, one per "node", start exactly the plan's ranks.
func TestTwoNodesTwoLaunchers(t *testing.T) {
	path := writePlan(t, blockPlan(2, 3))
	var outs [2]*testenv.SyncBuffer
	var cmds [2]*exec.Cmd
	for n := range 2 {
		cmds[n], outs[n], _ = startLauncherProcess(t, childOptions{Plan: path, NodeRank: intp(n), MasterAddr: "127.0.0.1"},
			cleanEnv(workerVar+"=env", "PARC_TEST_SHOW=RANK LOCAL_RANK NODE_RANK", "CUDA_VISIBLE_DEVICES=0,1,2"))
	}
	for n := range 2 {
		require.NoError(t, cmds[n].Wait())
	}
	var b bytes.Buffer
	for n := range 2 {
		for _, l := range sortedLines(outs[n].String()) {
			if strings.Contains(l, "RANK=") {
				fmt.Fprintln(&b, l)
			}
		}
	}
	assert.Equal(t, `0: RANK=0 LOCAL_RANK=0 NODE_RANK=0
1: RANK=1 LOCAL_RANK=1 NODE_RANK=0
2: RANK=2 LOCAL_RANK=2 NODE_RANK=0
3: RANK=3 LOCAL_RANK=0 NODE_RANK=1
4: RANK=4 LOCAL_RANK=1 NODE_RANK=1
5: RANK=5 LOCAL_RANK=2 NODE_RANK=1
`, b.String())
}
