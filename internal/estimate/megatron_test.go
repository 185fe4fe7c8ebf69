package estimate

import (
	"testing"

	"parc.dev/parc/internal/spec"
)

// The numbers Megatron-LM itself computes for the four test plans, printed by
// megatron/training/theoretical_memory_usage.py (compute_weight_and_optimizer_memory,
// compute_activation_memory or compute_activation_memory_without_sp, as
// report_theoretical_memory picks them) and training.py's
// num_floating_point_operations at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553,
// run on the Megatron arguments the megatron target emits for these specs
// (padded vocabulary, GQA flag, moe_layer_freq list, num_microbatches).
var megatronPrinted = []struct {
	name                string
	spec                func() *spec.Spec
	weightsOpt, act     float64 // bytes
	flops               float64
	formula             string
	microbatchesWantTot int
}{
	{"gpt175b", gpt175B, 10784206080.0, 10318020608.0, 3.3405978001601987e+18, MegatronFormulaSPSelective, 192},
	{"llama70b", llama70B, 20443908096.0, 24734687231.999996, 4.7108355789737165e+17, MegatronFormulaSPSelective, 32},
	{"mixtral", mixtral, 27119427072.0, 8623554560.0, 8.357827687376486e+16, MegatronFormulaSPSelective, 32},
	{"gpt1b", gpt1B, 23601291264.0, 15293025484.800001, 1110163146670080.0, MegatronFormulaWithoutSP, 2},
}

func TestMegatronPrintedNumbers(t *testing.T) {
	for _, c := range megatronPrinted {
		t.Run(c.name, func(t *testing.T) {
			s := c.spec()
			d := spec.Derive(s)
			if d.Microbatches != c.microbatchesWantTot {
				t.Fatalf("microbatches = %d, want %d", d.Microbatches, c.microbatchesWantTot)
			}
			m := MegatronTheoreticalMemory(s, d)
			near(t, "weights+optimizer", m.WeightsAndOptimizer, c.weightsOpt, 1e-12)
			near(t, "activations", m.Activations, c.act, 1e-12)
			near(t, "total", m.Total, c.weightsOpt+c.act, 1e-12)
			if m.Formula != c.formula {
				t.Errorf("formula = %q, want %q", m.Formula, c.formula)
			}
			near(t, "FLOPs", MegatronFLOPs(s, d), c.flops, 1e-12)
			e := run(t, s)
			near(t, "megatron_theoretical_bytes (rounded to a byte)", float64(e.Memory.MegatronTheoreticalBytes), c.weightsOpt+c.act, 1e-9)
			near(t, "flops_per_step", e.FLOPsPerStep, c.flops, 1e-12)
		})
	}
}

// TestMegatronMemoryByHand derives GPT-3 175B's theoretical memory from the
// formulas of Megatron-LM's megatron/training/theoretical_memory_usage.py
// (compute_weight_and_optimizer_memory, compute_activation_memory) at
// d98e8a64, step by step.
func TestMegatronMemoryByHand(t *testing.T) {
	s := gpt175B()
	const (
		h, L, V, tp, pp, dp = 12288.0, 96.0, 51200.0, 8.0, 16.0, 8.0
		seq, b              = 2048.0, 1.0
	)
	perLayerSharded := 4*h*h + 8*h*h // attention 2h²(1+g/a)=4h², MLP 2·h·4h
	perLayerReplicated := 2 * h * 2  // two LayerNorms of weight and bias
	sharded := (perLayerSharded*L/pp + V*h) / tp
	replicated := (perLayerReplicated*L + 2*h) / pp // final LayerNorm in the block
	beta := 6 + 12/dp                               // distributed optimizer
	wantWeights := (sharded + replicated) * beta
	sbh := seq * b * h
	wantAct := (sbh*34*L + 8*seq*b*pp + sbh*pp) * 1 / tp // 192 microbatches ≥ pp: factor 1
	m := MegatronTheoreticalMemory(s, spec.Derive(s))
	near(t, "weights+optimizer", m.WeightsAndOptimizer, wantWeights, 1e-12)
	near(t, "activations", m.Activations, wantAct, 1e-12)

	// Without SP and selective recompute Megatron switches formulas:
	// sbh(10+24/t) per layer, ×1.05, and the logits when pp = 1.
	g := gpt1B()
	const (
		gh, gL, gV, gs, gb = 2048.0, 24.0, 50304.0, 2048.0, 4.0
	)
	gsbh := gs * gb * gh
	wantG := (gsbh*(10+24)*gL + 8*gs*gb + gsbh + (gs*gb*gV+gsbh)*2) * 1.05
	mg := MegatronTheoreticalMemory(g, spec.Derive(g))
	near(t, "gpt1b activations", mg.Activations, wantG, 1e-12)
	if mg.Formula != MegatronFormulaWithoutSP {
		t.Errorf("formula %q", mg.Formula)
	}
	// 18 bytes per parameter without the distributed optimizer.
	params := gL*(4*gh*gh+8*gh*gh+4*gh) + 2*gh + gV*gh
	near(t, "gpt1b weights+optimizer", mg.WeightsAndOptimizer, params*18, 1e-12)

	// The interleaving penalty 1 + (p−1)/(p·v) multiplies the activations.
	l := llama70B()
	withV := MegatronTheoreticalMemory(l, spec.Derive(l)).Activations
	l.Parallel.VPP = 1
	without := MegatronTheoreticalMemory(l, spec.Derive(l)).Activations
	near(t, "interleave factor", withV/without, 1+3.0/(4*5), 1e-12)
}

