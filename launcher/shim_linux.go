//go:build linux

package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// Every worker runs under a shim: a copy of the launcher's own executable
// (/proc/self/exe, so parc or any program linking this package) started
// with shimVar set, which this package's init turns into shimMain before the
// program's main runs. The shim is the process the supervisor starts and
// waits for; it leads the worker's process group, so the supervisor's
// signals and SIGKILL reach it and the worker alike.
//
// The shim is a child subreaper and the worker's parent: whatever the worker
// starts and leaves (a daemon, `setsid sleep`, a new session) is re-parented
// to the shim, not to the launcher or init, so it stays a descendant the shim
// can find. When the worker exits, the shim kills and reaps every descendant
// left, then exits as the worker did (its code, or dying of its signal).
// When the launcher dies, even of SIGKILL, the shim gets the parent-death
// signal (SIGTERM, told apart from a forwarded SIGTERM by its parent pid
// having changed) and kills every descendant, the worker first. A guard
// beside the launcher could not do this: once the launcher is gone, the
// processes a worker left are re-parented to init and no longer traceable.
const shimVar = "PARC_LAUNCH_SHIM"

// shimName is the shim's argv[0] and, in ps, its name.
const shimName = "parc-launch-shim"

func init() {
	// Only the launcher's own re-execution is a shim: it sets both shimVar
	// and argv[0]. The variable alone, inherited from a user's environment
	// (exported by a batch script before parc launch), is dropped, so the
	// program runs as itself and its workers never see it.
	if v, ok := os.LookupEnv(shimVar); ok {
		if len(os.Args) > 0 && os.Args[0] == shimName {
			os.Exit(shimMain(v, os.Args[1:]))
		}
		os.Unsetenv(shimVar)
	}
}

// shimCommand wraps a worker command for the spawner: the shim runs argv
// with env (shimVar removed); it writes "ok PID" (the worker's pid) or
// "err MESSAGE" to status, its fd 3.
func shimCommand(argv, env []string, status *os.File) *exec.Cmd {
	return &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       append([]string{shimName}, argv...),
		Env:        append(env, shimVar+"="+strconv.Itoa(os.Getpid())),
		ExtraFiles: []*os.File{status},
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGTERM, // see shimMain
		},
	}
}

// shimExitNoStart is the shim's exit code when it could not start the
// worker (the supervisor reads why from the status pipe).
const shimExitNoStart = 127

// shimMain runs in the shim process: parent is the launcher's pid.
func shimMain(parent string, argv []string) int {
	runtime.LockOSThread() // the worker's parent-death signal follows this thread
	status := os.NewFile(3, "status")
	syscall.CloseOnExec(3)
	report := func(format string, args ...any) {
		if status != nil {
			fmt.Fprintf(status, format+"\n", args...)
			status.Close()
			status = nil
		}
	}
	ppid, _ := strconv.Atoi(parent)
	// The signals the launcher forwards reach the worker directly (one
	// process group); the shim only watches for its parent's death.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		report("err cannot become a child subreaper: %v", e)
		return shimExitNoStart
	}
	if os.Getppid() != ppid || len(argv) == 0 {
		return shimExitNoStart // the launcher is gone already
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, shimVar+"=") {
			env = append(env, kv)
		}
	}
	worker := &exec.Cmd{
		Path: argv[0], Args: argv, Env: env,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	if err := worker.Start(); err != nil {
		report("err %s", strings.ReplaceAll(err.Error(), "\n", " "))
		return shimExitNoStart
	}
	pid := worker.Process.Pid
	report("ok %d", pid)

	exited := make(chan syscall.WaitStatus, 1)
	go func() {
		// Reap every child: the worker, and the orphans adopted meanwhile.
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if got == pid || err != nil {
				exited <- ws
				return
			}
		}
	}()
	for {
		select {
		case ws := <-exited:
			if n, names := killDescendants(0); n > 0 {
				fmt.Fprintf(os.Stderr, "parc launch: killed %s the worker (pid %d) left behind: %s\n", countProcesses(n), pid, names)
			}
			if ws.Signaled() {
				dieOf(ws.Signal())
			}
			return ws.ExitStatus()
		case <-sigs:
			if os.Getppid() != ppid {
				// The launcher died: nothing of its job may stay.
				killDescendants(0)
				return 128 + int(syscall.SIGKILL)
			}
		}
	}
}

// dieOf ends the shim by sig, so that the launcher sees the worker's own
// status: the signal's default action restored and the signal unblocked
// (the Go runtime handles them all), no core file, then the signal raised
// on this thread.
func dieOf(sig syscall.Signal) {
	signal.Reset(sig)
	var act [4]uint64 // struct sigaction, all zero: SIG_DFL, no flags, empty mask
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0)
	set := uint64(1) << (uint(sig) - 1)
	const sigUnblock = 1
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigUnblock, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0)
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
	os.Exit(128 + int(sig)) // a signal whose default action is not to terminate
}
