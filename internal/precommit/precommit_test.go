package precommit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"parc.dev/parc/internal/testenv"
)

// plan is a complete, valid spec; bad breaks two rules in it.
const plan = `
model: {name: "tiny", layers: 4, hidden: 256, heads: 8, vocab: 1024}
cluster: {
	nodes: 1, gpus_per_node: 4
	gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}
	nvlink_gbps: 450, network_gbps: 50
}
parallel: {tp: %TP%, pp: 2}
train: {seq_length: 512, micro_batch: 1, global_batch: %GBS%, iters: 10}
data: {}
logging: {}
launch: {}
`

func spec(tp, gbs string) string {
	return strings.NewReplacer("%TP%", tp, "%GBS%", gbs).Replace(plan)
}

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if _, err := os.Stat(filepath.Join(root, ".pre-commit-hooks.yaml")); err != nil {
		t.Fatalf("no .pre-commit-hooks.yaml at %s: %v", root, err)
	}
	return root
}

func run(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestTryRepo runs Debian's `pre-commit try-repo` against this repository on
// a sample repository holding a good and a bad plan: the hook must pass the
// good one and fail the bad one with parc's diagnostics.
func TestTryRepo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds parc through pre-commit")
	}
	testenv.NeedCommand(t, "pre-commit", "git", "go")
	root := repoRoot(t)

	sample := t.TempDir()
	files := map[string]string{
		"plans/good.cue": spec("2", "8"),
		"plans/bad.cue":  spec("3", "7"), // tp 3 ∤ heads 8, and tp·pp = 6 > 4 GPUs
		"README.txt":     "not a plan\n",
	}
	for name, body := range files {
		p := filepath.Join(sample, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Keep pre-commit's caches inside the test, but reuse the module and
	// build caches so `go install ./...` does not download the world.
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"PRE_COMMIT_HOME="+filepath.Join(t.TempDir(), "pre-commit"),
		"GOMODCACHE="+strings.TrimSpace(string(modcache)),
		"GOCACHE="+strings.TrimSpace(string(gocache)),
		"GIT_AUTHOR_NAME=parc", "GIT_AUTHOR_EMAIL=parc@example.invalid",
		"GIT_COMMITTER_NAME=parc", "GIT_COMMITTER_EMAIL=parc@example.invalid",
	)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		if out, err := run(t, sample, env, "git", args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}

	// Offline (issue 12, item 20): the build uses the warm module cache.
	out, err := offline(t, sample, env, "pre-commit", "try-repo", root, "parc-vet", "--files", "plans/good.cue", "README.txt")
	if err != nil {
		t.Fatalf("the hook rejected a valid plan: %v\n%s", err, out)
	}
	if !strings.Contains(out, "parc vet") || !strings.Contains(out, "Passed") {
		t.Fatalf("the hook did not run on the good plan:\n%s", out)
	}

	out, err = offline(t, sample, env, "pre-commit", "try-repo", root, "parc-vet", "--files", "plans/bad.cue", "plans/good.cue")
	if err == nil {
		t.Fatalf("the hook accepted a plan with errors:\n%s", out)
	}
	for _, want := range []string{"Failed", "plans/bad.cue:", "error tp-heads", "error world-size"} {
		if !strings.Contains(out, want) {
			t.Errorf("hook output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "plans/good.cue:") && strings.Contains(line, ": error ") {
			t.Errorf("the good plan got an error: %s", line)
		}
	}
}

// sampleRepo is a git repository holding a good and a bad plan.
func sampleRepo(t *testing.T, env []string) string {
	t.Helper()
	sample := t.TempDir()
	for name, body := range map[string]string{
		"plans/good.cue": spec("2", "8"),
		"plans/bad.cue":  spec("3", "7"),
	} {
		p := filepath.Join(sample, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		if out, err := run(t, sample, env, "git", args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return sample
}

// offline runs name without network: in a new network namespace (unshare
// -n, which needs root) when it can, and always with Go's module proxy off
// and an unreachable HTTP proxy.
func offline(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	env = append(env, "GOPROXY=off", "GOSUMDB=off", "HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9",
		"http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9")
	if exec.Command("unshare", "-n", "true").Run() == nil {
		return run(t, dir, env, "unshare", append([]string{"-n", name}, args...)...)
	}
	t.Log("no network namespace (unshare -n): offline only through GOPROXY=off and a dead HTTP proxy")
	return run(t, dir, env, name, args...)
}

// Issue 12, item 20: the hook works without network. parc-vet-system uses
// the parc on PATH and needs no module at all (an empty module cache), in
// Debian's pre-commit with the network cut. (parc-vet, which builds parc
// from a warm module cache with GOPROXY=off, is TestTryRepo.)
func TestTryRepoOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds parc")
	}
	testenv.NeedCommand(t, "pre-commit", "git", "go")
	root := repoRoot(t)
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "parc"), "parc.dev/parc/cmd/parc").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	goenv := func(k string) string {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	base := append(os.Environ(),
		"GIT_AUTHOR_NAME=parc", "GIT_AUTHOR_EMAIL=parc@example.invalid",
		"GIT_COMMITTER_NAME=parc", "GIT_COMMITTER_EMAIL=parc@example.invalid",
		"GOCACHE="+goenv("GOCACHE"))

	for _, c := range []struct {
		hook string
		env  []string
	}{
		{"parc-vet-system", []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
			"GOMODCACHE=" + t.TempDir(), "PRE_COMMIT_HOME=" + t.TempDir()}},
		// parc-vet offline is TestTryRepo (a warm module cache, GOPROXY=off).
	} {
		t.Run(c.hook, func(t *testing.T) {
			env := append(append([]string{}, base...), c.env...)
			sample := sampleRepo(t, env)
			out, err := offline(t, sample, env, "pre-commit", "try-repo", root, c.hook, "--files", "plans/good.cue")
			if err != nil {
				t.Fatalf("offline, the hook failed on a valid plan: %v\n%s", err, out)
			}
			if !strings.Contains(out, "Passed") {
				t.Fatalf("the hook did not pass:\n%s", out)
			}
			out, err = offline(t, sample, env, "pre-commit", "try-repo", root, c.hook, "--files", "plans/bad.cue", "plans/good.cue")
			if err == nil {
				t.Fatalf("offline, the hook accepted a plan with errors:\n%s", out)
			}
			for _, want := range []string{"Failed", "plans/bad.cue:", "error tp-heads"} {
				if !strings.Contains(out, want) {
					t.Errorf("hook output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "ok  plans/good.cue") {
				t.Errorf("the hook runs parc vet -q, yet printed an ok line:\n%s", out)
			}
		})
	}
}
