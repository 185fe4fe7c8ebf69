package megatron_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/targets/megatron"
)

// tiny returns the local test example with edit applied and Derived recomputed.
func tiny(t *testing.T, edit func(s *spec.Spec)) *plan.Plan {
	t.Helper()
	p, diags := compiler.Vet(compiler.Source{Path: "../../../examples/tiny-gpt-local.cue"})
	require.False(t, diags.HasErrors(), "%v", diags)
	if edit != nil {
		edit(&p.Spec)
	}
	p.Derived = spec.Derive(&p.Spec)
	return p
}

func ptr[T any](v T) *T { return &v }

// values returns the values following each occurrence of an option.
func values(args []string, name string) ([]string, bool) {
	for i, a := range args {
		if a != name {
			continue
		}
		var out []string
		for _, v := range args[i+1:] {
			if len(v) > 2 && v[:2] == "--" {
				break
			}
			out = append(out, v)
		}
		return out, true
	}
	return nil, false
}

func TestArgsCases(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(s *spec.Spec)
		want    map[string][]string // option -> values (nil = flag)
		without []string
	}{
		{"gqa", func(s *spec.Spec) { s.Model.QueryGroups = ptr(2) },
			map[string][]string{"--group-query-attention": nil, "--num-query-groups": {"2"}}, nil},
		{"mha-no-gqa-flags", nil, nil, []string{"--group-query-attention", "--num-query-groups"}},
		{"swiglu-rmsnorm-rope", func(s *spec.Spec) {
			s.Model.Activation, s.Model.Normalization, s.Model.PositionEmbedding = "swiglu", "rmsnorm", "rope"
			s.Model.RotaryBase, s.Model.RopeScalingFactor, s.Model.TieEmbeddings, s.Model.Bias = 500000, ptr(8.0), false, false
		}, map[string][]string{
			"--swiglu": nil, "--normalization": {"RMSNorm"}, "--position-embedding-type": {"rope"},
			"--rotary-base": {"500000"}, "--use-rope-scaling": nil, "--rope-scaling-factor": {"8"},
			"--untie-embeddings-and-output-weights": nil, "--disable-bias-linear": nil,
			"--ffn-hidden-size": {"640"}, // int(4*256*2/3/64)*64
		}, nil},
		{"squared-relu", func(s *spec.Spec) { s.Model.Activation, s.Model.Bias = "squared_relu", false },
			map[string][]string{"--squared-relu": nil, "--ffn-hidden-size": {"1024"}, "--disable-bias-linear": nil},
			[]string{"--swiglu", "--quick-geglu"}},
		{"quick-geglu", func(s *spec.Spec) { s.Model.Activation = "quick_geglu" },
			map[string][]string{"--quick-geglu": nil, "--ffn-hidden-size": {"1024"}}, []string{"--swiglu", "--squared-relu"}},
		{"fp8", func(s *spec.Spec) {
			s.Train.Precision, s.Train.FP8Format, s.Train.FP8Recipe = "fp8", "e4m3", "tensorwise"
		},
			map[string][]string{"--bf16": nil, "--fp8-format": {"e4m3"}, "--fp8-recipe": {"tensorwise"}}, []string{"--fp16"}},
		{"fp32", func(s *spec.Spec) { s.Train.Precision = "fp32" }, nil, []string{"--bf16", "--fp16"}},
		{"megatron-fsdp", func(s *spec.Spec) { s.Train.FSDP = true },
			map[string][]string{"--use-megatron-fsdp": nil, "--use-distributed-optimizer": nil,
				"--data-parallel-sharding-strategy": {"optim_grads_params"}, "--ckpt-format": {"fsdp_dtensor"}}, nil},
		{"full-recompute", func(s *spec.Spec) { s.Train.Recompute, s.Train.RecomputeMethod = "full", "block" },
			map[string][]string{"--recompute-granularity": {"full"}, "--recompute-method": {"block"}, "--recompute-num-layers": {"1"}}, nil},
		{"selective-recompute", func(s *spec.Spec) { s.Train.Recompute = "selective" },
			map[string][]string{"--recompute-granularity": {"selective"}}, []string{"--recompute-method", "--recompute-num-layers"}},
		{"samples", func(s *spec.Spec) { s.Train.Iters, s.Train.Samples, s.Train.LRWarmupIters = nil, ptr(3200), 0 },
			map[string][]string{"--train-samples": {"3200"}}, []string{"--train-iters", "--lr-warmup-iters", "--lr-decay-iters"}},
		{"vpp-uneven", func(s *spec.Spec) {
			s.Model.Layers, s.Parallel.VPP, s.Parallel.OverlapP2P = 8, 2, false
			s.Parallel.FirstStageLayers, s.Parallel.LastStageLayers = ptr(2), ptr(6)
			s.Parallel.MicrobatchGroupSize = ptr(4)
		}, map[string][]string{
			"--num-virtual-stages-per-pipeline-rank": {"2"}, "--decoder-first-pipeline-num-layers": {"2"},
			"--decoder-last-pipeline-num-layers": {"6"}, "--no-overlap-p2p-communication": nil,
			"--microbatch-group-size-per-virtual-pipeline-stage": {"4"},
		}, []string{"--num-layers-per-virtual-pipeline-stage"}},
		{"cp-hierarchical", func(s *spec.Spec) {
			s.Parallel.CP, s.Parallel.CPCommType, s.Parallel.HierarchicalCP = 4, "a2a+p2p", []int{2, 2}
		}, map[string][]string{"--context-parallel-size": {"4"}, "--cp-comm-type": {"a2a+p2p"}, "--hierarchical-context-parallel-sizes": {"2", "2"}}, nil},
		{"order-pp-dp", func(s *spec.Spec) { s.Parallel.Order = "tp-cp-ep-pp-dp" },
			map[string][]string{"--use-tp-pp-dp-mapping": nil}, nil},
		{"tp1-no-sp", func(s *spec.Spec) { s.Parallel.TP, s.Parallel.SP = 1, ptr(true) }, nil, []string{"--sequence-parallel"}},
		{"moe", func(s *spec.Spec) {
			s.Model.MoE = &spec.MoE{Experts: 8, TopK: 1, LayerFreq: 1, DenseLayers: 1, Dispatcher: "alltoall", GroupedGEMM: true,
				RouterLoadBalancing: "sinkhorn", AuxLossCoeff: 0.01, ScoreFunction: "softmax", RouterPreSoftmax: true,
				CapacityFactor: ptr(1.25), RouterDtype: ptr("fp32"), SharedFFNHidden: 512}
			s.Parallel.EP = 2
		}, map[string][]string{
			"--num-experts": {"8"}, "--moe-router-topk": {"1"}, "--moe-layer-freq": {"([0]*1+[1]*3)"},
			"--moe-grouped-gemm": nil, "--moe-token-dispatcher-type": {"alltoall"}, "--moe-router-load-balancing-type": {"sinkhorn"},
			"--moe-router-pre-softmax": nil, "--moe-expert-capacity-factor": {"1.25"}, "--moe-router-dtype": {"fp32"},
			"--expert-model-parallel-size": {"2"}, "--expert-tensor-parallel-size": {"2"}, "--moe-ffn-hidden-size": {"1024"},
			"--moe-shared-expert-intermediate-size": {"512"},
		}, []string{"--moe-aux-loss-coeff"}}, // sinkhorn takes no aux loss (M19)
		{"data-and-tokenizer", func(s *spec.Spec) {
			s.Data.Paths, s.Data.Split, s.Data.CachePath = []string{"0.7", "/d/a b", "0.3", "/d/c"}, "98,2,0", ptr("/cache")
			s.Data.Tokenizer = spec.Tokenizer{Type: "GPT2BPETokenizer", VocabFile: ptr("/v.json"), MergeFile: ptr("/m.txt")}
		}, map[string][]string{
			"--data-path": {"0.7", "/d/a b", "0.3", "/d/c"}, "--split": {"98,2,0"}, "--data-cache-path": {"/cache"},
			"--tokenizer-type": {"GPT2BPETokenizer"}, "--vocab-file": {"/v.json"}, "--merge-file": {"/m.txt"},
		}, []string{"--mock-data", "--vocab-size"}},
		{"checkpoint-preempt", func(s *spec.Spec) {
			s.Checkpoint = &spec.Checkpoint{Save: ptr("/ck"), Interval: 50, Format: "torch_dist", AsyncSave: true}
			s.Cluster.Slurm.PreemptSignalSeconds = ptr(120)
		}, map[string][]string{
			"--save": {"/ck"}, "--save-interval": {"50"}, "--load": {"/ck"}, "--ckpt-format": {"torch_dist"},
			"--async-save": nil, "--use-persistent-ckpt-worker": nil, "--exit-signal-handler": nil,
		}, nil},
		{"checkpoint-no-preempt", func(s *spec.Spec) {
			s.Checkpoint = &spec.Checkpoint{Save: ptr("/ck"), Interval: 50, Format: "torch"}
		}, map[string][]string{"--save": {"/ck"}}, []string{"--load", "--exit-signal-handler", "--use-persistent-ckpt-worker"}},
		{"logging", func(s *spec.Spec) {
			s.Logging.TensorboardDir, s.Logging.WandbProject, s.Logging.WandbExpName, s.Logging.LogThroughput = ptr("/tb"), ptr("p"), ptr("e"), false
		}, map[string][]string{"--tensorboard-dir": {"/tb"}, "--wandb-project": {"p"}, "--wandb-exp-name": {"e"}}, []string{"--log-throughput"}},
		{"mla", func(s *spec.Spec) {
			s.Model.MLA = &spec.MLA{KVLoraRank: 32, QKHeadDim: 16, QKPosEmbHeadDim: 8, VHeadDim: 16}
			s.Model.PositionEmbedding, s.Model.RopeScalingFactor = "rope", ptr(40.0)
		}, map[string][]string{"--multi-latent-attention": nil, "--kv-lora-rank": {"32"}, "--rotary-scaling-factor": {"40"}},
			[]string{"--group-query-attention", "--use-rope-scaling", "--rope-type", "--q-lora-rank"}},
		// A plan internal/check rejects (mla-query-groups) says to Megatron
		// what the user wrote, so Megatron's validate_args refuses it too.
		{"mla-with-query-groups", func(s *spec.Spec) {
			s.Model.MLA = &spec.MLA{KVLoraRank: 32, QKHeadDim: 16, QKPosEmbHeadDim: 8, VHeadDim: 16}
			s.Model.PositionEmbedding, s.Model.QueryGroups = "rope", ptr(2)
		}, map[string][]string{"--multi-latent-attention": nil, "--group-query-attention": nil, "--num-query-groups": {"2"}}, nil},
		{"kv-channels-derived-by-megatron", func(s *spec.Spec) { s.Model.Hidden = 250 }, nil, []string{"--kv-channels"}},
		{"dense-etp-given", func(s *spec.Spec) { s.Parallel.ETP = ptr(1) },
			map[string][]string{"--expert-tensor-parallel-size": {"1"}, "--expert-model-parallel-size": {"1"}}, nil},
		{"cp1-comm-type", func(s *spec.Spec) { s.Parallel.CPCommType, s.Parallel.HierarchicalCP = "a2a+p2p", []int{1, 1} },
			map[string][]string{"--cp-comm-type": {"a2a+p2p"}, "--hierarchical-context-parallel-sizes": {"1", "1"}}, nil},
		{"cp1-default-comm-type", nil, nil, []string{"--cp-comm-type", "--hierarchical-context-parallel-sizes"}},
		{"issue13-memory-fields", func(s *spec.Spec) {
			t := &s.Train
			t.Precision, t.FP8AmaxHistoryLen, t.FP8AmaxComputeAlgo, t.FP8Margin = "fp8", 1024, "max", 1
			t.FP8ParamGather, t.GradReduceInBF16, t.DistributedOptimizer = true, true, true
			t.Recompute, t.RecomputeModules = "selective", []string{"core_attn", "mlp"}
			t.PrecisionAwareOptim, t.MainGradsDtype, t.MainParamsDtype, t.ExpAvgDtype, t.ExpAvgSqDtype = true, "bf16", "fp16", "fp8", "bf16"
			on := true
			s.Parallel.TPCommOverlap, s.Parallel.OverlapMoEExpertParallelComm, s.Parallel.DelayWgradCompute = &on, true, true
		}, map[string][]string{
			"--fp8-amax-history-len": {"1024"}, "--fp8-amax-compute-algo": {"max"}, "--fp8-margin": {"1"},
			"--fp8-param-gather": nil, "--grad-reduce-in-bf16": nil, "--recompute-modules": {"core_attn", "mlp"},
			"--use-precision-aware-optimizer": nil, "--main-grads-dtype": {"bf16"}, "--main-params-dtype": {"fp16"},
			"--exp-avg-dtype": {"fp8"}, "--exp-avg-sq-dtype": {"bf16"}, "--tp-comm-overlap": nil,
			"--overlap-moe-expert-parallel-comm": nil, "--delay-wgrad-compute": nil,
		}, nil},
		{"issue13-defaults-not-emitted", nil, nil, []string{"--fp8-amax-history-len", "--fp8-amax-compute-algo", "--fp8-margin",
			"--fp8-param-gather", "--recompute-modules", "--use-precision-aware-optimizer",
			"--main-grads-dtype", "--main-params-dtype", "--exp-avg-dtype", "--exp-avg-sq-dtype",
			"--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute", "--use-nccl-ub", "--fsdp-double-buffer"}},
		{"megatron-fsdp-options", func(s *spec.Spec) {
			t := &s.Train
			t.FSDP, t.DataParallelShardingStrategy, t.FSDPDoubleBuffer, t.NCCLUB, t.FSDPManualRegistration = true, "optim_grads", true, true, true
			t.MegatronFSDPMainParamsDtype, t.MegatronFSDPMainGradsDtype, t.MegatronFSDPGradCommDtype = "bf16", "fp32", "bf16"
		}, map[string][]string{
			"--use-megatron-fsdp": nil, "--data-parallel-sharding-strategy": {"optim_grads"}, "--fsdp-double-buffer": nil,
			"--use-nccl-ub": nil, "--fsdp-manual-registration": nil, "--megatron-fsdp-main-params-dtype": {"bf16"},
			"--megatron-fsdp-main-grads-dtype": {"fp32"}, "--megatron-fsdp-grad-comm-dtype": {"bf16"},
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args, diags := megatron.Args(tiny(t, c.edit), nil)
			require.Empty(t, diags)
			parseArgs(t, args)
			for name, want := range c.want {
				got, ok := values(args, name)
				require.True(t, ok, "missing %s in %v", name, args)
				assert.Equal(t, want, got, name)
			}
			for _, name := range c.without {
				assert.NotContains(t, args, name)
			}
		})
	}
}

