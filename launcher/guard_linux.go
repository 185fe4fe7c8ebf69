//go:build linux

package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// guardScript runs in /bin/sh next to the launcher. It reads worker process
// group ids from its stdin, a pipe whose only writer is the launcher. If the
// launcher dies without saying "exit" (SIGKILL, OOM killer), the pipe reaches
// EOF and the guard SIGKILLs every group it knows, so a worker's own children
// (which the parent-death signal does not reach) cannot outlive the launcher.
// It ignores the signals a job step or a terminal sends to everyone.
const guardScript = `trap '' HUP INT TERM QUIT USR1 USR2 PIPE
g=
while IFS= read -r p; do
	case $p in
	exit) exit 0 ;;
	clear) g= ;;
	*) g="$g $p" ;;
	esac
done
for p in $g; do kill -s KILL -- "-$p" 2>/dev/null; done
exit 0
`

// guard is the watchdog process; a nil *guard does nothing.
type guard struct {
	cmd *exec.Cmd
	w   *os.File
}

func startGuard(spawn chan<- spawnRequest) (*guard, error) {
	sh := "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		return nil, errNoGuard
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        sh,
		Args:        []string{"sh", "-c", guardScript},
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	_, err = startOn(spawn, []*exec.Cmd{cmd})
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	return &guard{cmd: cmd, w: w}, nil
}

// add tells the guard about new worker process groups, in one write.
func (g *guard) add(pgids []int) {
	if g == nil || len(pgids) == 0 {
		return
	}
	var b []byte
	for _, p := range pgids {
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, '\n')
	}
	_, _ = g.w.Write(b)
}

// clear forgets the groups of an attempt whose workers have all been reaped.
func (g *guard) clear() {
	if g != nil {
		fmt.Fprintln(g.w, "clear")
	}
}

// pid is the guard's process id, 0 without a guard.
func (g *guard) pid() int {
	if g == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

// close tells the guard to exit without killing anything. It does not wait
// for the shell to be scheduled: a goroutine reaps it.
func (g *guard) close() {
	if g == nil {
		return
	}
	fmt.Fprintln(g.w, "exit")
	g.w.Close()
	go func() { _ = g.cmd.Wait() }()
}
