//go:build linux

package launcher

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the processes the tests need, chosen by
// environment variables:
//
//	PARC_TEST_WORKER=<behaviour>  a worker (see worker)
//	PARC_TEST_LAUNCHER=<json>     a launcher process running Run with those options
const (
	workerVar   = "PARC_TEST_WORKER"
	launcherVar = "PARC_TEST_LAUNCHER"
)

func TestMain(m *testing.M) {
	// A launcher process also carries PARC_TEST_WORKER, for its workers.
	if o := os.Getenv(launcherVar); o != "" {
		os.Exit(launcherProcess(o))
	}
	if b := os.Getenv(workerVar); b != "" {
		os.Exit(worker(b))
	}
	os.Exit(m.Run())
}

// childOptions is what a launcher process gets, as JSON.
type childOptions struct {
	Plan        string   `json:"plan"`
	NodeRank    *int     `json:"node_rank,omitempty"`
	MasterAddr  string   `json:"master_addr,omitempty"`
	LogDir      string   `json:"log_dir,omitempty"`
	GraceMS     *int     `json:"grace_ms,omitempty"` // nil: the plan's, else the default
	MaxRestarts int      `json:"max_restarts,omitempty"`
	Command     []string `json:"command,omitempty"`
}

func launcherProcess(spec string) int {
	var o childOptions
	if err := json.Unmarshal([]byte(spec), &o); err != nil {
		fmt.Fprintln(os.Stderr, "bad", launcherVar, err)
		return 99
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, launcherVar+"=") {
			env = append(env, kv)
		}
	}
	var grace *time.Duration
	if o.GraceMS != nil {
		d := time.Duration(*o.GraceMS) * time.Millisecond
		grace = &d
	}
	code, err := Run(context.Background(), Options{
		PlanPath: o.Plan, NodeRank: o.NodeRank, MasterAddr: o.MasterAddr, LogDir: o.LogDir,
		Grace: grace, MaxRestarts: o.MaxRestarts,
		Command: o.Command, Env: env,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "parc launch:", err)
	}
	return code
}

