package estimate

import (
	"strings"

	"parc.dev/parc/internal/spec"
)

// Accuracy is how far the step-time model was from published measurements
// of the same kind of model on the same GPU: over the runs of parc's measured
// corpus that its calibration counts (testdata/calibration, fit and held out,
// not those their source marks as slow), the signed error of the estimated
// tokens/s, estimated / measured − 1. A negative error is a model that rated
// those runs slower than they ran. It says how far to trust a plan's step
// time, from outside the model: measured runs, not the model's own opinion.
type Accuracy struct {
	// Model is the kind of model: ModelKind.
	Model string `json:"model"`
	// GPU is the GPU's family (GPUFamily of cluster.gpu.name).
	GPU string `json:"gpu"`
	// Precision is the training precision the runs share (PrecisionClass):
	// a line of its own where the runs of one kind of model on one GPU span
	// precisions and this one has minPrecisionRuns of them; empty on the
	// line that counts every precision.
	Precision string `json:"precision,omitempty"`
	// Runs is how many published runs of that kind on that GPU the corpus
	// holds.
	Runs int `json:"runs"`
	// MedianError, P10Error and P90Error are the median and the 10th and
	// 90th percentile (nearest rank) of the signed error; LowestError and
	// HighestError its extremes.
	MedianError  float64 `json:"median_error"`
	P10Error     float64 `json:"p10_error"`
	P90Error     float64 `json:"p90_error"`
	LowestError  float64 `json:"lowest_error"`
	HighestError float64 `json:"highest_error"`
}

// The kinds of model the accuracy table groups runs by (ModelKind).
const (
	KindDense     = "dense"
	KindCoarseMoE = "MoE, up to 16 experts"
	KindFineMoE   = "MoE, more than 16 experts"
	// KindLargeFineMoE is a fine-grained MoE of more than
	// largeMoEParams parameters.
	KindLargeFineMoE = "MoE, more than 16 experts, over 150B parameters"
	// KindDenseAtScale is a dense model on denseScaleGPUs GPUs or more.
	KindDenseAtScale = "dense, 4,096 GPUs or more"
	// KindDenseOneMicrobatch is a dense model on oneMicrobatchGPUs GPUs or
	// more (and fewer than denseScaleGPUs) whose step is one microbatch per
	// GPU.
	KindDenseOneMicrobatch = "dense, one microbatch per step, 32 GPUs or more"
)

// oneMicrobatchGPUs splits off the dense plans whose step is a single
// microbatch per GPU (global batch = data-parallel size × micro batch) on 32
// GPUs or more (below 4,096): a cost per step weighs most on such steps.
// Until each step waited for its slowest node (Calibration.StepJitterS) the
// model rated most published runs of that kind faster than they ran —
// MLPerf Training v5.1's Llama 3.1 8B on B200, GB200, GB300 and H100 from +3%
// to +112%, where the same code on one node is within -9% to +2%
// (testdata/measured/README.md, session 47); with the wait they are within
// -15% to +24%, B200, GB200 and GB300 within -15% to -2%. Such a plan reads
// its own line (testdata/calibration/README.md, "Error by GPU and kind of
// model", which TestCalibration writes with accuracy_measured.go).
const oneMicrobatchGPUs = 32

// denseScaleGPUs splits the dense models of the accuracy table by the GPUs
// a plan runs on: every published dense run on 4,096 H100 or more is rated
// faster than it ran (the Llama 3 paper's 8K and 16K runs, NVIDIA's MLPerf
// Training GPT-3 175B runs from 4,096 to 11,616 GPUs and its Llama 3.1 405B
// run on 8,192, Nemotron-4 340B on 6,144, the Megatron-LM README's 462B on
// 6,144: +2% to +11%, the Llama 3 paper's +3% to +8% since each
// microbatch's sharded-gradient reduction keeps its overlap residual
// (exposedDataParallel; +14% to +16% before), testdata/calibration/README.md,
// "Error by GPU and kind of model"), where the smaller runs center on 0, so
// a plan at that scale reads its own line.
const denseScaleGPUs = 4096

