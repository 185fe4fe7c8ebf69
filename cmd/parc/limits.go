package main

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"slices"
	"strings"
	"time"

	"parc.dev/parc/internal/cli"
)

// A spec is evaluated by CUE, which has no limits of its own: 33 lines that
// each double a string (a1: a0+a0 ... a32) held 21 GB after a minute, and a
// comprehension over two list.Range(0, 100000, 1) ran for minutes. parc's
// own stages are bounded (the search's work budget, the input's size and
// depth); these limits bound what is left, for every command that reads a
// spec. They are far above what any spec needs: the largest search of the
// published corpus holds under 400 MiB and takes under 10 s of CPU.
const (
	memoryLimit = 4 << 30           // heap bytes
	timeLimit   = 120 * time.Second // wall time per spec the command names
)

// commandTimeLimit is timeLimit for each argument that is not an option:
// parc vet in a pre-commit hook reads every changed spec in one process, and
// a long list of good specs must not add up to a false resource-limit. (An
// option's value, as in --format json, counts too: the bound only grows.)
func commandTimeLimit(args []string) time.Duration {
	n := 0
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			n++
		}
	}
	return time.Duration(max(n, 1)) * timeLimit
}

// boundedCommands are the commands that read a spec and end; parc launch
// runs the workers for as long as they train, and is not bounded.
var boundedCommands = []string{"vet", "compile", "export", "explain", "solve", "import"}

// run is parc: the CLI, under the limits when the command reads a spec.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && slices.Contains(boundedCommands, args[0]) {
		stop := watchLimits(stderr, memoryLimit, commandTimeLimit(args))
		defer stop()
	}
	return cli.Main(args, stdout, stderr)
}

// watchLimits checks the heap and the time every 50 ms; past either
// limit it says so and ends the process with exit status 1 (the input is at
// fault: nothing is written).
func watchLimits(stderr io.Writer, heap uint64, limit time.Duration) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > heap {
				fmt.Fprintf(stderr, "parc: error resource-limit: reading the input made parc hold %d MiB, more than its limit of %d MiB: parc stops (a CUE comprehension over large ranges, or a string or list doubled by references, evaluates to more than any spec needs)\n", v>>20, heap>>20)
				os.Exit(cli.ExitSpec)
			}
			if used := time.Since(start); used > limit {
				fmt.Fprintf(stderr, "parc: error resource-limit: reading the input took %.0f s, more than its limit of %.0f s: parc stops (a CUE comprehension over large ranges evaluates to more than any spec needs)\n", used.Seconds(), limit.Seconds())
				os.Exit(cli.ExitSpec)
			}
		}
	}()
	return func() { close(done) }
}
