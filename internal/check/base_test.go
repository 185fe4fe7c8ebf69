package check

import (
	"encoding/json"
	"slices"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// baseJSON is a small valid dense plan written out in full, with every default
// of schema/plan.cue spelt out (TestBaseMatchesSchema checks that). The corpus
// and the property tests mutate it.
//
// World 16 = 2 nodes × 8 H100; tp=2, pp=2 → dp=4; 16 layers → 8 per stage;
// global batch 64 = 16 microbatches of 1 × dp 4.
const baseJSON = `{
  "model": {
    "name": "base", "layers": 16, "hidden": 2048, "heads": 16, "vocab": 50257,
    "make_vocab_divisible_by": 128, "activation": "gelu", "normalization": "layernorm",
    "norm_epsilon": 1e-5, "position_embedding": "learned_absolute", "rotary_base": 10000,
    "rotary_percent": 1.0, "tie_embeddings": true, "bias": true, "qkv_bias": false,
    "qk_layernorm": false, "mtp_layers": 0, "mscale": 1.0, "mscale_all_dim": 0.0, "apply_layernorm_1p": false
  },
  "cluster": {
    "name": "h100x2", "nodes": 2, "gpus_per_node": 8, "nvlink_domain": 8,
    "gpu": {"name": "H100", "memory_gib": 80, "bf16_tflops": 989, "compute_capability": 9.0},
    "nvlink_gbps": 450, "network_gbps": 50, "env": {}
  },
  "parallel": {
    "tp": 2, "pp": 2, "vpp": 1, "cp": 1, "ep": 1, "order": "tp-cp-ep-dp-pp",
    "account_for_embedding": false, "account_for_loss": false, "overlap_p2p": true,
    "cp_comm_type": "p2p", "distributed_optimizer_instances": 1,
    "tp_comm_overlap": false, "overlap_moe_expert_parallel_comm": false, "delay_wgrad_compute": false
  },
  "train": {
    "seq_length": 2048, "micro_batch": 1, "global_batch": 64, "precision": "bf16",
    "fp8_format": "hybrid", "fp8_recipe": "delayed", "recompute": "none",
    "recompute_method": "uniform", "distributed_optimizer": false,
    "overlap_grad_reduce": false, "overlap_param_gather": false, "iters": 100,
    "lr": 3.0e-4, "min_lr": 3.0e-5, "lr_decay_style": "cosine", "lr_warmup_iters": 0,
    "weight_decay": 0.1, "clip_grad": 1.0, "adam_beta1": 0.9, "adam_beta2": 0.95,
    "init_method_std": 0.02, "attention_dropout": 0.0, "hidden_dropout": 0.0, "seed": 1234,
    "fp8_amax_history_len": 1, "fp8_amax_compute_algo": "most_recent", "fp8_margin": 0,
    "fp8_param_gather": false, "grad_reduce_in_bf16": false, "precision_aware_optimizer": false,
    "main_grads_dtype": "fp32", "main_params_dtype": "fp32", "exp_avg_dtype": "fp32", "exp_avg_sq_dtype": "fp32",
    "data_parallel_sharding_strategy": "optim_grads_params", "fsdp_double_buffer": false, "nccl_ub": false,
    "fsdp_manual_registration": false, "megatron_fsdp_main_params_dtype": "fp32",
    "megatron_fsdp_main_grads_dtype": "auto", "megatron_fsdp_grad_comm_dtype": "auto",
    "overlap_param_gather_with_optimizer_step": false, "lr_warmup_samples": 0, "lr_warmup_init": 0.0,
    "lr_wsd_decay_style": "exponential", "weight_decay_incr_style": "constant", "adam_eps": 1e-8,
    "mtp_loss_scaling_factor": 0.1, "calculate_per_token_loss": false, "check_for_nan_in_loss_and_grad": true,
    "manual_gc": false, "manual_gc_interval": 0, "distributed_timeout_minutes": 10
  },
  "data": {
    "mock": true, "paths": [], "split": "969,30,1", "num_workers": 2,
    "create_attention_mask_in_dataloader": true, "mmap_bin_files": true,
    "tokenizer": {"type": "NullTokenizer", "tiktoken_num_special_tokens": 1000}
  },
  "kernels": {
    "attention_backend": "auto", "masked_softmax_fusion": true, "gradient_accumulation_fusion": true,
    "bias_gelu_fusion": true, "bias_swiglu_fusion": true, "bias_dropout_fusion": true, "apply_rope_fusion": true,
    "cross_entropy_loss_fusion": false, "cross_entropy_fusion_impl": "native", "moe_permute_fusion": false,
    "moe_router_fusion": false, "cuda_graph_impl": "none", "cuda_graph_warmup_steps": 3
  },
  "logging": {"interval": 10, "eval_interval": 1000, "eval_iters": 10, "log_throughput": true},
  "launch": {
    "launcher": "torchrun", "program": "pretrain_gpt.py", "python": "python3",
    "master_port": 29500, "extra_args": [], "env": {}, "parc_binary": "parc"
  }
}`

// Defaults of the optional structs, filled in when an override introduces one.
var optionalDefaults = map[string]string{
	"model.moe": `{"topk": 2, "shared_ffn_hidden": 0, "layer_freq": 1, "dense_layers": 0,
	  "dispatcher": "alltoall", "grouped_gemm": true, "router_load_balancing": "aux_loss",
	  "aux_loss_coeff": 1e-2, "score_function": "softmax", "router_pre_softmax": false,
	  "expert_bias": false, "router_bias_update_rate": 1e-3, "router_force_load_balancing": false,
	  "flex_dispatcher_backend": "deepep", "shared_expert_overlap": false}`,
	"model.mla":     `{"kv_lora_rank": 32, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64, "v_head_dim": 128}`,
	"cluster.slurm": `{"exclusive": true, "requeue": false, "extra": []}`,
	"checkpoint":    `{"interval": 1000, "format": "torch_dist", "async_save": false}`,
}

// mergeJSON deep-merges override into base: objects merge key by key, a null
// deletes the key, anything else replaces. New optional structs start from
// their schema defaults.
func mergeJSON(base, override map[string]any, prefix string) {
	for k, v := range override {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		if v == nil {
			delete(base, k)
			continue
		}
		ov, isObj := v.(map[string]any)
		if !isObj {
			base[k] = v
			continue
		}
		bv, ok := base[k].(map[string]any)
		if !ok {
			bv = map[string]any{}
			if def, ok := optionalDefaults[path]; ok {
				if err := json.Unmarshal([]byte(def), &bv); err != nil {
					panic(err)
				}
			}
			base[k] = bv
		}
		mergeJSON(bv, ov, path)
	}
}

// specFrom builds the base spec with overrides applied.
func specFrom(t testing.TB, override map[string]any) *spec.Spec {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(baseJSON), &m); err != nil {
		t.Fatal(err)
	}
	mergeJSON(m, override, "")
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var s spec.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("override %v: %v", override, err)
	}
	return &s
}

// parse turns a JSON override literal into a map.
func parse(t testing.TB, js string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("bad override %s: %v", js, err)
	}
	return m
}

func runSpec(s *spec.Spec) diag.List { return Run(s, spec.Derive(s), diag.NoPos) }

// codesOf returns the distinct codes of l, sorted.
func codesOf(l diag.List) []string {
	out := slices.Clone(l.Codes())
	slices.Sort(out)
	return slices.Compact(out)
}

func TestBaseIsClean(t *testing.T) {
	s := specFrom(t, nil)
	if l := runSpec(s); len(l) != 0 {
		t.Fatalf("the base spec has diagnostics:\n%v", l)
	}
}