func TestArgsDiagnostics(t *testing.T) {
	at := func(path string) diag.Pos { return diag.Pos{File: "plan.cue", Line: len(path)} }
	cases := []struct {
		name  string
		edit  func(s *spec.Spec)
		codes []string
		msg   string
	}{
		{"same-flag", func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--num-layers", "8"} }, []string{"extra-arg-conflict"}, "--num-layers"},
		{"equals-form", func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--seq-length=1024"} }, []string{"extra-arg-conflict"}, "--seq-length"},
		// --disable-bias-linear sets add_bias_linear: its positive spelling collides.
		{"dest-twin", func(s *spec.Spec) { s.Model.Bias = false; s.Launch.ExtraArgs = []string{"--add-bias-linear"} }, []string{"extra-arg-conflict"}, "--disable-bias-linear"},
		{"no-twin", func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--no-log-throughput"} }, []string{"extra-arg-conflict"}, "--log-throughput"},
		{"same-dest-other-spelling", func(s *spec.Spec) {
			s.Launch.ExtraArgs = []string{"--persistent-save-interval", "5"}
			s.Checkpoint = &spec.Checkpoint{Save: ptr("/c"), Interval: 9, Format: "torch_dist"}
		}, []string{"extra-arg-conflict"}, "--save-interval"},
		{"exclusive", func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--fp16"} }, []string{"extra-arg-conflict"}, "--bf16"},
		{"exclusive-data", func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--data-path", "/x"} }, []string{"extra-arg-conflict"}, "--mock-data"},
		{"unknown", func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--no-such-option"} }, []string{"extra-arg-unknown"}, ""},
		{"unknown-typo", func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--manul-gc"} }, []string{"extra-arg-unknown"}, "--manul-gc"},
		{"extension", func(s *spec.Spec) {
			s.Launch.ExtraArgs, s.Launch.ExtensionArgs = []string{"--enable-gpt-oss"}, []string{"--enable-gpt-oss"}
		}, nil, ""},
		{"extension-other", func(s *spec.Spec) {
			s.Launch.ExtraArgs, s.Launch.ExtensionArgs = []string{"--enable-gpt-oss", "--export-te-mcore-model"}, []string{"--enable-gpt-oss"}
		}, []string{"extra-arg-unknown"}, "--export-te-mcore-model"},
		{"layout-beside-uneven", func(s *spec.Spec) {
			s.Parallel.FirstStageLayers, s.Parallel.LastStageLayers = ptr(2), ptr(2)
			s.Launch.ExtraArgs = []string{"--pipeline-model-parallel-layout", "Et|tL"}
		}, []string{"extra-arg-conflict"}, "--pipeline-model-parallel-layout"},
		{"unknown-custom-program", func(s *spec.Spec) {
			s.Launch.Program, s.Launch.ExtraArgs = "my_train.py", []string{"--my-option", "1"}
		}, nil, ""},
		// A hybrid layer pattern replaces the decoder the spec describes
		// (Megatron derives num_layers from it), whatever the program.
		{"hybrid-pattern", func(s *spec.Spec) {
			s.Launch.Program, s.Launch.ExtraArgs = "pretrain_hybrid.py", []string{"--hybrid-layer-pattern", "M*M-"}
		}, []string{"extra-arg-conflict"}, "--hybrid-layer-pattern replaces the generated --num-layers"},
		{"hybrid-pattern-deprecated", func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--hybrid-override-pattern=MM*-"} }, []string{"extra-arg-conflict"}, "--hybrid-override-pattern"},
		{"fine", func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--manual-gc", "--attention-backend", "fused"} }, nil, ""},
		{"line-break", func(s *spec.Spec) { s.Data.Paths = []string{"/a\nb"} }, []string{"megatron-arg-line-break"}, `"/a\nb"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args, diags := megatron.Args(tiny(t, c.edit), at)
			assert.Equal(t, c.codes, nilIfEmpty(diags.Codes()))
			for _, d := range diags {
				assert.Equal(t, at(d.Path), d.Pos, "positioned by the locator")
				assert.NotEmpty(t, d.Hint)
				assert.Contains(t, d.Message, c.msg)
			}
			if len(c.codes) == 0 {
				// Extra arguments are appended after the generated ones.
				extra := tiny(t, c.edit).Spec.Launch.ExtraArgs
				assert.Equal(t, extra, args[len(args)-len(extra):])
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestEnvAndCommand(t *testing.T) {
	p := tiny(t, func(s *spec.Spec) {
		s.Cluster.Env = map[string]string{"NCCL_IB_HCA": "mlx5", "X": "cluster"}
		s.Launch.Env = map[string]string{"X": "launch"}
	})
	assert.Equal(t, map[string]string{"CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_IB_HCA": "mlx5", "X": "launch"}, megatron.Env(p))
	assert.Equal(t, []megatron.EnvVar{{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}, {"NCCL_IB_HCA", "mlx5"}, {"X", "launch"}}, megatron.SortedEnv(p))
	p1 := tiny(t, func(s *spec.Spec) { s.Parallel.TP = 1 })
	assert.NotContains(t, megatron.Env(p1), "CUDA_DEVICE_MAX_CONNECTIONS", "tp = cp = 1 does not need it")
	for name, edit := range map[string]func(s *spec.Spec){
		"Blackwell":             func(s *spec.Spec) { s.Cluster.GPU.ComputeCapability = 10 },
		"Megatron-FSDP":         func(s *spec.Spec) { s.Train.FSDP = true },
		"torch FSDP2":           func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--use-torch-fsdp2"} },
		"EP all-to-all overlap": func(s *spec.Spec) { s.Launch.ExtraArgs = []string{"--overlap-moe-expert-parallel-comm"} },
	} {
		assert.NotContains(t, megatron.Env(tiny(t, edit)), "CUDA_DEVICE_MAX_CONNECTIONS", "%s: Megatron does not require it", name)
	}
	assert.Equal(t, []string{"python3", "pretrain_gpt.py", "--a"}, megatron.Command(p, []string{"--a"}))
}

// TestExtraArgConflictNamesField: a conflicting extra argument is blamed on
// its own element of launch.extra_args, and the hint names the spec field
// parc derives the generated option from (fields.tsv, the importer's rules).
func TestExtraArgConflictNamesField(t *testing.T) {
	at := func(path string) diag.Pos { return diag.Pos{File: "plan.cue", Line: len(path)} }
	_, diags := megatron.Args(tiny(t, func(s *spec.Spec) {
		s.Launch.ExtraArgs = []string{"--manual-gc", "--seq-length=1024", "--tensor-model-parallel-size", "2"}
	}), at)
	require.Len(t, diags, 2)
	assert.Equal(t, "launch.extra_args[1]", diags[0].Path)
	assert.Contains(t, diags[0].Hint, "set train.seq_length instead")
	assert.Equal(t, "launch.extra_args[2]", diags[1].Path)
	assert.Contains(t, diags[1].Hint, "set parallel.tp instead")
}

// TestHybridLayerCount: the layer count Megatron takes from a hybrid layer
// pattern, as get_hybrid_total_layer_count (hybrid_layer_allocation.py at
// d98e8a64) returns it for these patterns (its docstring's examples and
// examples/mamba/train.sh's 800M pattern, run through the function).
func TestHybridLayerCount(t *testing.T) {
	for p, n := range map[string]int64{
		"M*M*":             4,
		"M*M*/MM/MM":       4,
		"M-M-|M-M*-/MM/MM": 9,
		"M-M-M--M-*M-M-M-M--*M-M-M-M-*M--M-M-M-*M-M--M-M-": 48,
	} {
		assert.Equal(t, n, megatron.HybridLayerCount(p), p)
	}
	assert.Equal(t, "MM*", megatron.HybridLayerPattern(map[string]any{"hybrid_layer_pattern": nil, "hybrid_override_pattern": "MM*"}))
	assert.Equal(t, "", megatron.HybridLayerPattern(map[string]any{"num_layers": int64(4)}))
}

// TestPagedStashDefault: the default parc reads for an unset paged-stash
// buffer factor, and leaves off the arguments, is the one Megatron's parser
// gives (defaults.tsv, dumped from it).
func TestPagedStashDefault(t *testing.T) {
	assert.Equal(t, megatron.Defaults["moe_paged_stash_buffer_size_factor_cuda"], any(spec.MegatronPagedStashBufferFactor))
}