// TestFLOPsClosedForm checks Megatron's FLOPs against the textbook identity
// for MHA, GeLU, f = 4h, no MoE: 72·B·s·L·h²·(1 + s/(12h) + V/(12·h·L)).
func TestFLOPsClosedForm(t *testing.T) {
	for _, c := range []struct{ L, h, a, V, s, B int }{
		{96, 12288, 96, 51200, 2048, 1536},
		{24, 2048, 16, 50304, 2048, 64},
		{12, 768, 12, 50304, 1024, 8},
		{40, 5120, 40, 51200, 4096, 512},
	} {
		s := baseSpec()
		s.Model.Layers, s.Model.Hidden, s.Model.Heads, s.Model.Vocab = c.L, c.h, c.a, c.V
		s.Train.SeqLength, s.Train.MicroBatch, s.Train.GlobalBatch = c.s, 1, c.B
		s.Cluster.Nodes = 1
		L, h, V, seq, B := float64(c.L), float64(c.h), float64(c.V), float64(c.s), float64(c.B)
		want := 72 * B * seq * L * h * h * (1 + seq/(12*h) + V/(12*h*L))
		near(t, "FLOPs", MegatronFLOPs(s, spec.Derive(s)), want, 1e-12)
	}
}

// TestFLOPsLlamaByHand adds up Llama-3-70B's FLOPs term by term: GQA
// projections, SwiGLU MLP (three h×f GEMMs), causal core attention and the
// logits, each GEMM counted three times at 2 FLOPs per multiply-add.
func TestFLOPsLlamaByHand(t *testing.T) {
	s := llama70B()
	const (
		h, f, L, V, seq, B = 8192.0, 28672.0, 80.0, 129024.0, 8192.0, 128.0
		q, kv              = 64 * 128.0, 8 * 128.0
	)
	proj := 6 * (h*(q+2*kv) + q*h) // QKV and output projection, per token and layer
	mlp := 6 * h * f * 3           // fc1 (h→2f) and fc2 (f→h)
	core := 6 * q * seq            // QKᵀ and ·V, halved by the causal mask, per token
	logits := 6 * h * V
	want := B * seq * (L*(proj+mlp+core) + logits)
	near(t, "FLOPs", MegatronFLOPs(s, spec.Derive(s)), want, 1e-12)

	// MoE: the routed experts count top-k of them, the shared expert once.
	x := mixtral()
	x.Model.MoE.SharedFFNHidden = 2048
	const (
		xh, xf, xL, xV, xs, xB, k = 4096.0, 14336.0, 32.0, 32000.0, 4096.0, 256.0, 2.0
		xq, xkv                   = 32 * 128.0, 8 * 128.0
	)
	perToken := xL*(6*(xh*(xq+2*xkv)+xq*xh)+6*xh*xf*3*k+6*xh*2048*3+6*xq*xs) + 6*xh*xV
	near(t, "MoE FLOPs", MegatronFLOPs(x, spec.Derive(x)), xB*xs*perToken, 1e-12)
}

// TestStageFLOPsAddUp: the per-stage FLOPs parc uses for time, summed over
// stages, microbatches and data-parallel replicas, are Megatron's total.
func TestStageFLOPsAddUp(t *testing.T) {
	for _, mk := range []func() *spec.Spec{gpt175B, llama70B, mixtral, gpt1B} {
		s := mk()
		d := spec.Derive(s)
		c := newCostModel(s, d, DefaultOptions())
		var sum float64
		for r := range c.pp {
			sum += c.stageCost(r).flops
		}
		near(t, s.Model.Name+" stage FLOPs", sum*float64(d.Microbatches*d.DP), MegatronFLOPs(s, d), 1e-12)
	}
}
