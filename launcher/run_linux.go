//go:build linux

package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"parc.dev/parc/launchplan"
)

// terminating signals stop the workers (forwarded, then SIGKILL after the
// grace period); the others are only forwarded.
var (
	terminating = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}
	forwardOnly = []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2}
)

// outputDrain bounds how long the launcher waits, after every worker has been
// reaped, for output still buffered in pipes (a process that escaped its
// process group could hold a pipe open forever).
const outputDrain = 2 * time.Second

// Run starts this node's workers as the plan says and supervises them until
// they have all exited. It returns the exit code for the launcher and, when
// that code is not 0, an error that says why. ExitUsage means a usage or
// preflight error and that nothing was started.
func Run(ctx context.Context, opts Options) (int, error) {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.MaxRestarts < 0 {
		return ExitUsage, fmt.Errorf("--max-restarts is %d, it must be 0 or more", opts.MaxRestarts)
	}
	s, err := prepare(ctx, opts)
	if err != nil {
		return ExitUsage, err
	}
	if opts.LogDir != "" {
		if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
			return ExitUsage, fmt.Errorf("cannot create the log directory: %w", err)
		}
	}
	// Subscribe only now: during the preflight, nothing runs and a signal
	// may simply end the launcher.
	sigs := opts.Signals
	if sigs == nil {
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, append(append([]os.Signal{}, terminating...), forwardOnly...)...)
		defer signal.Stop(ch)
		sigs = ch
	}
	sup := &supervisor{s: s, opts: opts, out: &output{stdout: opts.Stdout, stderr: opts.Stderr}}
	for _, w := range s.warnings {
		sup.out.logf("warning: %s", w)
	}
	sup.out.logf("node %d of %d: ranks %s of %d, master %s:%d, %s",
		s.nodeRank, len(s.plan.Nodes), rankList(s.node.Workers), s.plan.WorldSize, s.masterAddr, s.masterPort, s.gpus)
	return sup.run(ctx, sigs)
}

func rankList(ws []launchplan.Worker) string {
	r := make([]string, len(ws))
	for i, w := range ws {
		r[i] = strconv.Itoa(w.Rank)
	}
	if len(r) > 16 {
		return r[0] + "," + r[1] + ",...," + r[len(r)-1]
	}
	return strings.Join(r, ",")
}

type supervisor struct {
	s     *nodeSetup
	opts  Options
	out   *output
	spawn chan spawnRequest
	guard *guard
}

// proc is one started worker.
type proc struct {
	w       launchplan.Worker
	cmd     *exec.Cmd
	pid     int // also its process group id
	status  exitStatus
	logPath string
}

type exitEvent struct {
	i      int
	status exitStatus
}

// attemptResult is how one attempt ended.
type attemptResult struct {
	code   int
	err    error
	failed *proc     // the first worker that failed on its own
	signal os.Signal // the terminating signal that stopped the attempt
	cause  string    // "context canceled" when ctx stopped it
}

func (sup *supervisor) run(ctx context.Context, sigs <-chan os.Signal) (int, error) {
	sup.spawn = make(chan spawnRequest)
	go spawner(sup.spawn)
	defer close(sup.spawn)
	g, err := startGuard(sup.spawn)
	if err != nil {
		sup.out.logf("warning: no guard process (%v); workers' children may outlive a SIGKILLed launcher", err)
	}
	sup.guard = g
	defer sup.guard.close()

	for attempt := 0; ; attempt++ {
		res := sup.attempt(ctx, sigs, attempt)
		if res.failed != nil && attempt < sup.opts.MaxRestarts && !res.interrupted() {
			if sig := pendingStop(sigs); sig != nil {
				sup.out.logf("%s: not restarting", sigName(sig.(syscall.Signal)))
				return res.code, res.err
			}
			if ctx.Err() != nil {
				return res.code, res.err
			}
			sup.out.logf("restarting this node's workers (restart %d of %d)", attempt+1, sup.opts.MaxRestarts)
			continue
		}
		return res.code, res.err
	}
}

// pendingStop takes the signals that arrived while an attempt was ending and
// returns the first terminating one (the others are dropped: no worker is
// running to receive them).
func pendingStop(sigs <-chan os.Signal) os.Signal {
	for {
		select {
		case sig := <-sigs:
			if isTerminating(sig) {
				return sig
			}
		default:
			return nil
		}
	}
}

