//go:build linux

package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
	// SIGQUIT too, as torchrun takes it (torch.distributed.elastic's
	// agent stops its workers on SIGTERM, SIGINT, SIGHUP and SIGQUIT):
	// left to Go's default it dumped the launcher's goroutines and exited 2
	// with no grace period for the workers.
	terminating = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}
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
//
// While it runs, the calling process is a child subreaper
// (PR_SET_CHILD_SUBREAPER): a worker's descendants that leave it (a daemon,
// `setsid sleep`) are adopted by the launcher, and every descendant still
// alive when an attempt ends is killed and reaped. A program that calls Run
// should start no other children meanwhile. A closed stdout or stderr (say
// `parc launch ... | head`) stops neither the launcher nor the workers: their
// output is dropped from then on, with one warning.
func Run(ctx context.Context, opts Options) (int, error) {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Grace != nil && *opts.Grace < 0 {
		return ExitUsage, fmt.Errorf("--grace is %s, it must be 0 (SIGKILL at once) or more", *opts.Grace)
	}
	if opts.MaxRestarts < 0 {
		return ExitUsage, fmt.Errorf("--max-restarts is %d, it must be 0 or more", opts.MaxRestarts)
	}
	ignoreSIGPIPE()
	// Subscribe before the preflight, so that a signal during it stops the
	// GPU query too instead of leaving it behind.
	sigs := opts.Signals
	if sigs == nil {
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, append(append([]os.Signal{}, terminating...), forwardOnly...)...)
		defer signal.Stop(ch)
		sigs = ch
	}
	spawn := make(chan spawnRequest)
	go spawner(spawn)
	defer close(spawn)

	s, sig, err := prepareInterruptible(ctx, opts, spawn, sigs)
	if sig != nil {
		return 128 + int(sig.(syscall.Signal)), fmt.Errorf("%s during the preflight: nothing was started", sigName(sig.(syscall.Signal)))
	}
	if err != nil {
		return ExitUsage, err
	}
	if opts.LogDir != "" {
		if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
			return ExitUsage, fmt.Errorf("cannot create the log directory: %w", err)
		}
	}
	sup := &supervisor{s: s, opts: opts, spawn: spawn, out: newOutput(opts.Stdout, opts.Stderr)}
	sup.grace, sup.graceFrom = graceOf(opts, s.plan)
	for _, w := range s.warnings {
		sup.out.logf("warning: %s", w)
	}
	sup.out.logf("node %d of %d: ranks %s of %d, master %s:%d, %s",
		s.nodeRank, len(s.plan.Nodes), rankList(s.node.Workers), s.plan.WorldSize, s.masterAddr, s.masterPort, s.gpus)
	restore, err := becomeSubreaper()
	if err != nil {
		sup.out.logf("warning: cannot become a child subreaper (%v); processes that leave a worker may outlive the job", err)
	}
	defer restore()
	return sup.run(ctx, sigs)
}

// graceOf is the time between the stop signal and SIGKILL: --grace, else
// the plan's grace_seconds, else DefaultGrace; and where it came from.
func graceOf(opts Options, plan *launchplan.File) (time.Duration, string) {
	switch {
	case opts.Grace != nil:
		return *opts.Grace, "--grace"
	case plan.GraceSeconds != nil:
		return time.Duration(*plan.GraceSeconds) * time.Second, "the plan's grace_seconds"
	}
	return defaultGrace, "default"
}

// prepareInterruptible runs the preflight (prepare) and returns early, with
// the signal, when a terminating signal arrives meanwhile: the preflight's
// context is cancelled, which kills a running GPU query. Forward-only
// signals are dropped (no worker runs yet).
func prepareInterruptible(ctx context.Context, opts Options, spawn chan<- spawnRequest, sigs <-chan os.Signal) (*nodeSetup, os.Signal, error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		s   *nodeSetup
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := prepare(pctx, opts, spawn)
		done <- result{s, err}
	}()
	for {
		select {
		case r := <-done:
			return r.s, nil, r.err
		case sig := <-sigs:
			if !isTerminating(sig) {
				continue
			}
			cancel()
			<-done // the GPU query is killed and reaped
			return nil, sig, nil
		}
	}
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
	s         *nodeSetup
	opts      Options
	out       *output
	spawn     chan spawnRequest
	grace     time.Duration
	graceFrom string
}

