package megatron_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/testenv"
)

// parityBase is a small plan (world 16 = 2 × 8, tp 2, pp 2, 8 layers) the
// parity cases add fields to.
const parityBase = `
model: {layers: 8, hidden: 256, heads: 8, vocab: 4096, bias: *false | true}
cluster: {nodes: 2, gpus_per_node: 8, gpu: {name: *"H100" | string, memory_gib: *80 | number, bf16_tflops: *989 | number}, nvlink_gbps: 450, network_gbps: 50}
parallel: tp: 2 // pp: 2 unless the case sets pp
train: {seq_length: 512, micro_batch: 1, global_batch: 32, lr: 1e-3, min_lr: 1e-4}
`

// parityCases are plans using the fields of issue 13, each with the
// verdict Megatron-LM's own parse_args, validate_args and TransformerConfig
// give the arguments parc emits for it. TestMegatronParity checks both sides
// against that verdict: parc's vet and Megatron's validation.
var parityCases = []struct {
	name  string
	cue   string
	valid bool
}{
	{"memory-fields", `train: {precision: "fp8", fp8_param_gather: true, grad_reduce_in_bf16: true, distributed_optimizer: true, fp8_amax_history_len: 1024, fp8_amax_compute_algo: "max", fp8_margin: 0}`, true},
	{"fp8-param-gather-without-distopt", `train: {precision: "fp8", fp8_param_gather: true}`, false},
	{"fp4", `train: {precision: "fp4", distributed_optimizer: true}
cluster: gpu: {name: "B200", memory_gib: 180, bf16_tflops: 2250}`, true},
	{"fp4-param-gather", `train: {precision: "fp4", fp4_param_gather: true, distributed_optimizer: true}
cluster: gpu: {name: "B200", memory_gib: 180, bf16_tflops: 2250}`, true},
	{"fp4-param-gather-without-fp4", `train: {fp4_param_gather: true, distributed_optimizer: true}`, false},
	{"recompute-modules", `train: {recompute: "selective", recompute_modules: ["core_attn", "mlp", "layernorm"]}`, true},
	{"recompute-moe-act-dense", `train: {recompute: "selective", recompute_modules: ["moe_act"]}`, false},
	{"recompute-layernorm-fp8-delayed", `train: {precision: "fp8", recompute: "selective", recompute_modules: ["layernorm"]}`, false},
	{"recompute-mla-up-proj", `train: {recompute: "selective", recompute_modules: ["mla_up_proj"]}`, false},
	{"precision-aware", `train: {distributed_optimizer: true, precision_aware_optimizer: true, main_grads_dtype: "bf16", exp_avg_dtype: "bf16", exp_avg_sq_dtype: "bf16"}`, true},
	{"optimizer-dtype-without-precision-aware", `train: {distributed_optimizer: true, exp_avg_dtype: "bf16"}`, false},
	{"optimizer-muon-layer-wise", `train: {optimizer: "muon", distributed_optimizer: true}`, true},
	{"optimizer-sgd", `train: {optimizer: "sgd", distributed_optimizer: true}`, true},
	{"optimizer-muon-legacy-layer-wise", `train: {optimizer: "muon", distributed_optimizer: true, layer_wise_param_layout: false}`, true},
	{"optimizer-muon-blockwise", `train: {optimizer: "muon", distributed_optimizer: true, muon_tp_mode: "blockwise"}`, true},
	{"optimizer-lion-layer-wise", `train: {optimizer: "lion", distributed_optimizer: true}`, true},
	{"optimizer-lion", `train: optimizer: "lion"`, true},
	{"optimizer-lion-megatron-fsdp", `train: {optimizer: "lion", fsdp: true}`, false},
	{"optimizer-lion-precision-aware", `train: {optimizer: "lion", distributed_optimizer: true, precision_aware_optimizer: true}`, false},
	{"optimizer-soap-layer-wise", `train: {optimizer: "soap", distributed_optimizer: true}`, true},
	{"optimizer-soap-torch-dcp", `train: optimizer: "soap"
checkpoint: format: "torch_dcp"`, false},
	{"optimizer-adaptive-muon", `train: optimizer: "adaptive_muon"`, true},
	{"optimizer-adaptive-muon-megatron-fsdp", `train: {optimizer: "adaptive_muon", fsdp: true}`, false},
	{"optimizer-muon-megatron-fsdp", `train: {optimizer: "muon", fsdp: true}`, false},
	{"optimizer-muon-precision-aware", `train: {optimizer: "muon", distributed_optimizer: true, precision_aware_optimizer: true}`, false},
	{"optimizer-sgd-precision-aware", `train: {optimizer: "sgd", distributed_optimizer: true, precision_aware_optimizer: true}`, false},
	{"optimizer-cpu-offload", `train: {distributed_optimizer: true, precision_aware_optimizer: true, optimizer_cpu_offload: true, optimizer_offload_fraction: 0.5, overlap_cpu_optimizer_d2h_h2d: true}`, true},
	{"optimizer-cpu-offload-without-precision-aware", `train: {distributed_optimizer: true, optimizer_cpu_offload: true}`, false},
	{"optimizer-cpu-offload-fp8-param-gather-delayed", `train: {precision: "fp8", fp8_recipe: "delayed", fp8_param_gather: true, distributed_optimizer: true, precision_aware_optimizer: true, optimizer_cpu_offload: true}`, true},
	{"optimizer-cpu-offload-fp8-param-gather-tensorwise", `train: {precision: "fp8", fp8_recipe: "tensorwise", fp8_param_gather: true, distributed_optimizer: true, precision_aware_optimizer: true, optimizer_cpu_offload: true}`, false},
	{"activation-squared-relu", `model: {activation: "squared_relu", bias: false}`, true},
	{"activation-squared-relu-bias-fusion", `model: {activation: "squared_relu", bias: true}`, false},
	{"activation-squared-relu-bias-unfused", `model: {activation: "squared_relu", bias: true}
kernels: bias_gelu_fusion: false`, true},
	// Dense quick_geglu with biases: its MLP cannot run the fused
	// bias-activation kernel, so parc's default turns it off
	// (spec.DefaultBiasGeluFusion) and the arguments carry --no-bias-gelu-fusion.
	{"activation-quick-geglu", `model: {activation: "quick_geglu", bias: true}`, true},
	{"quick-geglu-offset-clamp", `model: {activation: "quick_geglu", glu_linear_offset: 1, activation_func_clamp_value: 7}`, true},
	{"swiglu-offset-fused", `model: {activation: "swiglu", glu_linear_offset: 1}`, false},
	{"swiglu-offset-unfused", `model: {activation: "swiglu", glu_linear_offset: 0.5}
kernels: bias_swiglu_fusion: false`, true},
	{"swiglu-clamp-dense", `model: {activation: "swiglu", activation_func_clamp_value: 7}`, false},
	{"activation-quick-geglu-no-bias", `model: activation: "quick_geglu"`, true},
	{"tp-comm-overlap", `parallel: tp_comm_overlap: true`, true},
	{"tp-comm-overlap-no-sp", `parallel: {tp_comm_overlap: true, sp: false}`, false},
	{"ep-overlap", `model: moe: {experts: 8}
parallel: {ep: 2, vpp: 2, overlap_moe_expert_parallel_comm: true, delay_wgrad_compute: true}`, true},
	{"ep-overlap-no-vpp", `model: moe: {experts: 8}
parallel: {ep: 2, overlap_moe_expert_parallel_comm: true}`, false},
	{"delay-wgrad-alone", `model: moe: {experts: 8}
parallel: {ep: 2, delay_wgrad_compute: true}`, false},
	{"warmup-fraction", `train: lr_warmup_fraction: 0.01`, true},
	{"warmup-fraction-and-iters", `train: {lr_warmup_fraction: 0.01, lr_warmup_iters: 10}`, false},
	{"samples-schedule", `train: {samples: 6400, lr_warmup_samples: 640, lr_decay_samples: 6000}`, true},
	{"iters-with-decay-samples", `train: lr_decay_samples: 6000`, false},
	{"weight-decay-linear", `train: {weight_decay_incr_style: "linear", start_weight_decay: 0.0, end_weight_decay: 0.1}`, true},
	{"weight-decay-linear-without-end", `train: {weight_decay_incr_style: "linear", start_weight_decay: 0.0}`, false},
	{"weight-decay-constant-with-start", `train: start_weight_decay: 0.0`, false},
	{"kernels", `kernels: {masked_softmax_fusion: false, gradient_accumulation_fusion: false, bias_gelu_fusion: false, apply_rope_fusion: false, attention_backend: "fused", cross_entropy_loss_fusion: true}`, true},
	{"cross-entropy-te", `kernels: {cross_entropy_loss_fusion: true, cross_entropy_fusion_impl: "te"}`, false},
	{"cuda-graph-scope-and-modules", `kernels: {cuda_graph_impl: "transformer_engine", cuda_graph_scope: ["attn"], cuda_graph_modules: ["attn"]}`, false},
	{"cuda-graph-full-iteration-nan-check", `kernels: cuda_graph_impl: "full_iteration"`, false},
	{"router-groups", `model: moe: {experts: 16, router_num_groups: 4, router_group_topk: 2, router_topk_scaling_factor: 2.5, score_function: "sigmoid", expert_bias: true}
parallel: ep: 2`, true},
	{"router-group-topk-alone", `model: moe: {experts: 16, router_group_topk: 2}`, false},
	{"router-groups-not-dividing", `model: moe: {experts: 16, router_num_groups: 3, router_group_topk: 2}`, false},
	{"ncclep-without-flex", `model: moe: {experts: 8, flex_dispatcher_backend: "ncclep"}`, false},
	{"yarn", `model: {position_embedding: "yarn", rotary_scaling_factor: 32, yarn_original_max_position_embeddings: 4096, yarn_beta_fast: 32, yarn_beta_slow: 1, mscale: 1.0, mscale_all_dim: 1.0}`, true},
	{"misc", `train: {manual_gc: true, manual_gc_interval: 100, adam_eps: 1e-5, calculate_per_token_loss: true, exit_duration_in_mins: 230, distributed_timeout_minutes: 60, check_for_nan_in_loss_and_grad: false}
data: {create_attention_mask_in_dataloader: false, mmap_bin_files: false}
model: apply_layernorm_1p: true`, true},
	{"overlap-param-gather-with-step-dist-ckpt", `parallel: vpp: 2
train: {distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true, overlap_param_gather_with_optimizer_step: true}`, false},
	{"overlap-param-gather-with-step", `parallel: vpp: 2
train: {distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true, overlap_param_gather_with_optimizer_step: true}
checkpoint: format: "torch"`, true},
	// CPU activation offloading: TransformerConfig refuses pp > 1, a layer
	// count of num_layers or more, recompute and per-layer CUDA graphs.
	{"cpu-offloading", `parallel: pp: 1
train: cpu_offloading_num_layers: 4`, true},
	{"cpu-offloading-pp", `train: cpu_offloading_num_layers: 4`, false},
	{"cpu-offloading-all-layers", `parallel: pp: 1
train: cpu_offloading_num_layers: 8`, false},
	{"cpu-offloading-recompute", `parallel: pp: 1
train: {cpu_offloading_num_layers: 2, recompute: "selective"}`, false},
	{"cpu-offloading-cuda-graphs", `parallel: pp: 1
train: cpu_offloading_num_layers: 2
kernels: cuda_graph_impl: "transformer_engine"`, false},
	// Fine-grained activation offloading (TransformerConfig.__post_init__):
	// at least one module, attn_proj only with core_attn, not beside
	// cpu_offloading.
	{"fine-grained-offloading", `train: {fine_grained_activation_offloading: true, offload_modules: ["core_attn", "attn_proj"], activation_offload_fraction: 0.5}`, true},
	{"fine-grained-offloading-no-modules", `train: fine_grained_activation_offloading: true`, false},
	// With full-iteration CUDA graphs it needs a cap on in-flight offloads.
	{"fine-grained-offloading-full-iteration", `train: {check_for_nan_in_loss_and_grad: false, fine_grained_activation_offloading: true, offload_modules: ["core_attn"], fine_grained_offloading_max_inflight_offloads: 1}
kernels: cuda_graph_impl: "full_iteration"`, true},
	{"fine-grained-offloading-full-iteration-uncapped", `train: {check_for_nan_in_loss_and_grad: false, fine_grained_activation_offloading: true, offload_modules: ["core_attn"]}
kernels: cuda_graph_impl: "full_iteration"`, false},
	{"fine-grained-offloading-attn-proj", `train: {fine_grained_activation_offloading: true, offload_modules: ["attn_proj"]}`, false},
	{"fine-grained-offloading-cpu-offloading", `parallel: pp: 1
train: {fine_grained_activation_offloading: true, offload_modules: ["core_attn"], cpu_offloading_num_layers: 2}`, false},
	// --defer-embedding-wgrad-compute (ModelParallelConfig.__post_init__):
	// pp > 1 and gradient-accumulation fusion.
	{"defer-embedding-wgrad", `parallel: {defer_embedding_wgrad_compute: true, wgrad_deferral_limit: 2}`, true},
	{"defer-embedding-wgrad-pp1", `parallel: {pp: 1, defer_embedding_wgrad_compute: true}`, false},
	{"defer-embedding-wgrad-no-fusion", `parallel: defer_embedding_wgrad_compute: true
kernels: gradient_accumulation_fusion: false`, false},
	// parallel.layout: vpp follows the layout when not written (Megatron
	// derives it); the layout excludes the uneven-stage flags.
	{"layout", `parallel: layout: "Et*3|t*1|t*2|t*2L"`, true},
	{"layout-vpp-written", `parallel: {vpp: 2, layout: "Et*3|t*1|t*2|t*2L"}`, true},
	{"layout-decoder-count", `parallel: layout: "Et*3|t*1|t*2|t*1L"`, false},
	{"layout-loss-not-last", `parallel: layout: "Et*4|Lt*4"`, false},
	{"layout-with-first-stage", `parallel: {layout: "Et*4|t*4L", first_stage_layers: 4}`, false},
	{"layout-stages-not-multiple", `parallel: layout: "Et*4|t*2|t*2L"`, false},
	{"layout-mtp", `model: mtp_layers: 1
parallel: layout: "Et*4|t*4mL"`, true},
	{"layout-mtp-not-last-vstage", `model: mtp_layers: 1
parallel: layout: "Et*2|t*2m|t*2|t*2L"`, false},
}

