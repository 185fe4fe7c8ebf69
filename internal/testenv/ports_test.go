package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func freePortsScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "slurm", "free-ports.sh")
}

func freePorts(t *testing.T, base, count int) int {
	t.Helper()
	out, err := exec.Command("bash", freePortsScript(), strconv.Itoa(base), strconv.Itoa(count)).CombinedOutput()
	if err != nil {
		t.Fatalf("free-ports.sh %d %d: %v\n%s", base, count, err, out)
	}
	b, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("free-ports.sh printed %q", out)
	}
	return b
}

// Issue 12, item 13: when something that is not the test cluster listens on
// its ports, setup-test-env.sh moves the cluster to the next free block
// (free-ports.sh) instead of failing. Tested with listeners of this test on a
// block of its own, so the running test cluster is never touched.
func TestFreePortsSkipsTakenPorts(t *testing.T) {
	// A block of 5 ports nobody listens on, below the kernel's ephemeral
	// range (ip_local_port_range): a port the kernel hands to an outgoing
	// connection of a test running beside this one (CI runs packages in
	// parallel) could otherwise take a port of the block between
	// free-ports.sh's answer and the listeners below.
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	var base int
	for b := low - 1000 - low%5; b >= 10000 && b > low-5000; b -= 25 {
		if freePorts(t, b, 5) == b {
			base = b
			break
		}
	}
	if base == 0 {
		t.Skip("no free block of 5 ports found below the ephemeral range")
	}
	// Someone else takes the third port of the block: the next block is used.
	other, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+2))
	if err != nil {
		t.Skipf("port %d: %v", base+2, err)
	}
	defer other.Close()
	got := freePorts(t, base, 5)
	if got <= base+2 || got%5 != base%5 {
		t.Fatalf("with port %d taken, free-ports.sh %d 5 = %d, want the next block (%d or later)", base+2, base, got, base+5)
	}
	// Every port of the block it chose is free: a listener there succeeds.
	for p := got; p < got+5; p++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("free-ports.sh chose %d-%d, but port %d is taken: %v", got, got+4, p, err)
			continue
		}
		l.Close()
	}
	// Listening on every address (as slurmctld does) counts too.
	all, err := net.Listen("tcp", ":"+strconv.Itoa(got))
	if err != nil {
		t.Skipf("port %d: %v", got, err)
	}
	defer all.Close()
	if again := freePorts(t, got, 5); again == got {
		t.Errorf("port %d is taken on every address, but free-ports.sh %d 5 still chose it", got, got)
	}
}
