package estimate

import (
	"os"
	"path/filepath"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/spec"
)

// Plans that ran on real GPUs must fit in parc's memory model (issue 14 §3:
// both were rejected before). Outside truth: the runs happened. Each must
// also stay within limit of the GPU: the 90% headroom, except the Llama 3
// 8B fp8 example, which keeps its weights in fp8 and, on Hopper, each
// one's transpose beside it (quantizedWeightCopies: 6.5 GiB here): parc puts
// it at 93% of the 80 GiB it ran in, 85% without the transposes.
func TestPublishedRunsFit(t *testing.T) {
	for _, c := range []struct {
		name, text string
		limit      float64
	}{
		// NVIDIA Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh: one
		// DGX H100, TP1 CP1 PP1, micro batch 1, global batch 128, sequence
		// 8192, fp8 hybrid with --fp8-param-gather, --grad-reduce-in-bf16,
		// distributed optimizer with overlapped grad reduce and param gather.
		{"llama3-8b-fp8-megatron-example", `
model: models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 1}
parallel: {tp: 1, pp: 1, cp: 1}
train: {seq_length: 8192, micro_batch: 1, global_batch: 128, precision: "fp8", fp8_param_gather: true,
	grad_reduce_in_bf16: true, distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true, iters: 10}
`, 1},
		// Grattafiori et al. 2024 (arXiv:2407.21783) §3.3.2 and Table 4: Llama 3
		// 405B on 16,384 H100-80GB, TP8 CP1 PP16 (DP 128), sequence 8192, batch
		// 16 per data-parallel rank (global 2048), one layer fewer on the first
		// and last stages, FSDP sharding optimizer state and gradients but not
		// the parameters (Megatron-FSDP's optim_grads), bf16. 1F1B here: the
		// paper's own schedule interleaves, which holds more, not less.
		{"llama3-405b-paper", `
model: models.llama3_405b
cluster: clusters.dgx_h100 & {nodes: 2048}
parallel: {tp: 8, pp: 16, cp: 1, first_stage_layers: 7, last_stage_layers: 7}
train: {seq_length: 8192, micro_batch: 1, global_batch: 2048, precision: "bf16", fsdp: true,
	data_parallel_sharding_strategy: "optim_grads", overlap_grad_reduce: true, overlap_param_gather: true, iters: 10}
`, 0.9},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := loadSpecText(t, c.text)
			d := spec.Derive(s)
			e, ds := Run(s, d, nil, diag.NoPos)
			for _, x := range ds {
				if x.Code == CodeMemoryExceedsGPU {
					t.Errorf("a plan that ran is rejected: %s", x.Message)
				}
			}
			if e.Memory.FractionOfGPU > c.limit {
				t.Errorf("peak %s is %.0f%% of the GPU, above %.0f%%", GiB(e.Memory.PerGPUPeakBytes), 100*e.Memory.FractionOfGPU, 100*c.limit)
			}
			if e.MFU <= 0 || e.MFU > 1 {
				t.Errorf("MFU %g", e.MFU)
			}
		})
	}
}

// The memory options change the state by exactly Megatron's widths: bf16
// main gradients save 2 bytes per parameter; 16-bit weights of fp8 layers
// add Transformer Engine's cached fp8 copy (quantizedWeightCopies: 2 bytes per
// linear parameter before Blackwell, the copy and its transpose; 1 from
// Blackwell on with per-tensor scaling; 2 with MXFP8, rowwise and
// columnwise; none with the cache disabled); fp8 parameters keep 1 byte per
// linear parameter (embeddings and output layer stay 16-bit), before
// Blackwell with their 1-byte transpose, with MXFP8 with their 1-byte
// columnwise copy.
func TestMemoryOptionsWidths(t *testing.T) {
	s := llama70B()
	s.Train.Precision = "fp8"
	base := run(t, s)
	s.Train.GradReduceInBF16 = true
	bf := run(t, s)
	st0, st1 := base.Memory.Stages[1], bf.Memory.Stages[1] // a middle stage: no embedding
	n := float64(st0.Params)
	near(t, "bf16 main gradients", float64(st0.Gradients-st1.Gradients), 2*n, 1e-9)
	near(t, "16-bit weights and their cached fp8 copy and transpose (H100)", float64(st1.Weights), 4*n, 1e-9)
	s.Train.FP8ParamGather = true
	near(t, "fp8 parameters with their transposes (H100)", float64(run(t, s).Memory.Stages[1].Weights), 2*n, 1e-9)
	s.Train.FP8ParamGather = false
	s.Kernels.DisableParameterTransposeCache = true
	near(t, "16-bit weights without the cache", float64(run(t, s).Memory.Stages[1].Weights), 2*n, 1e-9)
	s.Kernels.DisableParameterTransposeCache = false
	s.Cluster.GPU.ComputeCapability = 10 // Blackwell reads fp8 column-wise: no transpose
	near(t, "16-bit weights and their cached fp8 copy (compute capability 10)", float64(run(t, s).Memory.Stages[1].Weights), 3*n, 1e-9)
	s.Train.FP8Recipe = "mxfp8"
	near(t, "16-bit weights and their rowwise and columnwise MXFP8 copies", float64(run(t, s).Memory.Stages[1].Weights), 4*n, 1e-9)
	s.Train.FP8ParamGather = true
	near(t, "MXFP8 parameters, rowwise and columnwise", float64(run(t, s).Memory.Stages[1].Weights), 2*n, 1e-9)
	s.Train.FP8Recipe = "delayed"
	near(t, "fp8 parameters (compute capability 10)", float64(run(t, s).Memory.Stages[1].Weights), n, 1e-9)
}

func loadSpecText(t *testing.T, body string) *spec.Spec {
	t.Helper()
	return loadPlanText(t, "package plan\n\nimport (\n\t\"parc.dev/stdlib/models\"\n\t\"parc.dev/stdlib/clusters\"\n)\n"+body)
}

// loadPlanText loads a whole spec text (package clause and imports
// included).
func loadPlanText(t *testing.T, text string) *spec.Spec {
	t.Helper()
	res, ds := load.Load(load.Source{Path: filepath.Join(os.TempDir(), "plan.cue"), Data: []byte(text)})
	if ds.HasErrors() {
		t.Fatalf("load: %v", ds)
	}
	s, ds := res.Decode()
	if ds.HasErrors() {
		t.Fatalf("decode: %v", ds)
	}
	return s
}
