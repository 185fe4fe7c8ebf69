package megatron

import (
	"os"
	"parc.dev/parc/internal/testenv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPresetOverrideComment: a value the arguments leave to Megatron's
// default, written over a preset's, says what the preset has (ModelOpt's
// Qwen3-30B-A3B arguments give no --norm-epsilon: Megatron's 1e-5 replaces
// the model's published 1e-6).
func TestPresetOverrideComment(t *testing.T) {
	b, err := os.ReadFile("testdata/corpus/qwen3_30b_a3b_sft.args")
	require.NoError(t, err)
	res := Import(b, Options{File: "qwen3_30b_a3b_sft.args", Nodes: 2, GPUsPerNode: 8})
	require.Contains(t, string(res.Spec), "model: models.qwen3_30b_a3b & {")
	require.Regexp(t, `norm_epsilon: +1e-05 // not in the arguments: Megatron's default \(models\.qwen3_30b_a3b has 1e-06\)`, string(res.Spec))
}

// TestDensePresetMatch: a dense model's arguments match a dense preset (the
// expert size derived for MoE models is not added to a dense one). Megatron-
// Bridge's Llama 3.1 405B recipe is exactly models.llama3_405b, and
// ModelOpt's Qwen3-8B arguments are models.qwen3_8b.
func TestDensePresetMatch(t *testing.T) {
	for file, want := range map[string]string{
		"bridge_llama31_405b_h100_bf16.args": "model: models.llama3_405b\n",
		"qwen3_8b_sft.args":                  "model: models.qwen3_8b & {",
	} {
		b, err := os.ReadFile("testdata/corpus/" + file)
		require.NoError(t, err)
		h := testenv.ArgsHeader(string(b))
		res := Import(b, headerOptions(t, file, h))
		require.Contains(t, string(res.Spec), want, file)
	}
}
