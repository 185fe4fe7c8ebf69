//go:build linux

package launcher

import (
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

const (
	prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER, linux/prctl.h
	prGetChildSubreaper = 37
)

// becomeSubreaper makes this process a child subreaper: orphaned descendants
// of the workers (a daemon, `setsid sleep`) are re-parented to it instead of
// to init, so killDescendants finds them. restore puts the previous setting
// back.
func becomeSubreaper() (restore func(), err error) {
	var was int32
	if _, _, e := syscall.Syscall(syscall.SYS_PRCTL, prGetChildSubreaper, uintptr(unsafe.Pointer(&was)), 0); e != 0 {
		return func() {}, e
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return func() {}, e
	}
	return func() {
		if was == 0 {
			_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0)
		}
	}, nil
}

var sigpipeOnce sync.Once

// ignoreSIGPIPE keeps a write to a closed stdout or stderr from killing the
// launcher: with SIGPIPE delivered to a channel, the Go runtime returns EPIPE
// from the write instead of dying of the signal (os/signal, "SIGPIPE").
// signal.Ignore would do the same but be inherited by the workers, whose
// SIGPIPE must stay at its default. It lasts for the life of the process:
// the caller still writes its last message after Run returns.
func ignoreSIGPIPE() {
	sigpipeOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGPIPE)
		go func() {
			for range ch {
			}
		}()
	})
}

// killDescendants SIGKILLs every descendant of this process except keep
// (0: none) and its descendants, and the workers' zombies, reaps those that are its children and
// are not the workers (orphans it adopted as the subreaper), and repeats
// until none is left or 5 s have passed. It returns how many it killed and
// their names. The workers must all have exited (zombies not yet reaped): a
// worker's surviving descendants are then re-parented to this process.
func killDescendants(keep int) (int, string) {
	self := os.Getpid()
	killed := map[int]string{}
	deadline := time.Now().Add(5 * time.Second)
	for {
		live := descendants(self, keep)
		if len(live) == 0 || time.Now().After(deadline) {
			break
		}
		for pid, p := range live {
			if _, seen := killed[pid]; !seen {
				killed[pid] = p.comm
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// Reap the adopted orphans (our children that exec.Cmd does not own).
		for pid, p := range live {
			if p.ppid == self {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Reap the adopted orphans that died of the SIGKILL after the last scan.
	for pid := range killed {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
	if len(killed) == 0 {
		return 0, ""
	}
	pids := make([]int, 0, len(killed))
	for pid := range killed {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	var b strings.Builder
	for i, pid := range pids {
		if i == 8 {
			b.WriteString(", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(killed[pid] + " (pid " + strconv.Itoa(pid) + ")")
	}
	return len(killed), b.String()
}

// reapInterval is how often the supervisor reaps adopted orphans that have
// exited; tests shorten it.
var reapInterval = 5 * time.Second

// reapZombieChildren reaps this process's zombie children except those in
// keep: only exited processes, so nothing an exec.Cmd still waits for.
func reapZombieChildren(keep map[int]bool) int {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || keep[pid] {
			continue
		}
		if p, ok := readStat(pid); ok && p.ppid == self && p.state == 'Z' {
			var ws syscall.WaitStatus
			if got, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == pid {
				n++
			}
		}
	}
	return n
}

// procInfo is what /proc/PID/stat says of a process.
type procInfo struct {
	ppid  int
	comm  string
	state byte
}

// descendants lists the live (not zombie) descendants of root, leaving out
// keep and its descendants, from one pass over /proc.
func descendants(root, keep int) map[int]procInfo {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	all := map[int]procInfo{}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := readStat(pid)
		if !ok {
			continue
		}
		all[pid] = p
		children[p.ppid] = append(children[p.ppid], pid)
	}
	out := map[int]procInfo{}
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[pid] {
			if c == keep || c == root {
				continue
			}
			stack = append(stack, c)
			if p := all[c]; p.state != 'Z' {
				out[c] = p
			}
		}
	}
	return out
}

// readStat parses /proc/PID/stat: "pid (comm) state ppid ...", where comm may
// hold spaces and parentheses (the last ')' ends it).
func readStat(pid int) (procInfo, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+4 > len(s) {
		return procInfo{}, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return procInfo{}, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return procInfo{}, false
	}
	return procInfo{ppid: ppid, comm: s[open+1 : end], state: fields[0][0]}, true
}