func (sup *supervisor) attempt(ctx context.Context, sigs <-chan os.Signal, attempt int) attemptResult {
	workers := sup.s.node.Workers
	procs := make([]*proc, 0, len(workers))
	events := make(chan exitEvent, len(workers))
	var readers sync.WaitGroup
	width := len(strconv.Itoa(sup.s.plan.WorldSize - 1))

	// Everything is prepared first, then all workers are started in one
	// batch on the spawner's thread.
	var parentEnds []*os.File // the child's ends of pipes and log files
	for _, w := range workers {
		p, ends, err := sup.prepare(w, attempt, width, &readers)
		parentEnds = append(parentEnds, ends...)
		if err != nil {
			closeAll(parentEnds)
			return attemptResult{code: ExitUsage, err: fmt.Errorf("cannot start rank %d: %w", w.Rank, err)}
		}
		procs = append(procs, p)
	}
	cmds := make([]*exec.Cmd, len(procs))
	for i, p := range procs {
		cmds[i] = p.cmd
	}
	started, err := startOn(sup.spawn, cmds)
	closeAll(parentEnds)
	procs = procs[:started]
	pgids := make([]int, started)
	for i, p := range procs {
		p.pid = p.cmd.Process.Pid
		pgids[i] = p.pid
	}
	sup.guard.add(pgids)
	if err != nil {
		// Nothing may keep running: stop what did start.
		for _, q := range procs {
			_ = syscall.Kill(-q.pid, syscall.SIGKILL)
		}
		for _, q := range procs {
			_ = q.cmd.Wait()
		}
		sup.guard.clear()
		return attemptResult{code: ExitUsage, err: fmt.Errorf("cannot start rank %d: %w", workers[started].Rank, err)}
	}
	for i, p := range procs {
		go func(i, pid int) {
			st, err := waitExited(pid)
			if err != nil {
				st = exitStatus{code: -1}
			}
			events <- exitEvent{i: i, status: st}
		}(i, p.pid)
	}

	var (
		res      attemptResult
		stopping bool
		grace    <-chan time.Time
		ctxDone  = ctx.Done()
		firstBad *proc // first non-zero exit, in exit order
	)
	signalAll := func(sig syscall.Signal) {
		for _, p := range procs {
			_ = syscall.Kill(-p.pid, sig) // the whole process group; ESRCH when it is gone
		}
	}
	stop := func(sig syscall.Signal) {
		stopping = true
		signalAll(sig)
		grace = time.After(sup.opts.Grace)
	}
	running := len(procs)
	for running > 0 {
		select {
		case ev := <-events:
			p := procs[ev.i]
			p.status = ev.status
			running--
			if !ev.status.failed() {
				continue
			}
			if firstBad == nil {
				firstBad = p
			}
			if !stopping {
				res.failed = p
				sup.out.logf("rank %d (pid %d) %s; stopping the other %s of this node (SIGTERM, SIGKILL after %s)",
					p.w.Rank, p.pid, p.status, countWorkers(running), sup.opts.Grace)
				stop(syscall.SIGTERM)
			}
		case sig := <-sigs:
			ss, _ := sig.(syscall.Signal)
			if !isTerminating(sig) {
				signalAll(ss)
				continue
			}
			if stopping {
				if res.signal == nil {
					res.signal = sig // no restart after this attempt
				}
				sup.out.logf("%s while stopping: killing every worker now", sigName(ss))
				signalAll(syscall.SIGKILL)
				continue
			}
			res.signal = sig
			sup.out.logf("%s: forwarding it to every worker, SIGKILL after %s", sigName(ss), sup.opts.Grace)
			stop(ss)
		case <-ctxDone:
			ctxDone = nil
			res.cause = context.Cause(ctx).Error()
			if !stopping {
				sup.out.logf("stopping: %s", res.cause)
				stop(syscall.SIGTERM)
			}
		case <-grace:
			grace = nil
			sup.out.logf("%s still running after %s: SIGKILL", countWorkers(running), sup.opts.Grace)
			signalAll(syscall.SIGKILL)
		}
	}

	// Every worker has exited but none is reaped yet, so no process group id
	// can have been reused: kill whatever the workers left behind, then reap.
	signalAll(syscall.SIGKILL)
	for _, p := range procs {
		_ = p.cmd.Wait()
	}
	sup.guard.clear()
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(outputDrain):
	}

	switch {
	case res.failed != nil:
		p := res.failed
		res.code = p.status.exitCode()
		res.err = fmt.Errorf("rank %d %s (attempt %d of %d)", p.w.Rank, p.status, attempt+1, sup.opts.MaxRestarts+1)
		if p.logPath != "" {
			sup.out.logf("last lines of %s:\n%s", p.logPath, tail(p.logPath, 20))
		}
	case firstBad != nil:
		res.code = firstBad.status.exitCode()
		res.err = fmt.Errorf("stopped (%s); rank %d %s", res.stopReason(), firstBad.w.Rank, firstBad.status)
	}
	return res
}

