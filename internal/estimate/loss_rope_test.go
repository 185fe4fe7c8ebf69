package estimate

import (
	"fmt"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// kernelPass is one kernel's HBM traffic per element of the tensor it runs
// over: bytes read and written.
type kernelPass struct {
	what        string
	read, write float64
}

func ledgerBytes(ks []kernelPass) float64 {
	var b float64
	for _, k := range ks {
		b += k.read + k.write
	}
	return b
}

// TestUnfusedRoPEBytes: kernels.apply_rope_fusion false times Megatron's
// unfused rotary embedding (rope_utils.py _apply_rotary_pos_emb_bshd at
// d98e8a64) beyond the fused kernels. Multi-latent attention's ledger per
// token and head (values of 2 bytes), from multi_latent_attention.py
// qkv_up_proj_and_rope_apply: fused, fused_apply_mla_rope_for_q reads q
// (192) and writes the query (192), _for_kv reads kv (256) and writes the
// key (192) and value (128); unfused, on q's 64 rotated values the
// interleaving concatenation, ·cos, the negation and concatenation of
// _rotate_half, ·sin, the sum (two reads) and the concatenation with the
// empty unrotated part, then torch.cat of the query (128 + 64 → 192) and
// of the key, and the value's .contiguous() copy out of kv.
func TestUnfusedRoPEBytes(t *testing.T) {
	fused := ledgerBytes([]kernelPass{{"fused_apply_mla_rope_for_q", 192, 192}, {"fused_apply_mla_rope_for_kv", 256, 192 + 128}})
	rot := []kernelPass{{"interleave cat", 64, 64}, {"t·cos", 64, 64}, {"-x2", 64, 64}, {"cat(-x2, x1)", 64, 64},
		{"·sin", 64, 64}, {"sum", 128, 64}, {"cat(t, t_pass)", 64, 64}}
	unfused := ledgerBytes(rot) + ledgerBytes([]kernelPass{{"query cat", 128 + 64, 192}, {"key cat", 128 + 64, 192}, {"value contiguous", 128, 128}})

	s := deepSeekLayer(t, false)
	c := newCostModel(s, spec.Derive(s), resolveOptions(s, DefaultOptions()))
	f, b := c.cm.ropeUnfused(c.ls)
	perValue := c.ls.T * c.ls.heads / c.ls.tp * c.cm.ab
	near(t, "MLA unfused RoPE forward bytes per token and head", f.mem*c.cm.r.hbm/perValue, unfused-fused, 1e-9)
	if b.mem <= 0 || b.fixed <= 0 {
		t.Errorf("unfused RoPE backward: %+v, want bytes and kernels", b)
	}
	sf := deepSeekLayer(t, true)
	cf := newCostModel(sf, spec.Derive(sf), resolveOptions(sf, DefaultOptions()))
	if f, b := cf.cm.ropeUnfused(cf.ls); f.total() != 0 || b.total() != 0 {
		t.Errorf("fused RoPE charged as unfused: %+v %+v", f, b)
	}
	on, _ := Run(sf, spec.Derive(sf), nil, nil)
	off, _ := Run(s, spec.Derive(s), nil, nil)
	if off.StepTimeS <= on.StepTimeS {
		t.Errorf("apply_rope_fusion false: step %.4f s, fused %.4f s: want slower", off.StepTimeS, on.StepTimeS)
	}
}

// deepSeekLayer is DeepSeek-V3 on 32 GB200 (tp 2, ep 16), bf16, with RoPE
// fused or not.
func deepSeekLayer(t *testing.T, ropeFusion bool) *spec.Spec {
	s := loadSpecText(t, "model: models.deepseek_v3 & {layers: 8, moe: {dense_layers: 1}, mtp_layers: 0}\n"+
		"cluster: clusters.gb200_nvl72 & {nodes: 8}\n"+
		"parallel: {tp: 2, pp: 1, cp: 1, ep: 16}\n"+
		"train: {seq_length: 4096, micro_batch: 1, global_batch: 64, precision: \"bf16\", iters: 10}\n")
	s.Kernels.ApplyRopeFusion = ropeFusion
	return s
}

// TestSharedExpertOverlapHidesAllToAll: model.moe.shared_expert_overlap runs
// the shared expert on a second stream beside the expert all-to-alls
// (Megatron-LM d98e8a64 token_dispatcher.py calls the shared expert's
// linear_fc1_forward_and_act during the dispatch and linear_fc2_forward
// during the combine, shared_experts.py on SharedExpertMLP.stream): the
// all-to-all's exposed time falls by the shared expert's time, never below
// the residual share, and the compute is not cheaper.
func TestSharedExpertOverlapHidesAllToAll(t *testing.T) {
	run := func(overlap bool) *Estimate {
		s := deepSeekLayer(t, true)
		s.Model.MoE.SharedExpertOverlap = overlap
		e, _ := Run(s, spec.Derive(s), nil, nil)
		return e
	}
	off, on := run(false), run(true)
	ep0, ep1 := off.Comms["ep"], on.Comms["ep"]
	if ep0.TimeS <= 0 || ep1.TimeS != ep0.TimeS {
		t.Fatalf("all-to-all time %g without the overlap, %g with it: want the same, > 0", ep0.TimeS, ep1.TimeS)
	}
	if !(ep1.ExposedS < ep0.ExposedS && ep1.ExposedS >= OverlapResidual*ep1.TimeS*(1-1e-9)) {
		t.Errorf("exposed all-to-all %g with the overlap, %g without (time %g): want less, at least the residual share", ep1.ExposedS, ep0.ExposedS, ep1.TimeS)
	}
	if on.Compute.TimeS != off.Compute.TimeS || on.StepTimeS >= off.StepTimeS {
		t.Errorf("compute %g vs %g, step %g vs %g: the overlap hides communication only", on.Compute.TimeS, off.Compute.TimeS, on.StepTimeS, off.StepTimeS)
	}
}

// TestYaRNConcentrationUnfusesRoPE: Megatron applies TE's fused RoPE only
// where the YaRN concentration factor is 1 (spec.Model.RopeFusionApplies,
// rope_utils.py apply_rotary_pos_emb at d98e8a64: "mscale=... is not
// supported by TE's fused RoPE. Using unfused implementation."). GPT-OSS's
// YaRN (factor 32, mscale 1, mscale_all_dim 0: factor 1.347) therefore
// takes as long with kernels.apply_rope_fusion as without it, while plain
// RoPE (Llama 3) and YaRN with equal mscales are faster fused.
func TestYaRNConcentrationUnfusesRoPE(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		fusionHelps bool
	}{
		{"gpt-oss yarn, factor 32, mscale 1 / 0", `models.gpt_oss_120b`, false},
		{"gpt-oss with equal mscales", `models.gpt_oss_120b & {mscale: 1, mscale_all_dim: 1}`, true},
		{"gpt-oss yarn at factor 1", `models.gpt_oss_120b & {rotary_scaling_factor: 1}`, true},
		{"llama3 rope", `models.llama3_8b`, true},
	} {
		step := func(fused bool) float64 {
			s := loadPlanText(t, fmt.Sprintf(`package plan

import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)

model: %s
cluster: clusters.dgx_h100 & {nodes: 2}
parallel: {tp: 1, pp: 2, ep: 8}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64, iters: 10, distributed_optimizer: true}
kernels: {apply_rope_fusion: %v}
`, tc.model, fused))
			d := spec.Derive(s)
			e, _ := RunWith(s, d, DefaultLinks(s, d), diag.NoPos, DefaultOptions())
			return e.StepTimeS
		}
		fused, unfused := step(true), step(false)
		if helps := fused < unfused*(1-1e-9); helps != tc.fusionHelps {
			t.Errorf("%s: step %.4g s with apply_rope_fusion, %.4g s without: fusion shortens it %v, want %v",
				tc.name, fused, unfused, helps, tc.fusionHelps)
		}
	}
}
