package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const setupLock = "/tmp/parc-setup-test-env.lock"

func setupScript(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "setup-test-env.sh")
}

// Issue 12, item 18: the test command's setup passes twice in a row, and
// while another run of it is in progress, on a machine where it already ran;
// no daemon it started holds its lock (fd 9) afterwards. Each run only checks
// here, so this takes seconds.
func TestSetupRunsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scripts/setup-test-env.sh")
	}
	if os.Geteuid() != 0 {
		t.Skip("setup-test-env.sh runs as root")
	}
	NeedSlurm(t) // set up already: the script has nothing to install
	script := setupScript(t)
	run := func() (string, error) {
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), "SLURM_CONF=") // the script sets its own
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for i := range 2 {
		start := time.Now()
		out, err := run()
		if err != nil || !strings.Contains(out, "setup-test-env: ready") {
			t.Fatalf("run %d in a row: %v\n%s", i+1, err, out)
		}
		t.Logf("run %d: %s", i+1, time.Since(start).Round(10*time.Millisecond))
	}
	var wg sync.WaitGroup
	errs := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := run(); err != nil {
				errs[i] = err.Error() + "\n" + out
			}
		}()
	}
	wg.Wait()
	for i, e := range errs {
		if e != "" {
			t.Errorf("concurrent run %d: %s", i+1, e)
		}
	}
	for _, h := range lockHolders(t) {
		t.Errorf("%s holds %s: the next setup would wait for it", h, setupLock)
	}
}

// lockHolders lists the processes (other than this one and other setup runs
// still in progress) with the lock file open: a daemon there is the bug.
func lockHolders(t *testing.T) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	self := "/proc/" + itoa(os.Getpid()) + "/"
	for _, fd := range procs {
		if strings.HasPrefix(fd, self) {
			continue
		}
		if target, err := os.Readlink(fd); err == nil && target == setupLock {
			pid := strings.Split(fd, "/")[2]
			comm, _ := os.ReadFile("/proc/" + pid + "/comm")
			name := strings.TrimSpace(string(comm))
			if inSetupRun(pid) {
				continue // a setup run in progress (another test command on this machine), or a command it runs, holds it while it runs
			}
			out = append(out, name+" (pid "+pid+")")
		}
	}
	return out
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// inSetupRun reports whether pid is a setup-test-env.sh run or one of the
// commands it runs (its python3 | tail, flock): they hold the lock only
// while the run lasts. A daemon started by a run is reparented to init when
// the run ends, so it has no such ancestor.
func inSetupRun(pid string) bool {
	for range 64 {
		if pid == "" || pid == "0" || pid == "1" {
			return false
		}
		cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		if strings.Contains(string(cmd), "setup-test-env.sh") {
			return true
		}
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut after ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 {
			return false
		}
		pid = f[1]
	}
	return false
}
