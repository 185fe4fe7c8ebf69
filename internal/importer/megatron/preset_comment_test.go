package megatron

import (
	"os"
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
