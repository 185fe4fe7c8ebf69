//go:build linux

package launcher

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/testenv"
	"parc.dev/parc/launchplan"
)

// fixtureWithPort loads a launch.json fixture, gives it a free master port
// and writes it to a temporary directory.
func fixtureWithPort(t *testing.T, name string) (string, *launchplan.File) {
	t.Helper()
	f := decodeFixture(t, name)
	f.MasterPort = freePort(t)
	return writePlan(t, f), f
}

// expectedOK is, per rank, the line gloo_worker.py prints when every group
// of the plan checked out: the number of groups the rank belongs to.
// decodeFixture reads a fixture with its groups (LoadPlan drops them).
func decodeFixture(t *testing.T, name string) *launchplan.File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	f, err := launchplan.Decode(data)
	require.NoError(t, err)
	require.NoError(t, launchplan.Check(f))
	return f
}

func expectedOK(f *launchplan.File) map[int]string {
	want := map[int]string{}
	for _, n := range f.Nodes {
		for _, w := range n.Workers {
			groups := 0
			for _, fam := range f.Groups {
				for _, g := range fam {
					if slices.Contains(g, w.Rank) {
						groups++
					}
				}
			}
			want[w.Rank] = fmt.Sprintf("OK rank=%d node=%d local=%d groups=%d", w.Rank, n.Index, w.LocalRank, groups)
		}
	}
	return want
}

// waitProc waits for a launcher process, stopping it with SIGTERM (which it
// forwards) when it runs longer than d.
func waitProc(cmd *exec.Cmd, d time.Duration) error {
	timer := time.AfterFunc(d, func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
	defer timer.Stop()
	return cmd.Wait()
}

func gpuList(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	return strings.Join(ids, ",")
}

// Real PyTorch workers (gloo, env://) on two local "nodes", one launcher
// process each: every group of launch.json is created with new_group and
// all-reduced in, so membership and rank placement must match the plan.
func TestTorchGlooGroupsMatchPlan(t *testing.T) {
	python := testenv.Python(t)
	worker, err := filepath.Abs("testdata/gloo_worker.py")
	require.NoError(t, err)
	for _, fixture := range []string{"plan-2x2-tp2-dp2.json", "plan-2x2-tp2-pp2.json"} {
		t.Run(fixture, func(t *testing.T) {
			path, plan := fixtureWithPort(t, fixture)
			env := cleanEnv("CUDA_VISIBLE_DEVICES="+gpuList(plan.GPUsPerNode), "GLOO_SOCKET_IFNAME=lo")
			var cmds []*exec.Cmd
			var outs, errs []*testenv.SyncBuffer
			for _, n := range plan.Nodes {
				cmd, out, errb := startLauncherProcess(t, childOptions{
					Plan: path, NodeRank: intp(n.Index), MasterAddr: "127.0.0.1", GraceMS: intp(3000),
					Command: []string{python, worker},
				}, env)
				cmds, outs, errs = append(cmds, cmd), append(outs, out), append(errs, errb)
			}
			for i, cmd := range cmds {
				assert.NoError(t, waitProc(cmd, 90*time.Second), "node %d:\n%s\n%s", i, outs[i], errs[i])
			}
			var all strings.Builder
			for i := range cmds {
				all.WriteString(outs[i].String())
			}
			for rank, line := range expectedOK(plan) {
				assert.Contains(t, all.String(), line, "rank %d", rank)
			}
			assert.NotContains(t, all.String(), "FAIL")
		})
	}
}

// The fixtures were written by hand from Megatron-LM's RankGenerator
// (megatron/core/parallel_state.py at d98e8a64); the
// same degrees through the layout and launchplan packages must give the
// same groups (two independent derivations).
func TestFixturesMatchLayout(t *testing.T) {
	for name, cfg := range fixtureLayouts {
		t.Run(name, func(t *testing.T) {
			f := decodeFixture(t, name)
			built, err := buildFixture(cfg)
			require.NoError(t, err)
			got, _ := json.Marshal(f.Groups)
			want, _ := json.Marshal(built.Groups)
			assert.JSONEq(t, string(want), string(got))
			assert.Equal(t, built.Nodes, f.Nodes)
			assert.Equal(t, built.Order, f.Order)
		})
	}
}
