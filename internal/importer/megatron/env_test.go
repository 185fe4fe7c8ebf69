package megatron

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportEnvironment: the environment a launch script gives its
// training command (what it exports before the command, and the command's
// own NAME=value prefixes) goes to launch.env with the value it has there,
// and from the compiled spec into launch.json's environment; what a spec
// cannot carry (a value the reader cannot know, an array, a variable parc's
// launch scripts set) is an import-env warning at its line.
func TestImportEnvironment(t *testing.T) {
	script := strings.Join([]string{
		"#!/bin/bash",
		"export NVTE_CUTEDSL_FUSED_GROUPED_MLP=1",          // 2
		"export PYTHONPATH=/opt/megatron:$PYTHONPATH",      // 3: unknown
		"NCCL_IB_HCA=mlx5_0",                               // 4
		"export NCCL_IB_HCA _HIDDEN LATER",                 // 5: exported after the assignment
		"_HIDDEN=3",                                        // 6: an exported name, assigned later
		"NCCL_IB_HCA=mlx5_1",                               // 7: an exported name, reassigned
		"NOT_EXPORTED=1",                                   // 8
		"export MASTER_ADDR=node001",                       // 9: parc's launch scripts set it
		"ARR=(a b)",                                        // 10
		"export ARR",                                       // 11: bash exports no arrays
		"if [[ $UNKNOWN == 1 ]]; then export BRANCH=1; fi", // 12: undecided
		"CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node 8 pretrain_gpt.py " + // 13
			"--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256 " +
			"--micro-batch-size 1 --global-batch-size 8 --train-iters 10 --tensor-model-parallel-size 2 --eval-interval 10 " +
			"--tokenizer-type NullTokenizer --vocab-size 1000 --mock-data --lr 1e-4",
		"export LATER=after", // 14: after the command
	}, "\n") + "\n"
	// declare -x exports as export does.
	script = strings.Replace(script, "#!/bin/bash", "declare -x DECLARED=yes", 1)
	res := Import([]byte(script), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	spec := string(res.Spec)
	for _, want := range []string{
		`NVTE_CUTEDSL_FUSED_GROUPED_MLP:\s+"1"\s+// the input's environment \(line 2\)`,
		`NCCL_IB_HCA:\s+"mlx5_1"\s+// the input's environment \(line 7\)`,
		`"_HIDDEN":\s+"3"`,
		`CUDA_DEVICE_MAX_CONNECTIONS:\s+"1"\s+// the input's environment \(line 13\)`,
		`DECLARED:\s+"yes"\s+// the input's environment \(line 1\)`,
	} {
		assert.Regexp(t, want, spec)
	}
	for _, absent := range []string{"PYTHONPATH", "NOT_EXPORTED", "MASTER_ADDR", "ARR", "LATER", "BRANCH"} {
		assert.NotContains(t, spec, absent)
	}
	// The compiled plan's environment has them (a hidden CUE field would not).
	assert.Equal(t, "1", res.Env["NVTE_CUTEDSL_FUSED_GROUPED_MLP"])
	assert.Equal(t, "3", res.Env["_HIDDEN"])
	assert.Equal(t, "mlx5_1", res.Env["NCCL_IB_HCA"])
	var lines []int
	for _, d := range res.Diags {
		if d.Code == "import-env" {
			lines = append(lines, d.Line)
		}
	}
	assert.Equal(t, []int{3, 9, 10, 12}, lines, "%v", res.Diags)

	// A check on the carried environment reports at the export's line.
	res = Import([]byte("export PATH=/opt/bin\n"+strings.SplitN(script, "\n", 14)[12]+"\n"), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	var at []int
	for _, d := range res.Diags {
		if d.Code == "env-path" {
			at = append(at, d.Line, d.Column)
		}
	}
	assert.Equal(t, []int{1, 13}, at, "%v", res.Diags)
}
