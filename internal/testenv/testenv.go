// Package testenv lets tests that need a real external component (Slurm,
// PyTorch, shellcheck, pre-commit, rsvg-convert) say so. When CI is set (as
// .ci/run does), a missing component fails the test: scripts/setup-test-env.sh
// should have installed it. Elsewhere the test is skipped with the command that
// installs it.
package testenv

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

const setup = "run scripts/setup-test-env.sh (installs and starts it)"

// InCI reports whether the tests run under CI, where nothing may be skipped.
func InCI() bool { return os.Getenv("CI") != "" }

func missing(t testing.TB, what string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s is not available in CI: %s", what, setup)
	}
	t.Skipf("%s is not available: %s", what, setup)
}

// NeedCommand requires every named program on PATH.
func NeedCommand(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			missing(t, n)
		}
	}
}

// NeedTorch requires python3 with a torch that has gloo.
func NeedTorch(t testing.TB) { t.Helper(); Python(t) }

// Python returns the absolute path of a python3 whose torch has gloo:
// Debian's /usr/bin/python3 first (a pyenv python3 on PATH has no torch).
func Python(t testing.TB) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		abs, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(abs, "-c", "import torch.distributed as d; assert d.is_gloo_available()").Run() == nil {
			return abs
		}
	}
	missing(t, "python3-torch (gloo)")
	return ""
}

// FreePort returns a TCP port on 127.0.0.1 that nobody listens on now, for a
// rendezvous (several jobs on one host must not share a master port).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("no free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// NeedSlurm requires a running local Slurm cluster with idle nodes.
func NeedSlurm(t testing.TB) {
	t.Helper()
	NeedCommand(t, "sbatch", "sinfo", "squeue")
	out, err := exec.Command("sinfo", "-h", "-o", "%N %t").Output()
	if err != nil || len(out) == 0 {
		missing(t, "a running Slurm cluster (slurmctld + slurmd)")
	}
}
