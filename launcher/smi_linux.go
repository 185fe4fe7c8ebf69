//go:build linux

package launcher

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// nvidiaSMICount runs nvidia-smi in its own process group, started on the
// spawner's thread with SIGKILL as its parent-death signal: a timeout, the
// preflight's cancellation (a signal to the launcher) or the launcher's death
// kill it and whatever it started.
func nvidiaSMICount(ctx context.Context, smi string, spawn chan<- spawnRequest) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, nvidiaSMITimeout)
	defer cancel()
	var stdout, stderr strings.Builder
	cmd := exec.CommandContext(ctx, smi, "--query-gpu=index", "--format=csv,noheader")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second // a grandchild holding the pipes
	err := startCmd(spawn, cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return 0, fmt.Errorf("nvidia-smi did not answer within %s: the GPU driver looks hung", nvidiaSMITimeout)
	}
	if ctx.Err() != nil {
		return 0, fmt.Errorf("nvidia-smi: %w", context.Cause(ctx))
	}
	if err != nil {
		msg := ""
		if e := strings.TrimSpace(stderr.String()); e != "" {
			msg = ": " + e
		}
		return 0, fmt.Errorf("nvidia-smi failed (%v)%s", err, msg)
	}
	n := 0
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n, nil
}
