package megatron

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	mg "parc.dev/parc/internal/targets/megatron"
)

// TestRulesNameMegatronDests: every dest the explicit rules read is a dest
// of Megatron's parser (options.tsv), under every branch the rules take.
func TestRulesNameMegatronDests(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--group-query-attention", "--swiglu", "--normalization", "RMSNorm", "--use-rope-scaling", "--multi-latent-attention",
			"--mtp-num-layers", "1", "--num-experts", "8", "--moe-shared-expert-intermediate-size", "8", "--tensor-model-parallel-size", "2",
			"--use-tp-pp-dp-mapping", "--num-virtual-stages-per-pipeline-rank", "2", "--fp8-format", "hybrid", "--recompute-granularity", "full",
			"--data-path", "x", "--save", "y", "--moe-layer-freq", "([0]*1+[1]*3)"},
		{"--fp16", "--rotary-scaling-factor", "4", "--multi-latent-attention", "--squared-relu"},
	} {
		ns, errs := mg.Parse(args)
		require.Empty(t, errs)
		m := &mapper{ns: ns, claimed: map[string]bool{}, s: theSchema(), unknown: map[string]bool{}}
		m.explicit()
		require.Empty(t, slices.Sorted(maps.Keys(m.unknown)))
		for d := range m.claimed {
			_, ok := mg.Defaults[d]
			require.True(t, ok, "claims %s, not a dest of Megatron's parser", d)
		}
		for _, a := range m.out {
			_, ok := m.s.field(a.path)
			require.True(t, ok, "%s is not a spec field", a.path)
		}
	}
}

// TestMegatronRejectsVirtualPipelineForms: the forms of the virtual pipeline
// arguments validate_args asserts on are import errors; a layout alone is not.
func TestMegatronRejectsVirtualPipelineForms(t *testing.T) {
	base := "--pipeline-model-parallel-size 2 "
	for _, c := range []struct {
		args   string
		reject bool
	}{
		{"--pipeline-model-parallel-layout Et*2|t*2|t*2|t*2L", false},
		// equal to what the layout implies, and Megatron still rejects it
		{"--pipeline-model-parallel-layout Et*2|t*2|t*2|t*2L --num-virtual-stages-per-pipeline-rank 2", true},
		{"--pipeline-model-parallel-layout Et*2|t*2|t*2|t*2L --num-virtual-stages-per-pipeline-rank 4", true},
		{"--num-layers-per-virtual-pipeline-stage 2 --num-virtual-stages-per-pipeline-rank 2", true},
		{"--num-layers-per-virtual-pipeline-stage 2", false},
		{"--num-layers-per-virtual-pipeline-stage 3", true},
		{"--num-layers-per-virtual-pipeline-stage 2 --decoder-first-pipeline-num-layers 2", true},
	} {
		res := importTiny(base + c.args)
		require.Equal(t, c.reject, slices.Contains(res.Diags.Codes(), "import-megatron-rejects"), "%s: %v", c.args, res.Diags)
	}
}

// TestImportCPUOffloading: --cpu-offloading-num-layers becomes
// train.cpu_offloading_num_layers (issue 13's naming rule), not an extra
// argument, and the import round-trips.
func TestImportCPUOffloading(t *testing.T) {
	res := importClean(t, "--cpu-offloading-num-layers 3")
	require.Contains(t, string(res.Spec), "cpu_offloading_num_layers: 3")
}

// TestImportSlidingWindow: GPT-OSS's attention options (Megatron-LM
// examples/gptoss/02_train.sh at d98e8a64: --window-size, --window-attn-skip-freq,
// --softmax-type) become model.window_size, model.window_attn_skip_freq and
// model.softmax_type (issue 13's naming rule), and the import round-trips
// through the arguments parc generates from them.
func TestImportSlidingWindow(t *testing.T) {
	res := importClean(t, "--window-size 127,0 --window-attn-skip-freq 2 --softmax-type learnable")
	spec := strings.Join(strings.Fields(string(res.Spec)), " ") // the renderer aligns comments
	for _, want := range []string{"window_size: [127, 0]", "window_attn_skip_freq: 2", `softmax_type: "learnable"`} {
		require.Contains(t, spec, want)
	}
}

// TestImportOffloadingFields: fine-grained activation offloading and the
// deferred output-layer wgrad become their spec fields (train.*,
// parallel.*), not extra arguments, and the import round-trips.
func TestImportOffloadingFields(t *testing.T) {
	res := importClean(t, "--pipeline-model-parallel-size 2 "+
		"--fine-grained-activation-offloading --offload-modules core_attn attn_proj --activation-offload-fraction 0.5 "+
		"--min-offloaded-tensor-size 4096 --defer-embedding-wgrad-compute --wgrad-deferral-limit 2")
	for _, want := range []string{"fine_grained_activation_offloading: true", `offload_modules: ["core_attn", "attn_proj"]`,
		"activation_offload_fraction: 0.5", "min_offloaded_tensor_size: 4096", "defer_embedding_wgrad_compute: true", "wgrad_deferral_limit: 2"} {
		require.Contains(t, strings.Join(strings.Fields(string(res.Spec)), " "), want)
	}
}

