// Package testenv lets tests that need a real external component (Slurm,
// PyTorch, shellcheck, pre-commit, rsvg-convert) say so. When CI is set (as
// .ci/run does), a missing component fails the test: scripts/setup-test-env.sh
// should have installed it. Elsewhere the test is skipped with the command that
// installs it.
package testenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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

// FreePort returns a TCP port that nobody listens on now, for a rendezvous
// (several jobs on one host must not share a master port). It is drawn at
// random below the kernel's ephemeral range (net.ipv4.ip_local_port_range),
// which the kernel hands to outgoing connections: a port from that range
// (what listening on port 0 gives) can be taken by any connection the
// workers of another test open between this check and the job's bind, and
// torchrun's store then fails with "Address already in use" (seen once on a
// machine running two test packages at a time).
func FreePort(t testing.TB) int {
	t.Helper()
	low := 32768 // Linux's default ip_local_port_range starts here
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 20000 {
				low = n
			}
		}
	}
	for range 200 {
		port := 20000 + rand.IntN(low-20000)
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("no free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// SlurmConf is the test cluster's configuration (scripts/setup-test-env.sh
// writes it; never /etc/slurm, so that a machine's own Slurm is left alone).
const SlurmConf = "/var/lib/parc-test-slurm/etc/slurm.conf"

var (
	slurmOnce  sync.Once
	slurmError string // why the test cluster is not usable; "" when it is
)

// NeedSlurm requires parc's local test cluster, running and laid out as the
// tests expect: partition gpu (the default) with n1..n4 and debug with n1,
// n2, each node with gpu:8 and not down. It points the Slurm clients of this
// process and its children at the cluster (SLURM_CONF, unless already set).
// Without it the test is skipped, or fails under CI.
func NeedSlurm(t testing.TB) {
	t.Helper()
	NeedCommand(t, "sbatch", "sinfo", "squeue")
	slurmOnce.Do(func() {
		if os.Getenv("SLURM_CONF") == "" {
			os.Setenv("SLURM_CONF", SlurmConf)
		}
		conf := os.Getenv("SLURM_CONF")
		if _, err := os.Stat(conf); err != nil {
			slurmError = fmt.Sprintf("no test cluster configuration (%v)", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "sinfo", "-h", "-N", "-o", "%P %N %t %G").Output()
		if err != nil {
			slurmError = fmt.Sprintf("sinfo with SLURM_CONF=%s: %v", conf, err)
			return
		}
		slurmError = checkLayout(string(out))
	})
	if slurmError != "" {
		missing(t, "parc's Slurm test cluster ("+slurmError+")")
	}
}

// checkLayout checks sinfo -N -o '%P %N %t %G' against the layout the tests
// rely on (scripts/slurm/README.md); it returns what is wrong, or "".
func checkLayout(sinfo string) string {
	have := map[string]string{} // "partition node" -> "state gres"
	for _, line := range strings.Split(strings.TrimSpace(sinfo), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 {
			have[f[0]+" "+f[1]] = f[2] + " " + f[3]
		}
	}
	var bad []string
	for _, want := range []string{"gpu* n1", "gpu* n2", "gpu* n3", "gpu* n4", "debug n1", "debug n2"} {
		v, ok := have[want]
		state, gres, _ := strings.Cut(v, " ")
		switch {
		case !ok:
			bad = append(bad, "no node "+want)
		case gres != "gpu:8":
			bad = append(bad, want+" has gres "+gres)
		case strings.HasPrefix(state, "down") || strings.HasPrefix(state, "drain") || strings.HasPrefix(state, "fail") ||
			strings.HasSuffix(state, "*"):
			bad = append(bad, want+" is "+state)
		}
	}
	return strings.Join(bad, ", ")
}

// MegatronLM is the Megatron-LM checkout named by MEGATRON_LM (at the
// commit of internal/targets/megatron/options.tsv, see its testdata/README.md)
// that the tests comparing parc with Megatron's own code read; without one
// the test is skipped: Megatron-LM is not a package of this machine's
// registries, so those tests are opt-in.
func MegatronLM(t testing.TB) string {
	t.Helper()
	root := os.Getenv("MEGATRON_LM")
	if root == "" {
		t.Skip("MEGATRON_LM is not set (a Megatron-LM checkout; see internal/targets/megatron/testdata/README.md)")
	}
	return root
}

// MegatronPython is a python3 that imports what Megatron-LM's argument code
// needs besides the modules the tests stub (packaging): python3 on PATH, else
// Debian's /usr/bin/python3 (python3-packaging). Without one the test is
// skipped, as without MEGATRON_LM: the tests that run Megatron-LM's own code
// are opt-in.
func MegatronPython(t testing.TB) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import packaging.version").Run() == nil {
			return py
		}
	}
	t.Skip("no python3 with the packaging module (apt-get install python3-packaging)")
	return ""
}