// interrupted reports whether a signal or the context stopped the attempt;
// then it is not restarted.
func (r attemptResult) interrupted() bool { return r.signal != nil || r.cause != "" }

func (r attemptResult) stopReason() string {
	if r.signal != nil {
		return sigName(r.signal.(syscall.Signal))
	}
	return r.cause
}

func countWorkers(n int) string {
	if n == 1 {
		return "1 worker"
	}
	return strconv.Itoa(n) + " workers"
}

func isTerminating(sig os.Signal) bool {
	for _, t := range terminating {
		if t == sig {
			return true
		}
	}
	return false
}

// prepare builds one worker's command: its own process group, SIGKILL as its
// parent-death signal, and its output prefixed by rank or written to its log
// file. It returns the files the child inherits, which the launcher closes
// once the child has started.
func (sup *supervisor) prepare(w launchplan.Worker, attempt, width int, readers *sync.WaitGroup) (*proc, []*os.File, error) {
	cmd := &exec.Cmd{
		Path: sup.s.command[0],
		Args: sup.s.command,
		Env:  sup.s.workerEnv(w, attempt, sup.opts.MaxRestarts),
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	p := &proc{w: w, cmd: cmd}
	if sup.opts.LogDir != "" {
		dir := filepath.Join(sup.opts.LogDir, fmt.Sprintf("attempt-%d", attempt))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
		p.logPath = filepath.Join(dir, fmt.Sprintf("rank-%d.log", w.Rank))
		f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, nil, err
		}
		cmd.Stdout, cmd.Stderr = f, f
		return p, []*os.File{f}, nil
	}
	prefix := []byte(fmt.Sprintf("%*d: ", width, w.Rank))
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	readers.Add(2)
	go sup.out.copyLines(sup.out.stdout, prefix, outR, readers)
	go sup.out.copyLines(sup.out.stderr, prefix, errR, readers)
	return p, []*os.File{outW, errW}, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// spawnRequest asks the spawner to start commands, in order, stopping at
// the first that fails.
type spawnRequest struct {
	cmds []*exec.Cmd
	done chan spawnResult
}

type spawnResult struct {
	started int
	err     error
}

// spawner starts every process from one locked OS thread that lives as long
// as the supervisor: Linux sends the parent-death signal when the creating
// thread exits, not the process (go.dev/issue/27505).
func spawner(reqs <-chan spawnRequest) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for r := range reqs {
		var res spawnResult
		for _, c := range r.cmds {
			if res.err = c.Start(); res.err != nil {
				break
			}
			res.started++
		}
		r.done <- res
	}
}

// startOn starts cmds on the spawner and returns how many started.
func startOn(spawn chan<- spawnRequest, cmds []*exec.Cmd) (int, error) {
	done := make(chan spawnResult, 1)
	spawn <- spawnRequest{cmds: cmds, done: done}
	r := <-done
	return r.started, r.err
}

// tail returns the last lines of a file, for the failure report.
func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	const max = 8 << 10
	if len(data) > max {
		data = data[len(data)-max:]
	}
	ls := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return "  " + strings.Join(ls, "\n  ")
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	}
	return "signal " + strconv.Itoa(int(s))
}

var errNoGuard = errors.New("no /bin/sh")