// TestImportCUDAGraphScope: --cuda-graph-scope, Megatron's deprecated
// spelling of --cuda-graph-modules (dest cuda_graph_scope_deprecated at
// d98e8a64) that Megatron-Bridge's performance recipes still write, becomes
// kernels.cuda_graph_scope (which compiles back to it), not an extra
// argument the estimate cannot see.
func TestImportCUDAGraphScope(t *testing.T) {
	res := importClean(t, "--cuda-graph-impl transformer_engine --cuda-graph-scope attn mlp")
	require.Contains(t, strings.Join(strings.Fields(string(res.Spec)), " "), `cuda_graph_scope: ["attn", "mlp"]`)
}

// TestImportRecomputeActivations: --recompute-activations, which
// validate_args turns into recompute_granularity 'selective' (over any
// granularity given) and deletes (arguments.py at d98e8a64), becomes
// train.recompute "selective", so the estimate and the memory model see the
// recomputation the run does; it was an extra argument beside recompute
// "none".
func TestImportRecomputeActivations(t *testing.T) {
	for _, extra := range []string{"--recompute-activations", "--recompute-activations --recompute-granularity full"} {
		res := importClean(t, extra)
		require.Contains(t, strings.Join(strings.Fields(string(res.Spec)), " "), `recompute: "selective"`, extra)
	}
}

// TestImportDeprecatedCUDAGraphFlags: --enable-cuda-graph and
// --external-cuda-graph, which validate_args turns into cuda_graph_impl
// "local" and "transformer_engine" and deletes (arguments.py at d98e8a64),
// become kernels.cuda_graph_impl; they were extra arguments the estimate
// could not see.
func TestImportDeprecatedCUDAGraphFlags(t *testing.T) {
	for flag, impl := range map[string]string{"--enable-cuda-graph": "local", "--external-cuda-graph": "transformer_engine"} {
		res := importClean(t, flag)
		require.Contains(t, strings.Join(strings.Fields(string(res.Spec)), " "), `cuda_graph_impl: "`+impl+`"`, flag)
	}
}

// TestImportLegacyRoPE: --use-rotary-position-embeddings, for which
// validate_args sets position_embedding_type 'rope' (arguments.py at
// d98e8a64), becomes model.position_embedding "rope"; it was an extra
// argument beside learned absolute position embeddings, which the
// parameter count and memory then held.
func TestImportLegacyRoPE(t *testing.T) {
	res := importClean(t, "--use-rotary-position-embeddings")
	require.Contains(t, strings.Join(strings.Fields(string(res.Spec)), " "), `position_embedding: "rope"`)
}

// tinyArgs is a small dense model's complete argument list.
const tinyArgs = "--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 " +
	"--micro-batch-size 1 --global-batch-size 8 --train-iters 10 --lr 1e-4 --eval-interval 10 --mock-data " +
	"--tokenizer-type NullTokenizer --vocab-size 1024 "

// importTiny imports tinyArgs and extra (space-separated) onto one DGX H100.
func importTiny(extra string) Result {
	return Import([]byte(strings.ReplaceAll(tinyArgs+extra, " ", "\n")), Options{Cluster: "dgx_h100", Nodes: 1})
}

// importClean is importTiny of a plan that must import as it is: a spec,
// no extra argument, the round trip exact and nothing Megatron rejects.
func importClean(t *testing.T, extra string) Result {
	t.Helper()
	res := importTiny(extra)
	require.NotNil(t, res.Spec, "%v", res.Diags)
	for _, c := range []string{"import-extra-arg", "import-not-round-trip", "import-megatron-rejects"} {
		require.NotContains(t, res.Diags.Codes(), c, "%v", res.Diags)
	}
	return res
}

// TestImportOptimizerCPUOffload: --optimizer-cpu-offload and its fraction
// and overlap become train fields, so the memory model keeps the offloaded
// optimizer state off the GPU (it was an extra argument, and a run that
// needs it was judged not to fit); without --use-precision-aware-optimizer
// Megatron rejects the run (validate_args), and so does parc.
func TestImportOptimizerCPUOffload(t *testing.T) {
	res := importClean(t, "--use-distributed-optimizer --use-precision-aware-optimizer --optimizer-cpu-offload --optimizer-offload-fraction 0.4 --overlap-cpu-optimizer-d2h-h2d")
	spec := strings.Join(strings.Fields(string(res.Spec)), " ")
	for _, f := range []string{"optimizer_cpu_offload: true", "optimizer_offload_fraction: 0.4", "overlap_cpu_optimizer_d2h_h2d: true"} {
		require.Contains(t, spec, f)
	}
	res = importTiny("--use-distributed-optimizer --optimizer-cpu-offload")
	require.Contains(t, res.Diags.Codes(), "optimizer-cpu-offload", "%v", res.Diags)
}

