package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/compiler/diag"
	"parc.dev/parc/internal/testenv"
	"parc.dev/parc/targets/launchplan"
	"parc.dev/parc/targets/megatron"
	"parc.dev/parc/targets/slurm"
	"parc.dev/parc/targets/template"
)

// launchBinary builds the parc CLI when it has the launch command, else the
// launcher's stand-in with the same flags (launcher/internal/testmain).
func launchBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	parc := filepath.Join(dir, "parc")
	if exec.Command("go", "build", "-o", parc, "parc.dev/parc/cmd/parc").Run() == nil &&
		exec.Command(parc, "launch", "--help").Run() == nil {
		return parc
	}
	stand := filepath.Join(dir, "parc-launch")
	out, err := exec.Command("go", "build", "-o", stand, "parc.dev/parc/launcher/internal/testmain").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Log("cmd/parc has no launch command yet: using launcher/internal/testmain")
	return stand
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The tiny GPT example on 2 nodes × 4 (fake) GPUs, tp 2 · pp 2 · dp 2,
// compiled in `parc launch` mode and submitted with its own submit.sbatch:
// srun starts one launcher per node, each starts its 4 gloo workers, and
// every worker creates every group of launch.json and all-reduces in it.
func TestGlooThroughSubmitSbatch(t *testing.T) {
	testenv.NeedSlurm(t)
	testenv.NeedTorch(t)
	t0 := time.Now()
	bin := launchBinary(t)
	t.Logf("binary built in %s", time.Since(t0))
	worker, err := filepath.Abs("../../testdata/gloo_worker.py")
	require.NoError(t, err)

	p, diags := compiler.Vet(compiler.Source{Path: "../../../examples/tiny-gpt-local.cue"})
	require.False(t, diags.HasErrors(), "%v", diags)
	s := p.Spec
	s.Cluster.GPUsPerNode = 4
	s.Launch.Launcher, s.Launch.ParcBinary = "parc", bin
	s.Launch.Python, s.Launch.Program = "python3", worker
	s.Launch.MasterPort = freePort(t)
	p, diags = compiler.Resolve(p.Source, &s, diag.NoPos)
	require.False(t, diags.HasErrors(), "%v", diags)

	dir := t.TempDir()
	args, ds := megatron.Args(p, nil)
	require.Empty(t, ds)
	script, err := slurm.Render(p, template.Builtin())
	require.NoError(t, err)
	lp := launchplan.Build(p.Layout, megatron.Env(p), megatron.Command(p, args), p.Spec.Launch.MasterPort)
	for name, data := range map[string][]byte{
		megatron.ArgsFile: megatron.File(args), slurm.ScriptName: script, slurm.LaunchFile: launchplan.Encode(lp),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	require.Contains(t, string(script), `"$PARC" launch --plan`)

	logFile := filepath.Join(dir, "job.out")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	sb := exec.CommandContext(ctx, "sbatch", "--parsable", "--wait", "--output="+logFile, slurm.ScriptName)
	sb.Dir = dir
	t1 := time.Now()
	out, err := sb.CombinedOutput()
	t.Logf("sbatch --wait took %s", time.Since(t1))
	log, _ := os.ReadFile(logFile)
	if ctx.Err() != nil {
		_ = exec.Command("scancel", "--name="+p.Spec.Model.Name).Run()
	}
	require.NoError(t, err, "sbatch: %s\njob log:\n%s", out, log)

	// Each launcher checked the node before starting: Slurm's node count,
	// and 4 GPUs from the allocation.
	for n := range 2 {
		assert.Contains(t, string(log), fmt.Sprintf("parc launch: node %d of 2: ranks %s of 8, master n1:%d, 4 GPUs",
			n, []string{"0,1,2,3", "4,5,6,7"}[n], p.Spec.Launch.MasterPort))
	}
	plan, err := launchplan.Decode(mustRead(t, filepath.Join(dir, slurm.LaunchFile)))
	require.NoError(t, err)
	for _, n := range plan.Nodes {
		for _, w := range n.Workers {
			groups := 0
			for _, fam := range plan.Groups {
				for _, g := range fam {
					if slices.Contains(g, w.Rank) {
						groups++
					}
				}
			}
			assert.Contains(t, string(log), fmt.Sprintf("%d: OK rank=%d node=%d local=%d groups=%d\n",
				w.Rank, w.Rank, n.Index, w.LocalRank, groups))
		}
	}
	assert.NotContains(t, string(log), "FAIL")
	if t.Failed() {
		js, _ := json.Marshal(plan.Groups)
		t.Logf("groups %s\njob log:\n%s", js, log)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}
