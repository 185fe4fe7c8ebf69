// Package testenv lets tests that need a real external component (Slurm,
// PyTorch, shellcheck, pre-commit, rsvg-convert) say so. When CI is set (as
// .ci/run does), a missing component fails the test: scripts/setup-test-env.sh
// should have installed it. Elsewhere the test is skipped with the command that
// installs it.
package testenv

import (
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
func NeedTorch(t testing.TB) {
	t.Helper()
	NeedCommand(t, "python3")
	if err := exec.Command("python3", "-c", "import torch.distributed as d; assert d.is_gloo_available()").Run(); err != nil {
		missing(t, "python3-torch (gloo)")
	}
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
