package launcher

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
)

// output serialises the workers' prefixed lines and the launcher's messages,
// so that lines from different ranks never mix.
type output struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
}

// logf writes one launcher message to stderr.
func (o *output) logf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.stderr, "parc launch: "+format+"\n", args...)
}

// copyLines copies r to dst line by line, each line starting with prefix. A
// line longer than the buffer is written in pieces (only the first carries
// the prefix); a last line without newline gets one.
func (o *output) copyLines(dst io.Writer, prefix []byte, r *os.File, wg *sync.WaitGroup) {
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
			_, _ = dst.Write(buf)
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
