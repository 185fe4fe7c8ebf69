// Command testmain is `parc launch` without the rest of parc: the launcher
// runtime behind the same flags, built by the launcher's tests and benchmark
// (a stand-in for the parc binary under Slurm, and the binary whose memory
// is measured). It is not installed.
//
//	testmain launch --plan launch.json [--node-rank N] [--master-addr A]
//	         [--log-dir D] [--max-restarts N] [--grace 10s] [-- CMD ARGS...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"parc.dev/parc/launcher"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "launch" {
		fmt.Fprintln(os.Stderr, "usage: testmain launch --plan launch.json [flags] [-- CMD ARGS...]")
		os.Exit(launcher.ExitUsage)
	}
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	var opts launcher.Options
	nodeRank := fs.Int("node-rank", -1, "this node's index (default $SLURM_NODEID)")
	fs.StringVar(&opts.PlanPath, "plan", "", "launch.json")
	fs.StringVar(&opts.MasterAddr, "master-addr", "", "rank 0's address")
	fs.StringVar(&opts.LogDir, "log-dir", "", "per-rank log directory")
	fs.IntVar(&opts.MaxRestarts, "max-restarts", 0, "restarts after a failure")
	grace := fs.Duration("grace", launcher.DefaultGrace, "SIGTERM to SIGKILL (default: the plan's grace_seconds, else 10s)")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(launcher.ExitUsage)
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "grace" {
			opts.Grace = grace
		}
	})
	if *nodeRank >= 0 {
		opts.NodeRank = nodeRank
	}
	opts.Command = fs.Args()
	code, err := launcher.Run(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "parc launch:", err)
	}
	if path := os.Getenv("PARC_TESTMAIN_VMHWM"); path != "" {
		writeVmHWM(path)
	}
	os.Exit(code)
}

// writeVmHWM copies this process's peak resident set since exec (the
// VmHWM line of /proc/self/status) to path, for the benchmark. getrusage
// would not do: Linux carries the pre-exec peak of the parent's memory (a
// vfork child shares it) into ru_maxrss.
func writeVmHWM(path string) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			_ = os.WriteFile(path, []byte(strings.TrimSpace(v)), 0o644)
		}
	}
}
