package launcher

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
)

// output serialises the workers' prefixed lines and the launcher's messages,
// so that lines from different ranks never mix. A destination that fails (a
// closed pipe: `parc launch ... | head`) is dropped from then on, with one
// warning on stderr; the copiers keep reading the workers' pipes, so no
// worker blocks on a full pipe or dies of SIGPIPE.
type output struct {
	mu             sync.Mutex
	stdout, stderr sink
}

// sink is one destination and whether writing to it has failed.
type sink struct {
	w      io.Writer
	name   string
	failed bool
}

func newOutput(stdout, stderr io.Writer) *output {
	return &output{stdout: sink{w: stdout, name: "stdout"}, stderr: sink{w: stderr, name: "stderr"}}
}

// writeLocked writes b to s unless s has failed; o.mu is held.
func (o *output) writeLocked(s *sink, b []byte) {
	if s.failed {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.failed = true
		if s != &o.stderr {
			o.writeLocked(&o.stderr, fmt.Appendf(nil,
				"parc launch: warning: cannot write the workers' output to %s (%v): dropping it from now on; the workers keep running (--log-dir keeps each rank's output in a file)\n",
				s.name, err))
		}
	}
}

// logf writes one launcher message to stderr.
func (o *output) logf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writeLocked(&o.stderr, fmt.Appendf(nil, "parc launch: "+format+"\n", args...))
}

// copyLines copies r to dst line by line, each line starting with prefix. A
// line longer than the buffer is written in pieces (only the first carries
// the prefix); a last line without newline gets one. It reads r to its end
// even when dst has failed.
func (o *output) copyLines(dst *sink, prefix []byte, r *os.File, wg *sync.WaitGroup) {
	defer wg.Done()
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, 0, 4<<10)
	atStart := true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			buf = buf[:0]
			if atStart {
				buf = append(buf, prefix...)
			}
			buf = append(buf, chunk...)
			atStart = chunk[len(chunk)-1] == '\n'
			if err != nil && err != bufio.ErrBufferFull && !atStart {
				buf = append(buf, '\n') // EOF inside a line
			}
			o.mu.Lock()
			o.writeLocked(dst, buf)
			o.mu.Unlock()
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return
		}
	}
}