// setsPP finds a case that sets parallel.pp itself (vpp is another field).
var setsPP = regexp.MustCompile(`(^|[^v])pp:`)

// parityPlan decodes a case into a plan without running parc's checks, so
// the arguments of a plan parc rejects can still be shown to Megatron.
func parityPlan(t *testing.T, src []byte) *plan.Plan {
	t.Helper()
	r, diags := load.Load(load.Source{Path: "case.cue", Data: src})
	require.False(t, diags.HasErrors(), "%v", diags)
	s, diags := r.Decode()
	require.False(t, diags.HasErrors(), "%v", diags)
	return &plan.Plan{Spec: *s, Derived: spec.Derive(s)}
}

// TestMegatronParity compiles every parity case and compares parc's verdict
// (vet errors or not) with the recorded one; with MEGATRON_LM set it also
// runs the arguments through Megatron's own validation
// (testdata/megatron_check.py) and compares that verdict, so the recorded
// verdicts are Megatron's, not parc's.
func TestMegatronParity(t *testing.T) {
	root := os.Getenv("MEGATRON_LM")
	dir := t.TempDir()
	files := map[string]string{} // case -> megatron.args file
	world := 0
	for _, c := range parityCases {
		t.Run(c.name, func(t *testing.T) {
			length := "train: iters: 100\n"
			if strings.Contains(c.cue, "{samples:") {
				length = ""
			}
			if !setsPP.MatchString(c.cue) {
				length += "parallel: pp: 2\n"
			}
			if !strings.Contains(c.cue, "position_embedding") {
				length += "model: position_embedding: \"rope\"\n"
			}
			src := []byte("package plan\n" + parityBase + length + c.cue + "\n")
			_, diags := compiler.Vet(compiler.Source{Path: "case.cue", Data: src})
			require.Equal(t, c.valid, !diags.HasErrors(), "parc's verdict: %v", diags)
			p := parityPlan(t, src)
			args, _ := megatron.Args(p, nil)
			parseArgs(t, args)
			file := filepath.Join(dir, c.name+".args")
			require.NoError(t, os.WriteFile(file, megatron.File(args), 0o644))
			var env strings.Builder
			for _, v := range megatron.SortedEnv(p) {
				if v.Name != "CUDA_DEVICE_MAX_CONNECTIONS" { // the checker sets it itself
					env.WriteString(v.Name + "=" + v.Value + "\n")
				}
			}
			require.NoError(t, os.WriteFile(file+".env", []byte(env.String()), 0o644))
			files[c.name], world = file, p.Derived.World
		})
	}
	if root == "" {
		t.Skip("MEGATRON_LM is not set: parc's verdicts checked, Megatron's not (see testdata/README.md)")
	}
	python := testenv.MegatronPython(t)
	cmdArgs := []string{"testdata/megatron_check.py", strconv.Itoa(world)}
	for _, c := range parityCases {
		cmdArgs = append(cmdArgs, files[c.name])
	}
	cmd := exec.Command(python, cmdArgs...)
	cmd.Env = append(os.Environ(), "MEGATRON_LM="+root)
	out, _ := cmd.CombinedOutput()
	verdict := map[string]string{}
	for line := range strings.Lines(string(out)) {
		for name, f := range files {
			if strings.HasPrefix(line, "ok "+f) || strings.HasPrefix(line, "FAIL "+f+":") {
				verdict[name] = line
			}
		}
	}
	for _, c := range parityCases {
		line, ok := verdict[c.name]
		require.True(t, ok, "no verdict for %s in:\n%s", c.name, out)
		require.Equal(t, c.valid, strings.HasPrefix(line, "ok "), "%s: Megatron's verdict: %s", c.name, line)
	}
}
