//go:build linux

package main

import (
	"parc.dev/parc/internal/testenv"

	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/launchplan"
)

// Issue 12, item 9, end to end: `parc launch` on a one-node plan whose two
// workers each start `setsid sleep` (a new session: out of the worker's
// process group, re-parented when its parent exits), then the launcher is
// SIGKILLed, which it cannot handle. No sleep may survive it: each worker's
// shim, their subreaper, kills them on the launcher's death. The sleeps carry
// a token unique to this run and are found by command line, so the test
// assumes no pid and tolerates other runs at the same time.
func TestParcLaunchSIGKILLedLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	parc := filepath.Join(dir, "parc") // this binary, run as parc (TestMain)
	require.NoError(t, os.Symlink(os.Args[0], parc))
	f := &launchplan.File{Version: 1, WorldSize: 2, GPUsPerNode: 2, Order: "tp-cp-ep-dp-pp",
		Groups: launchplan.Groups{}, Nodes: []launchplan.Node{{Index: 0, Workers: []launchplan.Worker{
			{Rank: 0, LocalRank: 0, GPU: 0}, {Rank: 1, LocalRank: 1, GPU: 1}}}},
		Command: []string{"true"}}
	data, err := json.Marshal(f)
	require.NoError(t, err)
	plan := filepath.Join(dir, "launch.json")
	require.NoError(t, os.WriteFile(plan, data, 0o644))

	token := fmt.Sprintf("1000.%d%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	cmd := exec.Command(parc, "launch", "--plan", plan, "--node-rank", "0", "--",
		"sh", "-c", "setsid sleep "+token+" & wait")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CUDA_VISIBLE_DEVICES=0,1", "HOME=" + dir}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for _, pid := range testenv.Sleepers(token) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for len(testenv.Sleepers(token)) < 2 {
		require.True(t, time.Now().Before(deadline), "the workers' sleeps did not start")
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for len(testenv.Sleepers(token)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Empty(t, testenv.Sleepers(token), "setsid sleeps outlived the SIGKILLed parc launch")
}
