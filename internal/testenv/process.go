package testenv

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
)

// SyncBuffer is a bytes.Buffer that a process's writers and a polling test
// can use at the same time.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// PIDAlive reports whether pid is a live process (a zombie counts as dead).
func PIDAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// Sleepers lists the live processes running exactly `sleep token`: the
// processes a test's workers started, found by a token no other process has
// rather than by pid.
func Sleepers(token string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && string(cmdline) == "sleep\x00"+token+"\x00" && PIDAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