// worker behaviours. Every worker first writes its pid to
// $PARC_TEST_PIDDIR/rank-R.pid when that is set, so tests can find it.
func worker(behaviour string) int {
	rank, _ := strconv.Atoi(os.Getenv("RANK"))
	if dir := os.Getenv("PARC_TEST_PIDDIR"); dir != "" {
		writePid(filepath.Join(dir, fmt.Sprintf("rank-%d.pid", rank)), os.Getpid())
	}
	failRank, _ := strconv.Atoi(os.Getenv("PARC_TEST_FAIL_RANK"))
	switch behaviour {
	case "env":
		var b strings.Builder
		for _, k := range strings.Fields(os.Getenv("PARC_TEST_SHOW")) {
			fmt.Fprintf(&b, "%s=%s ", k, os.Getenv(k))
		}
		fmt.Println(strings.TrimSpace(b.String()))
		fmt.Fprintln(os.Stderr, "to stderr")
		fmt.Print("no newline at the end")
		return 0
	case "exit":
		// rank PARC_TEST_FAIL_RANK exits with PARC_TEST_CODE after 200 ms;
		// the others wait to be signalled.
		if rank == failRank {
			time.Sleep(200 * time.Millisecond)
			code, _ := strconv.Atoi(os.Getenv("PARC_TEST_CODE"))
			return code
		}
		time.Sleep(time.Minute)
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		if rank == failRank {
			time.Sleep(200 * time.Millisecond)
			return 3
		}
		time.Sleep(time.Minute)
		return 0
	case "sleep-with-child":
		// A grandchild in the worker's process group: the parent-death signal
		// does not reach it, only the process-group kill and the shim do.
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if dir := os.Getenv("PARC_TEST_PIDDIR"); dir != "" {
			writePid(filepath.Join(dir, fmt.Sprintf("rank-%d.child.pid", rank)), child.Process.Pid)
		}
		time.Sleep(5 * time.Minute)
		return 0
	case "signals":
		// Reports SIGUSR2; on SIGTERM prints and exits 0 (a graceful save).
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT)
		fmt.Println("ready")
		for s := range ch {
			fmt.Println("got", sigName(s.(syscall.Signal)))
			if s != syscall.SIGUSR2 {
				return 0
			}
		}
	case "restart":
		// Fails with code 5 on attempts before PARC_TEST_OK_ATTEMPT.
		attempt, _ := strconv.Atoi(os.Getenv("PARC_RESTART_ATTEMPT"))
		okAttempt, _ := strconv.Atoi(os.Getenv("PARC_TEST_OK_ATTEMPT"))
		fmt.Printf("attempt %s/%s restart_count=%s\n", os.Getenv("PARC_RESTART_ATTEMPT"),
			os.Getenv("TORCHELASTIC_MAX_RESTARTS"), os.Getenv("TORCHELASTIC_RESTART_COUNT"))
		if attempt < okAttempt && rank == failRank {
			return 5
		}
		if attempt < okAttempt {
			time.Sleep(time.Minute)
		}
		return 0
	case "chatty":
		// PARC_TEST_LINES lines on stdout and stderr, 2 ms apart, then
		// rank-R.done in PARC_TEST_PIDDIR: a worker whose output reader
		// went away must still run to its end.
		n, _ := strconv.Atoi(os.Getenv("PARC_TEST_LINES"))
		for i := range n {
			fmt.Printf("rank %d line %d\n", rank, i)
			fmt.Fprintf(os.Stderr, "rank %d err %d\n", rank, i)
			time.Sleep(2 * time.Millisecond)
		}
		if dir := os.Getenv("PARC_TEST_PIDDIR"); dir != "" {
			writePid(filepath.Join(dir, fmt.Sprintf("rank-%d.done", rank)), n)
		}
		return 0
	case "setsid-child":
		// A grandchild in its own session (setsid): neither the worker's
		// process group nor the parent-death signal reaches it. The worker
		// then exits with PARC_TEST_CODE (or, when PARC_TEST_WAIT is set,
		// waits to be signalled).
		child := exec.Command("sleep", "300")
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if dir := os.Getenv("PARC_TEST_PIDDIR"); dir != "" {
			writePid(filepath.Join(dir, fmt.Sprintf("rank-%d.child.pid", rank)), child.Process.Pid)
		}
		if os.Getenv("PARC_TEST_WAIT") != "" {
			time.Sleep(5 * time.Minute)
		}
		time.Sleep(300 * time.Millisecond) // every worker has started its child
		code, _ := strconv.Atoi(os.Getenv("PARC_TEST_CODE"))
		return code
	case "orphan":
		// Leaves a process that exits 300 ms later (its parent, sh, is gone
		// at once: it is an orphan, adopted by the launcher), writes its pid
		// to rank-R.orphan and runs on for PARC_TEST_RUN_MS.
		out, err := exec.Command("sh", "-c", "sleep 0.3 >/dev/null 2>&1 & echo $!").Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		writePid(filepath.Join(os.Getenv("PARC_TEST_PIDDIR"), fmt.Sprintf("rank-%d.orphan", rank)), pid)
		ms, _ := strconv.Atoi(os.Getenv("PARC_TEST_RUN_MS"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return 0
	case "checkpoint":
		// On SIGTERM it "saves a checkpoint" for PARC_TEST_SAVE_MS, writes
		// rank-R.saved in PARC_TEST_PIDDIR and exits 0, as Megatron does
		// with --exit-signal-handler.
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		writePid(filepath.Join(os.Getenv("PARC_TEST_PIDDIR"), fmt.Sprintf("rank-%d.ready", rank)), 0)
		<-ch
		ms, _ := strconv.Atoi(os.Getenv("PARC_TEST_SAVE_MS"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		writePid(filepath.Join(os.Getenv("PARC_TEST_PIDDIR"), fmt.Sprintf("rank-%d.saved", rank)), ms)
		return 0
	case "true":
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown worker behaviour", behaviour)
	return 98
}

func writePid(path string, pid int) {
	tmp := path + ".tmp"
	_ = os.WriteFile(tmp, []byte(strconv.Itoa(pid)), 0o644)
	_ = os.Rename(tmp, path)
}
