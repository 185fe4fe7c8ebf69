package slurm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/targets/slurm"
	"parc.dev/parc/internal/targets/template"
	"parc.dev/parc/internal/testenv"
)

var launchers = []string{"torchrun", "srun", "parc"}

func render(t *testing.T, p *plan.Plan) string {
	t.Helper()
	out, err := slurm.Render(p, template.Builtin())
	require.NoError(t, err)
	return string(out)
}

// directives returns the #SBATCH lines of a script, without the prefix.
func directives(script string) []string {
	var out []string
	for line := range strings.Lines(script) {
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "#SBATCH "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestDirectives(t *testing.T) {
	p := tiny(t, func(s *spec.Spec) {
		sl := s.Cluster.Slurm
		sl.Account, sl.QOS, sl.Constraint, sl.Mem = ptr("acct"), ptr("high"), ptr("h100&ib"), ptr("0")
		sl.Output, sl.Error, sl.Requeue = ptr("logs/%x-%j.out"), ptr("/l o g/%j.err"), true
		sl.Extra = []string{"--mail-type=END", "--comment=two words"}
	})
	got := directives(render(t, p))
	want := []string{
		"--job-name=tiny-gpt", "--nodes=2", "--ntasks-per-node=1", "--gpus-per-node=8",
		"--cpus-per-task=8", // 8 CPUs per node, one torchrun task per node
		"--mem=0", "--time=00:10:00", "--partition=gpu", "--account=acct", "--qos=high",
		`--constraint="h100&ib"`, "--exclusive", "--output=logs/%x-%j.out", `--error="/l o g/%j.err"`,
		"--requeue", "--open-mode=append", "--mail-type=END", `"--comment=two words"`,
	}
	assert.Equal(t, want, got)

	srun := directives(render(t, tiny(t, func(s *spec.Spec) { s.Launch.Launcher = "srun" })))
	assert.Contains(t, srun, "--ntasks-per-node=8", "one task per GPU")
	assert.Contains(t, srun, "--cpus-per-task=1", "8 CPUs over 8 tasks")

	// Slurm's --segment (topology/block, Slurm 24.05+; the local Slurm
	// 22.05 has no such option, so TestShellcheck checks the script).
	seg := directives(render(t, tiny(t, func(s *spec.Spec) { s.Cluster.Slurm.Segment = ptr(2) })))
	assert.Contains(t, seg, "--segment=2")
	assert.NotContains(t, directives(render(t, tiny(t, nil))), "--segment=2", "only when set")

	pre := directives(render(t, tiny(t, func(s *spec.Spec) { s.Cluster.Slurm.PreemptSignalSeconds = ptr(90) })))
	assert.Contains(t, pre, "--signal=B:USR2@90", "the batch shell gets USR2, not the workers")
	assert.Contains(t, pre, "--requeue")
	for _, d := range pre {
		assert.NotContains(t, d, "USR1", "NCCL owns SIGUSR1")
	}
}

func TestContainerOptions(t *testing.T) {
	p := tiny(t, func(s *spec.Spec) {
		s.Launch.Launcher = "srun"
		s.Launch.Container = &spec.Container{Image: "nvcr.io#nvidia/pytorch:24.01-py3", Mounts: []string{"/data:/data", "/my dir:/w"}, Workdir: ptr("/w")}
	})
	script := render(t, p)
	assert.Contains(t, script, `--container-image=nvcr.io#nvidia/pytorch:24.01-py3`)
	assert.Contains(t, script, `'--container-mounts=/data:/data,/my dir:/w'`)
	assert.Contains(t, script, `--container-workdir=/w`)
	plain := render(t, tiny(t, nil))
	assert.NotContains(t, plain, "--container")
}

func TestRenderIsDeterministic(t *testing.T) {
	for name, p := range examples(t) {
		a, b := render(t, p), render(t, p)
		assert.Equal(t, a, b, name)
		assert.NotContains(t, a, "/work/", "%s: no path of the compiling machine", name)
	}
}

func TestOverrideTemplate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "submit.sbatch.tmpl"),
		[]byte("#!/bin/bash\n#SBATCH --job-name={{sbatchq .JobName}}\n{{range .Env}}export {{.Name}}={{shq .Value}}\n{{end}}\n{{.Nope}}\n"), 0o644))
	_, err := slurm.Render(tiny(t, nil), template.New(os.DirFS(dir), "tpl"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tpl/submit.sbatch.tmpl:5:")
	assert.Contains(t, err.Error(), "Nope")
}

// TestShellcheck runs shellcheck on the batch script of every example in
// every launcher mode, with and without preemption handling and a container.
func TestShellcheck(t *testing.T) {
	testenv.NeedCommand(t, "shellcheck")
	dir := t.TempDir()
	var files []string
	for name, p := range examples(t) {
		for _, l := range launchers {
			for _, preempt := range []bool{false, true} {
				s := p.Spec
				s.Launch.Launcher = l
				if preempt {
					sl := spec.Slurm{Exclusive: true}
					if s.Cluster.Slurm != nil {
						sl = *s.Cluster.Slurm
					}
					sl.PreemptSignalSeconds = ptr(120)
					sl.Segment = ptr(s.Cluster.Nodes)
					s.Cluster.Slurm = &sl
					s.Launch.Container = &spec.Container{Image: "img", Mounts: []string{"/a b:/c"}}
					s.Launch.Workdir = ptr("/work dir")
					// Values that need every kind of quoting.
					sl.JobName = ptr(`x"; rm -rf ~; " $(id) 'q' \`)
					s.Cluster.Env = map[string]string{"ODD": "a'b\"c $d `e` \\"}
					s.Launch.Program = `/p a/t"h 'x' $y.py`
				}
				q := *p
				q.Spec = s
				f := filepath.Join(dir, strings.Join([]string{name, l, map[bool]string{true: "preempt", false: "plain"}[preempt]}, "-")+".sbatch")
				require.NoError(t, os.WriteFile(f, []byte(render(t, &q)), 0o644))
				files = append(files, f)
			}
		}
	}
	out, err := exec.Command("shellcheck", append([]string{"--severity=style", "--shell=bash"}, files...)...).CombinedOutput()
	assert.NoError(t, err, "%s", out)
}