// proc is one started worker.
type proc struct {
	w       launchplan.Worker
	cmd     *exec.Cmd // the worker's shim (shim_linux.go)
	pid     int       // the shim's pid, also the process group id
	wpid    int       // the worker's own pid
	status  exitStatus
	logPath string
	started *os.File // the shim's status pipe
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

// attempt runs this node's workers once: start them all, supervise them
// until every one has exited, clean up what they left, and say how it ended.
func (sup *supervisor) attempt(ctx context.Context, sigs <-chan os.Signal, attempt int) attemptResult {
	a, err := sup.start(attempt)
	if err != nil {
		return attemptResult{code: ExitUsage, err: err}
	}
	a.supervise(ctx, sigs)
	a.teardown()
	return a.outcome()
}

// attemptRun is one attempt's running state.
type attemptRun struct {
	sup      *supervisor
	attempt  int
	procs    []*proc
	events   chan exitEvent
	readers  sync.WaitGroup // the output copiers
	running  int
	stopping bool
	grace    <-chan time.Time
	firstBad *proc // first non-zero exit, in exit order
	res      attemptResult
}

// start prepares every worker first, then starts them all in one batch on
// the spawner's thread, and watches each for its exit.
func (sup *supervisor) start(attempt int) (*attemptRun, error) {
	workers := sup.s.node.Workers
	a := &attemptRun{sup: sup, attempt: attempt, events: make(chan exitEvent, len(workers))}
	width := len(strconv.Itoa(sup.s.plan.WorldSize - 1))
	var parentEnds []*os.File // the child's ends of pipes and log files
	for _, w := range workers {
		p, ends, err := sup.prepare(w, attempt, width, &a.readers)
		parentEnds = append(parentEnds, ends...)
		if err != nil {
			closeAll(parentEnds)
			return nil, fmt.Errorf("cannot start rank %d: %w", w.Rank, err)
		}
		a.procs = append(a.procs, p)
	}
	cmds := make([]*exec.Cmd, len(a.procs))
	for i, p := range a.procs {
		cmds[i] = p.cmd
	}
	started, err := startOn(sup.spawn, cmds)
	closeAll(parentEnds)
	for _, p := range a.procs[started:] {
		p.started.Close()
	}
	a.procs = a.procs[:started]
	for _, p := range a.procs {
		p.pid = p.cmd.Process.Pid
	}
	// Each shim says whether it started its worker.
	for i, p := range a.procs {
		if err != nil {
			p.started.Close()
			continue
		}
		if wpid, serr := readStarted(p.started); serr != nil {
			err, started = serr, i
		} else {
			p.wpid = wpid
		}
	}
	if err != nil {
		// Nothing may keep running: stop what did start.
		a.signalAll(syscall.SIGKILL)
		a.teardown()
		return nil, fmt.Errorf("cannot start rank %d: %w", workers[started].Rank, err)
	}
	for i, p := range a.procs {
		go func(i, pid int) {
			st, err := waitExited(pid)
			if err != nil {
				st = exitStatus{code: -1}
			}
			a.events <- exitEvent{i: i, status: st}
		}(i, p.pid)
	}
	a.running = len(a.procs)
	return a, nil
}

// supervise handles exits, signals, cancellation and the grace period until
// every worker has exited (none is reaped yet).
func (a *attemptRun) supervise(ctx context.Context, sigs <-chan os.Signal) {
	ctxDone := ctx.Done()
	reap := time.NewTicker(reapInterval)
	defer reap.Stop()
	for a.running > 0 {
		select {
		case <-reap.C:
			a.reapAdopted()
		case ev := <-a.events:
			a.exited(ev)
		case sig := <-sigs:
			a.signalled(sig)
		case <-ctxDone:
			ctxDone = nil
			a.res.cause = context.Cause(ctx).Error()
			if !a.stopping {
				a.sup.out.logf("stopping: %s", a.res.cause)
				a.stop(syscall.SIGTERM)
			}
		case <-a.grace:
			a.grace = nil
			a.sup.out.logf("%s still running after %s: SIGKILL", countWorkers(a.running), a.sup.grace)
			a.signalAll(syscall.SIGKILL)
		}
	}
}

// exited records a worker's exit; the first failure stops the others.
func (a *attemptRun) exited(ev exitEvent) {
	p := a.procs[ev.i]
	p.status = ev.status
	a.running--
	if !ev.status.failed() {
		return
	}
	if a.firstBad == nil {
		a.firstBad = p
	}
	if !a.stopping {
		a.res.failed = p
		a.sup.out.logf("rank %d (pid %d) %s; stopping the other %s of this node (SIGTERM, SIGKILL after %s)",
			p.w.Rank, p.wpid, p.status, countWorkers(a.running), a.sup.grace)
		a.stop(syscall.SIGTERM)
	}
}

// signalled forwards a signal; a terminating one stops the workers, a second
// one while they stop kills them.
func (a *attemptRun) signalled(sig os.Signal) {
	ss, _ := sig.(syscall.Signal)
	if !isTerminating(sig) {
		a.signalAll(ss)
		return
	}
	if a.stopping {
		if a.res.signal == nil {
			a.res.signal = sig // no restart after this attempt
		}
		a.sup.out.logf("%s while stopping: killing every worker now", sigName(ss))
		a.signalAll(syscall.SIGKILL)
		return
	}
	a.res.signal = sig
	a.sup.out.logf("%s: forwarding it to every worker, SIGKILL after %s (%s)", sigName(ss), a.sup.grace, a.sup.graceFrom)
	a.stop(ss)
}

// reapAdopted reaps the adopted orphans that have exited while the workers
// run, so they do not pile up as zombies in a long job. The workers' own
// zombies are left for teardown (their pids must stay taken until then).
func (a *attemptRun) reapAdopted() {
	keep := map[int]bool{}
	for _, p := range a.procs {
		keep[p.pid] = true
	}
	reapZombieChildren(keep)
}

func (a *attemptRun) signalAll(sig syscall.Signal) {
	for _, p := range a.procs {
		_ = syscall.Kill(-p.pid, sig) // the whole process group; ESRCH when it is gone
	}
}

func (a *attemptRun) stop(sig syscall.Signal) {
	a.stopping = true
	a.signalAll(sig)
	a.grace = time.After(a.sup.grace)
}

// teardown runs once every worker has exited but none is reaped, so no
// process group id can have been reused: it kills whatever the workers left
// behind (their process groups, then every other descendant, adopted as the
// subreaper: a shim killed by SIGKILL could not clean up), reaps, and waits
// a little for output still in the pipes.
func (a *attemptRun) teardown() {
	a.signalAll(syscall.SIGKILL)
	if n, names := killDescendants(0); n > 0 {
		a.sup.out.logf("killed %s the workers left behind: %s", countProcesses(n), names)
	}
	for _, p := range a.procs {
		_ = p.cmd.Wait()
	}
	drained := make(chan struct{})
	go func() { a.readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(outputDrain):
	}
}

// outcome is the attempt's result once every worker has exited.
func (a *attemptRun) outcome() attemptResult {
	res := a.res
	switch {
	case res.failed != nil:
		p := res.failed
		res.code = p.status.exitCode()
		res.err = fmt.Errorf("rank %d %s (attempt %d of %d)", p.w.Rank, p.status, a.attempt+1, a.sup.opts.MaxRestarts+1)
		if p.logPath != "" {
			a.sup.out.logf("last lines of %s:\n%s", p.logPath, tail(p.logPath, 20))
		}
	case a.firstBad != nil:
		res.code = a.firstBad.status.exitCode()
		res.err = fmt.Errorf("stopped (%s); rank %d %s", res.stopReason(), a.firstBad.w.Rank, a.firstBad.status)
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

func countProcesses(n int) string {
	if n == 1 {
		return "1 process"
	}
	return strconv.Itoa(n) + " processes"
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

// prepare builds one worker's command: its shim (shim_linux.go), leading
// its own process group, and its output prefixed by rank or written to its
// log file. It returns the files the child inherits, which the launcher
// closes once the child has started.
func (sup *supervisor) prepare(w launchplan.Worker, attempt, width int, readers *sync.WaitGroup) (*proc, []*os.File, error) {
	startedR, startedW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := shimCommand(sup.s.command, sup.s.workerEnv(w, attempt, sup.opts.MaxRestarts), startedW)
	p := &proc{w: w, cmd: cmd, started: startedR}
	p, ends, err := sup.output(p, attempt, width, readers)
	if err != nil {
		startedR.Close()
		startedW.Close()
		return nil, nil, err
	}
	return p, append(ends, startedW), nil
}

// readStarted reads a shim's report: the worker's pid, or why it could not
// start it.
func readStarted(r *os.File) (int, error) {
	defer r.Close()
	data, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	line := strings.TrimSpace(string(data))
	if pid, ok := strings.CutPrefix(line, "ok "); ok {
		if n, err := strconv.Atoi(pid); err == nil {
			return n, nil
		}
	}
	if msg, ok := strings.CutPrefix(line, "err "); ok {
		return 0, errors.New(msg)
	}
	return 0, fmt.Errorf("its supervising process (%s) ended before starting it", shimName)
}

// output connects a worker's stdout and stderr to its log file, or to pipes
// whose lines are prefixed by rank.
func (sup *supervisor) output(p *proc, attempt, width int, readers *sync.WaitGroup) (*proc, []*os.File, error) {
	cmd, w := p.cmd, p.w
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
	go sup.out.copyLines(&sup.out.stdout, prefix, outR, readers)
	go sup.out.copyLines(&sup.out.stderr, prefix, errR, readers)
	return p, []*os.File{outW, errW}, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
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
	case syscall.SIGQUIT:
		return "SIGQUIT"
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
