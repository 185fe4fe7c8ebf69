package megatron

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recipeYAML is written in the form of Megatron-LM's training recipes
// (examples/moe_recipes/*.yaml on its dev branch at e5ad09802d:
// DEPENDENCIES, ENV_VARS, ARGS with option names in underscores), with a
// small model so the test compiles quickly.
const recipeYAML = `DEPENDENCIES:
  pytorch_base_image: nvcr.io/nvidia/pytorch:26.03-py3
ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: '1'
  NVTE_FUSED_ATTN: '1'
ARGS:
  num_layers: 4
  hidden_size: 256
  num_attention_heads: 4
  group_query_attention: true
  num_query_groups: 2
  normalization: RMSNorm
  norm_epsilon: 1e-6
  swiglu: true
  moe_router_pre_softmax: false
  seq_length: 256
  max_position_embeddings: 256
  micro_batch_size: 1
  global_batch_size: 16
  train_iters: 10
  eval_interval: 10
  lr: 3.0e-4
  tokenizer_type: NullTokenizer
  vocab_size: 32000
  mock_data: true
  tensor_model_parallel_size: 2
  sequence_parallel: true
  recompute_granularity: selective
  recompute_modules: core_attn mlp
  load: ${LOAD_PATH}
`

// recipeArgs is the same run as an argument list.
const recipeArgs = "CUDA_DEVICE_MAX_CONNECTIONS=1 NVTE_FUSED_ATTN=1 torchrun pretrain_gpt.py --num-layers 4 --hidden-size 256 " +
	"--num-attention-heads 4 --group-query-attention --num-query-groups 2 --normalization RMSNorm --norm-epsilon 1e-6 --swiglu " +
	"--seq-length 256 --max-position-embeddings 256 --micro-batch-size 1 --global-batch-size 16 --train-iters 10 --eval-interval 10 " +
	"--lr 3.0e-4 --tokenizer-type NullTokenizer --vocab-size 32000 --mock-data --tensor-model-parallel-size 2 --sequence-parallel " +
	"--recompute-granularity selective --recompute-modules core_attn mlp --load ${LOAD_PATH}\n"

// TestRecipeYAML: a Megatron-LM recipe imports as the argument list its ARGS
// say — true an option alone, false left out, a number as written, the
// values of an option that takes several split at blanks — with its
// ENV_VARS as the run's environment: the same spec as that argument list,
// each diagnostic at the recipe's line, a ${REFERENCE} its runner fills in
// kept with import-unresolved. A YAML file without ARGS is not a recipe.
func TestRecipeYAML(t *testing.T) {
	o := Options{File: "recipe.yaml", Cluster: "dgx_h100", Nodes: 1}
	res := Import([]byte(recipeYAML), o)
	require.NotNil(t, res.Spec, "%v", res.Diags)
	assert.False(t, res.Diags.HasErrors(), "%v", res.Diags)
	assert.Contains(t, strings.Join(res.Args, " "), "--norm-epsilon 1e-6 --swiglu --seq-length")
	assert.NotContains(t, res.Args, "--moe-router-pre-softmax")
	assert.Contains(t, strings.Join(res.Args, " "), "--recompute-modules core_attn mlp --load")
	var unresolved []string
	for _, d := range res.Diags {
		if d.Code == "import-unresolved" {
			unresolved = append(unresolved, d.Message)
			assert.Equal(t, [2]int{30, 9}, [2]int{d.Line, d.Column}, "at the value in the recipe")
		}
	}
	assert.Len(t, unresolved, 1)

	list := Import([]byte(recipeArgs), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	require.NotNil(t, list.Spec, "%v", list.Diags)
	assert.Equal(t, specBody(string(list.Spec)), specBody(string(res.Spec)))

	bad := Import([]byte(strings.Replace(recipeYAML, "  swiglu: true\n", "  swiglu: true\n  no_such_option: 3\n", 1)), o)
	assert.Nil(t, bad.Spec)
	require.Contains(t, bad.Diags.Codes(), "import-unknown-option", "%v", bad.Diags)
	for _, d := range bad.Diags {
		if d.Code == "import-unknown-option" {
			assert.Equal(t, [2]int{15, 3}, [2]int{d.Line, d.Column}, "at its key")
		}
	}

	notRecipe := Import([]byte("DEPENDENCIES:\n  x: 1\n"), o)
	assert.Equal(t, []string{"import-no-command"}, notRecipe.Diags.Codes())
}

// specBody is a spec's fields without comments, header lines and alignment.
func specBody(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "//"); i >= 0 {
			l = l[:i]
		}
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestFunctionalTestConfig: Megatron-LM's functional-test configs
// (tests/functional_tests/test_cases/*/model_config.yaml at d98e8a64) write
// MODEL_ARGS with the options as on the command line ("--num-layers": 4)
// and a value with blanks as one argument (--step-batch-size-schedule); they
// import as that argument list.
func TestFunctionalTestConfig(t *testing.T) {
	var b strings.Builder
	b.WriteString("ENV_VARS:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\n  NVTE_FUSED_ATTN: 1\nTEST_TYPE: regular\nMODEL_ARGS:\n  # Training args\n")
	for _, line := range strings.Split(strings.TrimPrefix(recipeYAML[strings.Index(recipeYAML, "ARGS:\n")+len("ARGS:\n"):], ""), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok || v == "false" {
			continue
		}
		b.WriteString("  --" + strings.ReplaceAll(k, "_", "-") + ": " + v + "\n")
	}
	res := Import([]byte(b.String()), Options{File: "model_config.yaml", Cluster: "dgx_h100", Nodes: 1})
	require.NotNil(t, res.Spec, "%v\n%s", res.Diags, b.String())
	list := Import([]byte(recipeArgs), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	assert.Equal(t, specBody(string(list.Spec)), specBody(string(res.Spec)))

	sched := Import([]byte(strings.Replace(b.String(), "  --global-batch-size: 16\n", "  --step-batch-size-schedule: \"0:16 2.4B:32\"\n", 1)),
		Options{File: "model_config.yaml", Cluster: "dgx_h100", Nodes: 1})
	assert.Contains(t, sched.Args, "0:16 2.4B:32", "one argument")
}
