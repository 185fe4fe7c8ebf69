package estimate

import (
	"math"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// Two of Megatron-Bridge's skill cards (067f987d) measured one job under
// several plans on H100s and recorded each run's peak memory (Megatron-
// Bridge's memory report: torch's allocated-bytes peak / 1e9, GB) and its
// step time or model TFLOP/s. None of these runs is in the calibration
// corpus; the tests below compare parc's estimates with them.

// llama70bSFT is Llama 3 70B SFT, FP8 current scaling, on 32 H100
// (skills/nemo-mbridge-perf-memory-tuning/card.yaml measured_results and
// skills/nemo-mbridge-perf-activation-recompute/card.yaml, the "historical
// PR #3107" rows): sequence 4096, micro batch 1, global batch 32, and the
// plan and recompute modules of each experiment, with the settings of the
// recipe those runs benchmark (src/megatron/bridge/perf_recipes/llama/h100/
// llama3.py llama3_70b_sft_32gpu_h100_fp8cs_config at 067f987d), the one
// the H100 row of bridgeSFT ran: llama70bSFTSpec. The cards give neither
// the runs' date nor their other settings. The SFT data are packed
// sequences (the recipe's packed-sequence specs), whose attention spans
// each packed sequence; parc times causal attention over the whole 4,096
// tokens, about 7% of its step here.
var llama70bSFT = []struct {
	name    string
	tp, pp  int
	modules string
	tflops  float64 // model TFLOP/s per GPU, as the card reports them
	peakGB  float64
}{
	{"baseline_with_expandable_segments", 4, 4, `"core_attn"`, 704, 58.8},
	{"more_pp", 4, 8, `"core_attn"`, 668.0, 53.2},
	{"more_tp", 8, 4, `"core_attn"`, 508.7, 50.2},
	{"mlp_only", 4, 4, `"mlp"`, 593.6, 55.6},
	{"mlp_plus_core_attn", 4, 4, `"mlp", "core_attn"`, 586.8, 55.6},
	{"core_attn_plus_layernorm", 4, 4, `"core_attn", "layernorm"`, 702, 59.6},
}

// TestLlama70BSFTPlansMeasured: parc's model TFLOP/s per GPU of each plan
// against the measured, and so the ranking of the plans and what each
// recompute module costs. Tensor parallelism of 8 is where the model fails:
// the measured run lost 28% against TP 4, parc has 10% (logged, not
// compared; the userbuffer overlap's split GEMMs and the SMs its
// communication kernels take are not modelled). Peaks are compared within
// 15%: parc's is 11-13% above the TP 4 runs without MLP recompute and within 2%
// with it, so what it keeps of the fp8 MLP is more than these runs kept.
func TestLlama70BSFTPlansMeasured(t *testing.T) {
	var base float64
	for i, m := range llama70bSFT {
		s := llama70bSFTSpec(t, h100x32, m.tp, m.pp, 5, "tensorwise", `recompute: "selective", recompute_modules: [`+m.modules+`]`)
		d := spec.Derive(s)
		e, ds := Run(s, d, DefaultLinks(s, d), diag.NoPos)
		if ds.HasErrors() {
			t.Fatalf("%s: %v", m.name, ds)
		}
		tf := e.ModelTFLOPsPerGPU
		if i == 0 {
			base = tf
		}
		peak := float64(e.Memory.PerGPUPeakBytes) / 1e9
		t.Logf("%-34s tp %d pp %d: parc %6.1f TFLOP/s (measured %6.1f, %+5.1f%%; vs the baseline %.3f, measured %.3f), peak %5.1f GB (measured %.1f, %+5.1f%%); attention %.1f%% of the step",
			m.name, m.tp, m.pp, tf, m.tflops, 100*(tf/m.tflops-1), tf/base, m.tflops/llama70bSFT[0].tflops, peak, m.peakGB, 100*(peak/m.peakGB-1),
			100*e.Compute.AttentionS/e.StepTimeS)
		if m.tp == 8 {
			continue // the known miss above
		}
		if math.Abs(tf/m.tflops-1) > 0.05 {
			t.Errorf("%s: parc %.1f model TFLOP/s per GPU, Megatron-Bridge measured %.1f", m.name, tf, m.tflops)
		}
		if math.Abs(peak/m.peakGB-1) > 0.15 {
			t.Errorf("%s: parc peak %.1f GB, Megatron-Bridge measured %.1f", m.name, peak, m.peakGB)
		}
	}
}

// moonlight is the activation-recompute card's matched study: Moonlight 16B
// (DeepSeek-V3's architecture at 27 layers, MLA without query compression,
// 64 experts, top 6, two shared experts; the Megatron-Bridge recipe builds
// it from moonshotai/Moonlight-16B-A3B's config.json, whose values
// Megatron-Bridge's earlier MLAModelProvider recipe spelled out) pretraining
// on 8 H100 at TP2 EP8 DP4, bf16, sequence 4096, micro batch 1, global
// batch 4, with the 8-GPU recipe's settings (src/megatron/bridge/recipes/
// moonlight/h100/moonlight_16b.py moonlight_16b_pretrain_8gpu_h100_bf16_config
// at 600d069b, the card's Megatron-Bridge revision: sequence parallel,
// alltoall dispatcher, shared-expert overlap, permute fusion, cross-entropy
// fusion, precision-aware optimizer with bf16 moments and main gradients,
// bf16 gradient reduction). Peak allocated memory per recompute_modules.
var moonlight = []struct {
	modules string // "" is the empty-list control
	peakGB  float64
}{
	{"", 36.618},
	{`"core_attn"`, 36.614},
	{`"mla_up_proj"`, 35.902},
	{`"mla_up_proj", "mlp"`, 35.917},
	{`"moe_act"`, 35.941},
	{`"layernorm", "moe_act"`, 35.949},
}

const moonlightSpec = `package plan

import "parc.dev/stdlib/clusters"

model: {
	name: "moonlight-16b-a3b", layers: 27, hidden: 2048, ffn_hidden: 11264, heads: 16, kv_channels: 128
	vocab: 163840, max_position_embeddings: 8192, activation: "swiglu", normalization: "rmsnorm"
	norm_epsilon: 1e-5, position_embedding: "rope", rotary_base: 50000, tie_embeddings: false, bias: false
	qk_layernorm: true
	mla: {kv_lora_rank: 512, qk_head_dim: 128, qk_pos_emb_head_dim: 64, v_head_dim: 128}
	moe: {
		experts: 64, topk: 6, ffn_hidden: 1408, shared_ffn_hidden: 2816, dense_layers: 1
		score_function: "sigmoid", expert_bias: true, router_load_balancing: "seq_aux_loss"
		aux_loss_coeff: 1e-3, router_topk_scaling_factor: 2.446, shared_expert_overlap: true
	}
}
cluster: clusters.dgx_h100 & {nodes: 1}
parallel: {tp: 2, pp: 1, cp: 1, ep: 8, etp: 1, sp: true}
train: {
	seq_length: 4096, micro_batch: 1, global_batch: 4, precision: "bf16", iters: 20
	distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true, grad_reduce_in_bf16: true
	precision_aware_optimizer: true, main_grads_dtype: "bf16", exp_avg_dtype: "bf16", exp_avg_sq_dtype: "bf16"
	RECOMPUTE
}
kernels: {moe_permute_fusion: true, cross_entropy_loss_fusion: true}
`

// TestMoonlightRecomputeModulesMeasured: the control's peak, and what each
// module saves against it. The card's recomputed runs all end within 0.05
// GB of each other (35.90-35.95), whatever the modules, so its nested lists
// save no more than their narrowest module: a peak the stored activations no
// longer set, which parc does not model (it keeps subtracting; logged, not
// compared). parc's control, 34.2 GB with the precision-aware optimizer's
// master weights kept as 16-bit remainders (paramRemainders), is below that
// floor too: 6.5% under the measured 36.6 GB. Compared: the control within
// 10%; core_attn, with fused attention, saves nothing (measured 0.004 GB);
// mla_up_proj and moe_act each save what was measured within 35% (parc 0.91
// and 0.90 GB, measured 0.72 and 0.68 GB: above, as a floor would make it).
func TestMoonlightRecomputeModulesMeasured(t *testing.T) {
	var control float64
	for i, m := range moonlight {
		rc := `recompute: "none"`
		if m.modules != "" {
			rc = `recompute: "selective", recompute_modules: [` + m.modules + `]`
		}
		s := loadPlanText(t, strings.Replace(moonlightSpec, "RECOMPUTE", rc, 1))
		d := spec.Derive(s)
		e, ds := Run(s, d, DefaultLinks(s, d), diag.NoPos)
		if ds.HasErrors() {
			t.Fatalf("[%s]: %v", m.modules, ds)
		}
		peak := float64(e.Memory.PerGPUPeakBytes) / 1e9
		if i == 0 {
			control = peak
			t.Logf("control: parc %.3f GB, measured %.3f (%+.1f%%)", peak, m.peakGB, 100*(peak/m.peakGB-1))
			if math.Abs(peak/m.peakGB-1) > 0.10 {
				t.Errorf("control: parc peak %.3f GB, Megatron-Bridge measured %.3f", peak, m.peakGB)
			}
			continue
		}
		saved, want := control-peak, moonlight[0].peakGB-m.peakGB
		t.Logf("[%s]: parc saves %.3f GB, measured %.3f", m.modules, saved, want)
		switch m.modules {
		case `"core_attn"`:
			if math.Abs(saved) > 0.05 {
				t.Errorf("core_attn with fused attention: parc saves %.3f GB, measured %.3f", saved, want)
			}
		case `"mla_up_proj"`, `"moe_act"`:
			if math.Abs(saved/want-1) > 0.35 {
				t.Errorf("[%s]: parc saves %.3f GB, Megatron-Bridge measured %.3f", m.modules, saved, want)
			}
		}
	}
}