// TestImportOptimizer: --optimizer becomes train.optimizer (it was an extra
// argument, so the memory model kept Adam's two moments for a run with one
// momentum buffer); the deprecated dist_muon, which validate_args turns into
// muon with the layer-wise distributed optimizer (arguments.py at d98e8a64),
// becomes muon with train.distributed_optimizer, whose arguments Megatron
// derives the same plan from. Muon with Megatron-FSDP is rejected by
// Megatron (validate_args) and by parc.
func TestImportOptimizer(t *testing.T) {
	for extra, want := range map[string][]string{
		"--optimizer sgd": {`optimizer: "sgd"`},
		"--optimizer muon --use-distributed-optimizer":                                  {`optimizer: "muon"`, "distributed_optimizer: true"},
		"--optimizer dist_muon":                                                         {`optimizer: "muon"`, "distributed_optimizer: true"},
		"--optimizer muon --use-distributed-optimizer --no-use-layer-wise-param-layout": {`optimizer: "muon"`, "layer_wise_param_layout: false"},
	} {
		spec := strings.Join(strings.Fields(string(importClean(t, extra).Spec)), " ")
		for _, f := range want {
			require.Contains(t, spec, f, extra)
		}
	}
	res := importTiny("--optimizer muon --use-megatron-fsdp --ckpt-format fsdp_dtensor")
	require.Contains(t, res.Diags.Codes(), "optimizer-options", "%v", res.Diags)
}

// TestImportOptimizerParcLacks: a value the spec's field does not take
// (--moe-router-score-function sqrtsoftplus: model.moe.score_function takes
// softmax and sigmoid) stays an extra argument, and the warning says that
// the field exists but not the value; Megatron-Core's emerging optimizers
// lion, adaptive_muon and soap are values train.optimizer takes.
func TestImportOptimizerParcLacks(t *testing.T) {
	for _, o := range []string{"lion", "adaptive_muon", "soap"} {
		require.Regexp(t, `optimizer:\s+"`+o+`"`, string(importClean(t, "--optimizer "+o+" --use-distributed-optimizer").Spec))
	}
	res := importTiny("--moe-router-score-function sqrtsoftplus")
	require.NotNil(t, res.Spec, "%v", res.Diags)
	require.Contains(t, strings.Join(strings.Fields(string(res.Spec)), " "), `"--moe-router-score-function", "sqrtsoftplus"`)
	var msg string
	for _, d := range res.Diags {
		if d.Code == "import-extra-arg" {
			msg = d.Message
		}
	}
	require.Equal(t, "--moe-router-score-function 'sqrtsoftplus' is not a value model.moe.score_function takes: carried in launch.extra_args", msg)
}

// TestImportActivations: --squared-relu and --quick-geglu are activations
// of the spec (they were extra arguments); --squared-relu wins over
// --quick-geglu as core_transformer_config_from_args takes them (the spec
// has the one activation, and the round trip keeps --quick-geglu as an
// extra argument), and either with --swiglu is rejected (its assert, rule
// S17).
func TestImportActivations(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--squared-relu --disable-bias-linear", `activation: "squared_relu"`},
		{"--quick-geglu", `activation: "quick_geglu"`},
	} {
		res := importClean(t, c.args)
		require.Contains(t, string(res.Spec), c.want, c.args)
	}
	res := importTiny("--squared-relu --quick-geglu --disable-bias-linear")
	require.Contains(t, string(res.Spec), `activation: "squared_relu"`)
	require.Contains(t, string(res.Spec), `"--quick-geglu"`)
	for _, a := range []string{"--swiglu --squared-relu", "--quick-geglu --swiglu"} {
		res := importTiny(a)
		require.Contains(t, res.Diags.Codes(), "import-megatron-rejects", a)
	}
}

// TestImportBatchSchedule: with --step-batch-size-schedule Megatron takes no
// --global-batch-size, and the spec's train.global_batch is the schedule's
// first phase as Megatron reads it: entries sorted by their token threshold,
// whatever order the script writes them in (the first written here is the
// later phase).
func TestImportBatchSchedule(t *testing.T) {
	args := strings.ReplaceAll("--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "+
		"--micro-batch-size 1 --train-samples 100000 --lr 1e-4 --eval-interval 10 --mock-data --tokenizer-type NullTokenizer --vocab-size 1024 "+
		"--step-batch-size-schedule", " ", "\n") + "\n1M:16 0:8\n"
	res := Import([]byte(args), Options{Cluster: "dgx_h100", Nodes: 1})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	spec := strings.Join(strings.Fields(string(res.Spec)), " ")
	require.Contains(t, spec, "global_batch: 8", "%s", res.Spec)
	require.Contains(t, spec, `step_batch_size_schedule: "1M:16 0:8"`)
	for _, c := range []string{"batch-schedule", "batch-schedule-iterations", "import-not-round-trip", "import-megatron-rejects"} {
		require.NotContains(t, res.Diags.Codes(), c, "%v", res.Diags)
	}
}
