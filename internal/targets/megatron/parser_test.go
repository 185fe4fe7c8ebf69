package megatron_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/testenv"
)

// TestMegatronParser runs the arguments of every example through Megatron-LM's
// own parse_args, validate_args and TransformerConfig (testdata/megatron_check.py).
// It needs a Megatron-LM checkout at the commit of options.tsv, named by
// MEGATRON_LM, and python3; Megatron-LM is not a package of this machine's
// registries, so the test is opt-in (see testdata/README.md).
func TestMegatronParser(t *testing.T) {
	root := testenv.MegatronLM(t)
	python := testenv.MegatronPython(t)
	dir := t.TempDir()
	for name, p := range examples(t) {
		args, diags := megatron.Args(p, nil)
		require.Empty(t, diags)
		file := filepath.Join(dir, name+".args")
		require.NoError(t, os.WriteFile(file, megatron.File(args), 0o644))
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(python, "testdata/megatron_check.py", strconv.Itoa(p.Derived.World), file)
			cmd.Env = append(os.Environ(), "MEGATRON_LM="+root)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.True(t, strings.HasPrefix(string(out), "ok "), "%s", out)
		})
	}
	t.Run("rejects", func(t *testing.T) {
		// The checker itself must fail on arguments Megatron rejects.
		bad := filepath.Join(dir, "bad.args")
		for _, args := range [][]string{
			{"--num-layers", "4", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "8", "--max-position-embeddings", "8", "--micro-batch-size", "1", "--train-iters", "1", "--mock-data", "--no-such-flag"},
			{"--num-layers", "4", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "8", "--max-position-embeddings", "8", "--micro-batch-size", "1", "--train-iters", "1", "--train-samples", "8", "--mock-data"},
			{"--num-layers", "4", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "8", "--max-position-embeddings", "8", "--micro-batch-size", "1", "--train-iters", "1", "--mock-data", "--normalization", "rmsnorm"},
		} {
			require.NoError(t, os.WriteFile(bad, megatron.File(args), 0o644))
			cmd := exec.Command(python, "testdata/megatron_check.py", "1", bad)
			cmd.Env = append(os.Environ(), "MEGATRON_LM="+root)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "accepted %v: %s", args, out)
			require.Contains(t, string(out), "FAIL")
		}
	})
}
