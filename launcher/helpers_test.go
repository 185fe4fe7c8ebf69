//go:build linux

package launcher

import (
	"context"
	"encoding/json"
	"os"
	"parc.dev/parc/internal/testenv"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/launchplan"
)

// blockPlan is a plan of nodes × gpus workers, rank = node·gpus + local rank,
// whose command is this test binary (PARC_TEST_WORKER picks the behaviour).
func blockPlan(nodes, gpus int) *launchplan.File {
	f := &launchplan.File{
		Version: 1, WorldSize: nodes * gpus, GPUsPerNode: gpus, Order: "tp-cp-ep-dp-pp",
		MasterPort: 29512,
		Groups:     launchplan.Groups{},
		Env:        launchplan.Env{"PARC_TEST_PLAN_VAR": "from-plan"},
		Command:    []string{os.Args[0]},
	}
	for n := range nodes {
		node := launchplan.Node{Index: n}
		for l := range gpus {
			node.Workers = append(node.Workers, launchplan.Worker{Rank: n*gpus + l, LocalRank: l, GPU: l})
		}
		f.Nodes = append(f.Nodes, node)
	}
	return f
}

func writePlan(t testing.TB, f *launchplan.File) string {
	t.Helper()
	data, err := json.MarshalIndent(f, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "launch.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// cleanEnv is the test process's environment without anything that would
// change the launcher's decisions (Slurm, GPUs, thread counts, test roles),
// plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLURM_") || strings.HasPrefix(k, "PARC_") ||
			k == "CUDA_VISIBLE_DEVICES" || k == "OMP_NUM_THREADS" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

type result struct {
	code           int
	err            error
	stdout, stderr string
	elapsed        time.Duration
}

func runLauncher(t testing.TB, ctx context.Context, opts Options) result {
	t.Helper()
	var out, errb testenv.SyncBuffer
	opts.Stdout, opts.Stderr = &out, &errb
	if opts.Signals == nil {
		opts.Signals = make(chan os.Signal) // never fires: tests must not catch real signals
	}
	start := time.Now()
	code, err := Run(ctx, opts)
	return result{code: code, err: err, stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
}

func intp(i int) *int { return &i }

func durp(d time.Duration) *time.Duration { return &d }

// readPids returns the pids written into dir by workers (rank-R.pid) and
// their children (rank-R.child.pid).
func readPids(t testing.TB, dir string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".pid") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		pid, err := strconv.Atoi(string(data))
		require.NoError(t, err)
		pids[e.Name()] = pid
	}
	return pids
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

func freePort(t testing.TB) int { return testenv.FreePort(t) }

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	slices.Sort(lines)
	return lines
}
