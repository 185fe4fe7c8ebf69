package megatron

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
	mg "parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/testenv"
)

// TestCorpusRoundTrip imports every real configuration of testdata/corpus
// (argument lists from public launch scripts and recipes; each file's
// header names its source and commit). Each one either
//
//   - imports, compiles, and the compiled arguments give Megatron's parser
//     (replayed from options.tsv/defaults.tsv, see megatron.Parse) the same
//     namespace as the input — every dest, up to the values Megatron derives
//     for dests the input leaves out (Compare); or
//   - is rejected (header "expect: rejected CODE") with the code parc
//     reports, for a reason the header shows Megatron also rejects.
func TestCorpusRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*.args")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 3)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".args"), func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			h := testenv.ArgsHeader(string(b))
			require.NotEmpty(t, h["source"], "the header names the source")
			require.NotEmpty(t, h["commit"], "the header names the commit")
			o := headerOptions(t, f, h)
			res := Import(b, o)
			expect := first(h["expect"])
			if code, ok := strings.CutPrefix(expect, "rejected "); ok {
				require.Contains(t, res.Diags.Codes(), code, "%v", res.Diags)
				require.NotEmpty(t, h["megatron"], "the header quotes Megatron's verdict")
				return
			}
			require.Equal(t, "round-trip", expect)
			known := map[string]bool{}
			for _, k := range h["known-false-rejection"] {
				code, _, _ := strings.Cut(k, " ")
				known[code] = true
			}
			for _, d := range res.Diags {
				if d.Severity == diag.Error && known[d.Code] {
					t.Logf("known false rejection (issue 13): %s", d)
					continue
				}
				require.NotEqual(t, diag.Error, d.Severity, "%s\n%s", d, res.Spec)
			}
			require.NotNil(t, res.Compiled, "%s", res.Spec)
			in, errs := mg.Parse(res.Args)
			require.Empty(t, errs)
			out, errs := mg.Parse(res.Compiled)
			require.Empty(t, errs)
			diffs := Compare(in, out, res.World)
			require.Empty(t, diffs, "compiled: %q\nspec:\n%s", res.Compiled, res.Spec)
		})
	}
}

// headerOptions are HeaderOptions of a corpus file's header.
func headerOptions(t *testing.T, f string, h map[string][]string) Options {
	o, err := HeaderOptions(f, h)
	require.NoError(t, err)
	return o
}

func first(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// TestCorpusMegatronAccepts runs the compiled arguments of every imported
// corpus configuration through Megatron-LM's own parse_args, validate_args
// and TransformerConfig (targets/megatron/testdata/megatron_check.py). Opt-in:
// MEGATRON_LM names a Megatron-LM checkout at the commit of options.tsv and
// python3 needs the packaging module (see targets/megatron/testdata/README.md).
func TestCorpusMegatronAccepts(t *testing.T) {
	root := testenv.MegatronLM(t)
	python := testenv.MegatronPython(t)
	checker, err := filepath.Abs("../../targets/megatron/testdata/megatron_check.py")
	require.NoError(t, err)
	files, err := filepath.Glob("testdata/corpus/*.args")
	require.NoError(t, err)
	dir := t.TempDir()
	// Imports grouped by what the checker's process shares (the world size
	// and the launch environment), so Megatron is imported once per group.
	type group struct {
		world int
		env   map[string]string
		files []string
	}
	groups := map[string]*group{}
	results := map[string]string{} // file -> the checker's line
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		h := testenv.ArgsHeader(string(b))
		if first(h["expect"]) != "round-trip" {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".args")
		res := Import(b, headerOptions(t, f, h))
		require.NotNil(t, res.Compiled, "%s", name)
		file := filepath.Join(dir, name+".args")
		require.NoError(t, os.WriteFile(file, []byte(strings.Join(res.Compiled, "\n")+"\n"), 0o644))
		// The input itself is a configuration Megatron accepts, too.
		input := filepath.Join(dir, name+".input.args")
		require.NoError(t, os.WriteFile(input, []byte(strings.Join(res.Args, "\n")+"\n"), 0o644))
		key := strconv.Itoa(res.World)
		for _, k := range slices.Sorted(maps.Keys(res.Env)) {
			key += "\x00" + k + "=" + res.Env[k]
		}
		g := groups[key]
		if g == nil {
			g = &group{world: res.World, env: res.Env}
			groups[key] = g
		}
		g.files = append(g.files, input, file)
		names = append(names, name)
	}
	for _, g := range groups {
		cmd := exec.Command(python, append([]string{checker, strconv.Itoa(g.world)}, g.files...)...)
		// the environment parc's launch gives the workers
		cmd.Env = append(os.Environ(), "MEGATRON_LM="+root, "CUDA_DEVICE_MAX_CONNECTIONS="+g.env["CUDA_DEVICE_MAX_CONNECTIONS"])
		for k, v := range g.env {
			if k != "CUDA_DEVICE_MAX_CONNECTIONS" {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		out, _ := cmd.CombinedOutput() // exit 1 when a file fails: each file's line says which
		for line := range strings.Lines(string(out)) {
			for _, f := range g.files {
				if strings.HasPrefix(line, "ok "+f+"\n") || strings.HasPrefix(line, "FAIL "+f+":") {
					results[f] = strings.TrimSpace(line)
				}
			}
		}
		for _, f := range g.files {
			if _, ok := results[f]; !ok {
				results[f] = "no verdict: " + string(out)
			}
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for _, f := range []string{filepath.Join(dir, name+".input.args"), filepath.Join(dir, name+".args")} {
				require.True(t, strings.HasPrefix(results[f], "ok "), "%s", results[f])
			}
		})
	}
}
