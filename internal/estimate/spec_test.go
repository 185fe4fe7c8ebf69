package estimate

import (
	"math"
	"testing"

	"parc.dev/parc/internal/spec"
)

// Spec builders for the tests: every field the schema defaults is filled in
// as the schema fills it.

func intp(i int) *int { return &i }

func baseSpec() *spec.Spec {
	return &spec.Spec{
		Model: spec.Model{
			Name: "model", MakeVocabDivisibleBy: 128, Activation: "gelu", Normalization: "layernorm",
			NormEpsilon: 1e-5, PositionEmbedding: "learned_absolute", RotaryBase: 10000, RotaryPercent: 1,
			TieEmbeddings: true, Bias: true,
		},
		Cluster: spec.Cluster{
			Name: "dgx-h100", GPUsPerNode: 8, NVLinkDomain: 8, Nodes: 1,
			GPU:        spec.GPU{Name: "H100", MemoryGiB: 80, BF16TFLOPs: 989, ComputeCapability: 9},
			NVLinkGBps: 450, NetworkGBps: 50,
		},
		Parallel: spec.Parallel{
			TP: 1, PP: 1, VPP: 1, CP: 1, EP: 1, Order: "tp-cp-ep-dp-pp", OverlapP2P: true,
			CPCommType: "p2p", DistributedOptimizerInstances: 1,
		},
		Train: spec.Train{
			Precision: "bf16", FP8Format: "hybrid", FP8Recipe: "delayed", Recompute: "none",
			RecomputeMethod: "uniform",
			// GPT models train with dropout 0.1 (Megatron's default, which
			// Korthikanti et al. 2022 and Megatron's memory formula assume).
			HiddenDropout: 0.1, AttentionDropout: 0.1,
		},
	}
}

// gpt175B is GPT-3 175B as Narayanan et al. 2021 trained it (Table 1 row
// "175B": t=8, p=16, b=1, batch 1536), with SP and selective recompute.
func gpt175B() *spec.Spec {
	s := baseSpec()
	s.Model.Layers, s.Model.Hidden, s.Model.Heads, s.Model.Vocab = 96, 12288, 96, 51200
	s.Cluster.Nodes = 128
	s.Parallel.TP, s.Parallel.PP = 8, 16
	s.Train.SeqLength, s.Train.MicroBatch, s.Train.GlobalBatch = 2048, 1, 1536
	s.Train.Recompute, s.Train.DistributedOptimizer = "selective", true
	return s
}

// llama70B is Llama-3-70B (GQA 8 groups, SwiGLU 28672, RMSNorm, RoPE,
// untied 128256 vocabulary, no biases) on 16 nodes: tp=8, pp=4, vpp=5, dp=4.
func llama70B() *spec.Spec {
	s := baseSpec()
	m := &s.Model
	m.Layers, m.Hidden, m.Heads, m.Vocab = 80, 8192, 64, 128256
	m.QueryGroups, m.FFNHidden = intp(8), intp(28672)
	m.Activation, m.Normalization, m.PositionEmbedding = "swiglu", "rmsnorm", "rope"
	m.TieEmbeddings, m.Bias = false, false
	s.Train.HiddenDropout, s.Train.AttentionDropout = 0, 0 // Llama recipes train without dropout
	s.Cluster.Nodes = 16
	s.Parallel.TP, s.Parallel.PP, s.Parallel.VPP = 8, 4, 5
	s.Train.SeqLength, s.Train.MicroBatch, s.Train.GlobalBatch = 8192, 1, 128
	s.Train.Recompute, s.Train.DistributedOptimizer = "selective", true
	return s
}

// mixtral is a Mixtral-8x7B-like MoE on 8 nodes: tp=2, pp=4, ep=4, etp=1.
func mixtral() *spec.Spec {
	s := baseSpec()
	m := &s.Model
	m.Layers, m.Hidden, m.Heads, m.Vocab = 32, 4096, 32, 32000
	m.QueryGroups, m.FFNHidden = intp(8), intp(14336)
	m.Activation, m.Normalization, m.PositionEmbedding = "swiglu", "rmsnorm", "rope"
	m.TieEmbeddings, m.Bias = false, false
	m.MoE = &spec.MoE{Experts: 8, TopK: 2, LayerFreq: 1, Dispatcher: "alltoall"}
	s.Cluster.Nodes = 8
	s.Parallel.TP, s.Parallel.PP, s.Parallel.EP, s.Parallel.ETP = 2, 4, 4, intp(1)
	s.Train.SeqLength, s.Train.MicroBatch, s.Train.GlobalBatch = 4096, 1, 256
	s.Train.Recompute, s.Train.DistributedOptimizer = "selective", true
	return s
}

// gpt1B is a 1.3B GPT on one node of 8 with plain data parallelism and full
// recompute.
func gpt1B() *spec.Spec {
	s := baseSpec()
	s.Model.Layers, s.Model.Hidden, s.Model.Heads, s.Model.Vocab = 24, 2048, 16, 50257
	s.Train.SeqLength, s.Train.MicroBatch, s.Train.GlobalBatch = 2048, 4, 64
	s.Train.Recompute = "full"
	return s
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if relErr(got, want) > tol {
		t.Errorf("%s = %.10g, want %.10g (relative error %.3g > %.3g)", what, got, want, relErr(got, want), tol)
	}
}

func run(t *testing.T, s *spec.Spec) *Estimate {
	t.Helper()
	e, _ := Run(s, spec.Derive(s), nil, nil)
	if e == nil {
		t.Fatal("no estimate")
	}
	return e
}