// largeMoEParams splits the fine-grained MoEs of the accuracy table by size:
// the model rates the large ones (DeepSeek-V3 and Kimi-K2 with 671B and
// 1T parameters, Qwen3-235B-A22B) 6-18% slower than measured in the median
// on each GPU and the smaller ones (Qwen3-30B-A3B, GPT-OSS-120B) within 4%
// except on H100 (-9%) (testdata/calibration/README.md, "Error by GPU and
// kind of model"), so one line for both would tell neither what to expect.
const largeMoEParams = 150e9

// coarseMoEExperts is the most experts of a coarse MoE (Mixtral's 8): the
// published runs of the corpus have up to 8 or at least 128, and the
// model's MoE costs are fitted and checked on each kind apart where they
// differ (the accuracy table, the grouped penalty's one-expert case in
// moeBlock).
const coarseMoEExperts = 16

// ModelKind is the kind of model the accuracy table groups runs by: dense
// (on fewer or at least denseScaleGPUs GPUs, one microbatch per step on
// oneMicrobatchGPUs or more apart), or MoE with up to 16 experts
// (Mixtral's coarse experts) or more
// (fine-grained experts: DeepSeek, Qwen3, GPT-OSS), whose step times the
// model gets least right, the ones of more than largeMoEParams parameters
// apart.
func ModelKind(s *spec.Spec) string {
	m := s.Model
	d := spec.Derive(s)
	switch {
	case m.MoE == nil && d.World >= denseScaleGPUs:
		return KindDenseAtScale
	case m.MoE == nil && d.World >= oneMicrobatchGPUs && d.Microbatches == 1:
		return KindDenseOneMicrobatch
	case m.MoE == nil:
		return KindDense
	case m.MoE.Experts <= coarseMoEExperts:
		return KindCoarseMoE
	}
	if p := newModelShape(s, d).totalParams(); float64(p.Total()) > largeMoEParams {
		return KindLargeFineMoE
	}
	return KindFineMoE
}

// GPUFamily is the product of the GPU a name names (spec.LookupGPU, the
// datasheet table's reading of names): "H100" for "H100-SXM5-80GB" and for
// "NVIDIA H100 80GB HBM3"; the name itself for a GPU parc has no datasheet of.
func GPUFamily(name string) string {
	if d, ok := spec.LookupGPU(name, 0); ok {
		return d.Product()
	}
	return name
}

// minPrecisionRuns is the fewest runs of one precision that make a line of
// their own in the accuracy table: the model's bias differs by precision on
// some GPUs (dense models on B300 and GB300: the NVFP4 runs rated 16% and 8%
// faster than they ran in the median, the FP8 ones on GB300 7% slower;
// fine-grained MoE of up to 150B parameters on H100: BF16 16% slower, FP8
// within 1%; testdata/calibration/README.md, "Error by GPU, kind of model and
// precision"), and a line of fewer runs would say little.
const minPrecisionRuns = 5

// PrecisionClass is the name the accuracy table gives a plan's training
// precision: BF16, FP16, FP32, FP8 (any recipe) or NVFP4 (precision "fp4",
// whose quantized GEMMs are NVFP4).
func PrecisionClass(s *spec.Spec) string {
	if s.Train.Precision == "fp4" {
		return "NVFP4"
	}
	return strings.ToUpper(s.Train.Precision)
}

// AccuracyOf is the measured accuracy for plans of s's kind of model on its
// GPU, in its precision where the table has a line for it, or nil when the
// corpus holds no published run of them.
func AccuracyOf(s *spec.Spec) *Accuracy {
	kind, gpu, prec := ModelKind(s), GPUFamily(s.Cluster.GPU.Name), PrecisionClass(s)
	var line *Accuracy
	for i := range measuredAccuracy {
		a := &measuredAccuracy[i]
		if a.Model != kind || !strings.EqualFold(a.GPU, gpu) || (a.Precision != "" && a.Precision != prec) {
			continue
		}
		if line == nil || a.Precision != "" {
			line = a // the precision's own line over the line of every precision
		}
	}
	if line == nil {
		return nil
	}
	c := *line
	return &c
}
