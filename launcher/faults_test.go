//go:build linux

package launcher

import (
	"parc.dev/parc/internal/testenv"

	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 12, item 8: `parc launch ... | head -n 3`. The reader of the
// launcher's stdout goes away after three lines: the launcher must not die of
// SIGPIPE (exit 141, workers SIGKILLed by the parent-death signal); it keeps
// supervising, the workers run to their end, the output is dropped with one
// warning, and the launcher exits with the workers' status.
func TestClosedStdoutKeepsTheJobRunning(t *testing.T) {
	for _, closeStderr := range []bool{false, true} {
		name := "stdout closed"
		if closeStderr {
			name = "stdout and stderr closed"
		}
		t.Run(name, func(t *testing.T) {
			pids := t.TempDir()
			path := writePlan(t, blockPlan(1, 2))
			spec, err := json.Marshal(childOptions{Plan: path, NodeRank: intp(0)})
			require.NoError(t, err)
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(cleanEnv(workerVar+"=chatty", "PARC_TEST_LINES=300", "PARC_TEST_PIDDIR="+pids,
				"CUDA_VISIBLE_DEVICES=0,1"), launcherVar+"="+string(spec))
			outR, outW, err := os.Pipe()
			require.NoError(t, err)
			errR, errW, err := os.Pipe()
			require.NoError(t, err)
			cmd.Stdout, cmd.Stderr = outW, errW
			require.NoError(t, cmd.Start())
			outW.Close()
			errW.Close()
			t.Cleanup(func() { _ = cmd.Process.Kill() })

			// head -n 3
			buf := make([]byte, 0, 4096)
			for strings.Count(string(buf), "\n") < 3 {
				b := make([]byte, 256)
				n, err := outR.Read(b)
				require.NoError(t, err)
				buf = append(buf, b[:n]...)
			}
			outR.Close()
			var stderr []byte
			stderrDone := make(chan struct{})
			if closeStderr {
				errR.Close()
				close(stderrDone)
			} else {
				go func() { stderr, _ = io.ReadAll(errR); close(stderrDone) }()
			}

			err = cmd.Wait()
			<-stderrDone
			require.NoError(t, err, "the launcher must exit 0 (not die of SIGPIPE):\n%s", stderr)
			for rank := range 2 {
				done := filepath.Join(pids, "rank-"+string(rune('0'+rank))+".done")
				_, err := os.Stat(done)
				assert.NoError(t, err, "rank %d did not run to its end", rank)
			}
			if !closeStderr {
				assert.Equal(t, 1, strings.Count(string(stderr), "cannot write the workers' output to stdout"), "%s", stderr)
				assert.Contains(t, string(stderr), "broken pipe")
			}
		})
	}
}

// Issue 12, item 9: a worker that starts `setsid sleep` (its own session and
// process group) and exits leaves a process that the process-group kill and
// the parent-death signal do not reach. As a child subreaper the launcher
// adopts it and kills it when the attempt ends.
func TestEscapedGrandchildIsKilled(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		code int
	}{
		{"worker exits 0", []string{"PARC_TEST_CODE=0"}, 0},
		{"worker fails", []string{"PARC_TEST_CODE=7"}, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			pids := t.TempDir()
			path := writePlan(t, blockPlan(1, 2))
			r := runLauncher(t, context.Background(), Options{
				PlanPath: path, NodeRank: intp(0), Grace: durp(5 * time.Second),
				Env: cleanEnv(append([]string{workerVar + "=setsid-child", "PARC_TEST_PIDDIR=" + pids, "CUDA_VISIBLE_DEVICES=0,1"}, c.env...)...),
			})
			assert.Equal(t, c.code, r.code, r.stderr)
			got := readPids(t, pids)
			require.Len(t, got, 4, "%v\n%s", got, r.stderr)
			for name, pid := range got {
				assert.False(t, testenv.PIDAlive(pid), "%s (pid %d) outlived the launcher", name, pid)
				if strings.Contains(name, "child") {
					assert.Contains(t, r.stderr, "sleep (pid "+itoa(pid)+")")
				}
			}
			assert.Equal(t, 2, strings.Count(r.stderr, "parc launch: killed 1 process the worker (pid "), r.stderr)
		})
	}
}

// The same through a real launcher process stopped by SIGTERM while the
// worker still runs: its setsid grandchild goes with it.
func TestLauncherSIGTERMKillsEscapedGrandchildren(t *testing.T) {
	pids := t.TempDir()
	path := writePlan(t, blockPlan(1, 2))
	cmd, _, errb := startLauncherProcess(t, childOptions{Plan: path, NodeRank: intp(0), GraceMS: intp(5000)},
		cleanEnv(workerVar+"=setsid-child", "PARC_TEST_WAIT=1", "PARC_TEST_PIDDIR="+pids, "CUDA_VISIBLE_DEVICES=0,1"))
	require.True(t, waitFor(20*time.Second, func() bool { return len(readPids(t, pids)) == 4 }), errb.String())
	got := readPids(t, pids)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = cmd.Wait()
	for name, pid := range got {
		assert.False(t, testenv.PIDAlive(pid), "%s (pid %d) outlived the launcher:\n%s", name, pid, errb)
	}
}

// An orphan adopted while the workers run is reaped when it exits, not left
// a zombie until the job ends.
func TestAdoptedOrphanIsReapedWhileRunning(t *testing.T) {
	old := reapInterval
	reapInterval = 50 * time.Millisecond
	defer func() { reapInterval = old }()
	pids := t.TempDir()
	path := writePlan(t, blockPlan(1, 1))
	done := make(chan result, 1)
	go func() {
		done <- runLauncher(t, context.Background(), Options{PlanPath: path, NodeRank: intp(0),
			Env: cleanEnv(workerVar+"=orphan", "PARC_TEST_RUN_MS=4000", "PARC_TEST_PIDDIR="+pids, "CUDA_VISIBLE_DEVICES=0")})
	}()
	file := filepath.Join(pids, "rank-0.orphan")
	var pid int
	require.True(t, waitFor(20*time.Second, func() bool {
		data, err := os.ReadFile(file)
		pid = atoi(string(data))
		return err == nil && pid > 0
	}))
	gone := waitFor(3*time.Second, func() bool {
		_, err := os.Stat("/proc/" + itoa(pid))
		return err != nil // reaped: no zombie left
	})
	select {
	case r := <-done:
		t.Fatalf("the launcher returned before the check: %v\n%s", r.err, r.stderr)
	default:
	}
	assert.True(t, gone, "the orphan (pid %d) is still a zombie while the worker runs", pid)
	r := <-done
	assert.Equal(t, 0, r.code, r.stderr)
}

// Issue 12, item 11: SIGTERM while the preflight waits for nvidia-smi (a hung
// driver) stops the launcher at once and kills nvidia-smi; nothing starts.
func TestSignalDuringPreflightKillsNvidiaSMI(t *testing.T) {
	dir := t.TempDir()
	smiPid := filepath.Join(dir, "smi.pid")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nvidia-smi"),
		[]byte("#!/bin/sh\necho $$ >"+smiPid+".tmp && mv "+smiPid+".tmp "+smiPid+"\nexec sleep 300\n"), 0o755))
	pids := t.TempDir()
	path := writePlan(t, blockPlan(1, 2))
	cmd, _, errb := startLauncherProcess(t, childOptions{Plan: path, NodeRank: intp(0)},
		cleanEnv(workerVar+"=true", "PARC_TEST_PIDDIR="+pids, "PATH="+dir+":"+os.Getenv("PATH")))
	var pid int
	require.True(t, waitFor(20*time.Second, func() bool {
		data, err := os.ReadFile(smiPid)
		if err != nil {
			return false
		}
		pid = atoi(strings.TrimSpace(string(data)))
		return pid > 0
	}), errb.String())
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 128+15, ee.ExitCode(), errb.String())
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, errb.String(), "SIGTERM during the preflight: nothing was started")
	assert.True(t, waitFor(2*time.Second, func() bool { return !testenv.PIDAlive(pid) }), "nvidia-smi (pid %d) outlived the launcher", pid)
	assert.Empty(t, readPids(t, pids), "no worker may start")
}

// Issue 12, item 10: the grace period comes from the plan. A worker that
// needs longer than the launcher's default to save its checkpoint (here the
// default is lowered to 300 ms so the test stays short; in production it is
// 10 s against a preemption warning of minutes) saves it when the plan's
// grace_seconds covers it.
func TestGraceFromPlanCoversCheckpoint(t *testing.T) {
	old := defaultGrace
	defaultGrace = 300 * time.Millisecond
	defer func() { defaultGrace = old }()
	for _, c := range []struct {
		name  string
		plan  *int
		flag  *time.Duration
		saved bool
		says  string
	}{
		{"plan grace_seconds 3", intp(3), nil, true, "SIGKILL after 3s (the plan's grace_seconds)"},
		{"no grace in the plan", nil, nil, false, "SIGKILL after 300ms (default)"},
		{"--grace overrides the plan", intp(3), durp(200 * time.Millisecond), false, "SIGKILL after 200ms (--grace)"},
		{"--grace 0 kills at once", intp(3), durp(0), false, "SIGKILL after 0s (--grace)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pids := t.TempDir()
			plan := blockPlan(1, 2)
			plan.GraceSeconds = c.plan
			path := writePlan(t, plan)
			sigs := make(chan os.Signal, 1)
			done := make(chan result, 1)
			go func() {
				done <- runLauncher(t, context.Background(), Options{
					PlanPath: path, NodeRank: intp(0), Grace: c.flag, Signals: sigs,
					Env: cleanEnv(workerVar+"=checkpoint", "PARC_TEST_SAVE_MS=1000", "PARC_TEST_PIDDIR="+pids, "CUDA_VISIBLE_DEVICES=0,1"),
				})
			}()
			require.True(t, waitFor(20*time.Second, func() bool {
				ready, _ := filepath.Glob(filepath.Join(pids, "*.ready"))
				return len(ready) == 2
			}))
			sigs <- syscall.SIGTERM
			r := <-done
			assert.Contains(t, r.stderr, c.says)
			saved, _ := filepath.Glob(filepath.Join(pids, "*.saved"))
			if c.saved {
				assert.Len(t, saved, 2, r.stderr)
				assert.Equal(t, 0, r.code, "stopped by SIGTERM, every worker saved and exited 0")
			} else {
				assert.Empty(t, saved, "a worker was not SIGKILLed after the grace period:\n%s", r.stderr)
			}
		})
	}
}

func TestNegativeGraceIsAnError(t *testing.T) {
	path := writePlan(t, blockPlan(1, 2))
	r := runLauncher(t, context.Background(), Options{PlanPath: path, NodeRank: intp(0), Grace: durp(-time.Second),
		Env: cleanEnv(workerVar+"=true", "CUDA_VISIBLE_DEVICES=0,1")})
	assert.Equal(t, ExitUsage, r.code)
	assert.EqualError(t, r.err, "--grace is -1s, it must be 0 (SIGKILL at once) or more")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func atoi(s string) int {
	var n int
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		return 0
	}
	return n
}
