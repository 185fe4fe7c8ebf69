package measured

import "encoding/json"

// Run is one line of the measured corpus
// (internal/estimate/testdata/measured/runs.jsonl): a published training
// run with its plan, the settings it ran with (Megatron-Bridge's names),
// what its source measured and the source. Only the fields every consumer
// relies on are typed; the rest stay raw.
type Run struct {
	ID           string          `json:"id"`
	Source       string          `json:"source"`
	SourceDetail string          `json:"source_detail"`
	Release      string          `json:"release"`
	Model        json.RawMessage `json:"model"`
	GPU          string          `json:"gpu"`
	GPUs         int             `json:"gpus"`
	GPUsPerNode  int             `json:"gpus_per_node"`
	NVLinkDomain int             `json:"nvlink_domain"`
	// SlurmSegment is Slurm's --segment the run's launcher passed (nodes
	// per segment, each segment inside one NVLink domain); 0 when it
	// passed none or the source does not say.
	SlurmSegment int `json:"slurm_segment,omitempty"`
	Parallel     struct {
		TP  *int `json:"tp"`
		PP  *int `json:"pp"`
		VPP *int `json:"vpp"`
		CP  *int `json:"cp"`
		EP  *int `json:"ep"`
		ETP *int `json:"etp"`

		SP                  *bool  `json:"sp"`
		FirstStageLayers    *int   `json:"first_stage_layers"`
		LastStageLayers     *int   `json:"last_stage_layers"`
		AccountForEmbedding *bool  `json:"account_for_embedding"`
		AccountForLoss      *bool  `json:"account_for_loss"`
		Layout              string `json:"layout"`
	} `json:"parallel"`
	Train struct {
		SeqLength   int    `json:"seq_length"`
		MicroBatch  *int   `json:"micro_batch"`
		GlobalBatch *int   `json:"global_batch"`
		Precision   string `json:"precision"`
		FP8Recipe   string `json:"fp8_recipe"`
		Recompute   string `json:"recompute"`

		RecomputeModules     []string `json:"recompute_modules"`
		RecomputeLayers      *int     `json:"recompute_layers"`
		FSDP                 *bool    `json:"fsdp"`
		DistributedOptimizer *bool    `json:"distributed_optimizer"`
	} `json:"train"`
	Settings map[string]any `json:"settings"`
	Measured map[string]any `json:"measured"`
	Derived  map[string]any `json:"derived"`
	// KnownSlow quotes the source where it marks this measurement as
	// abnormally slow (a table footnote naming a known regression): the
	// calibration reports such rows apart instead of counting them as
	// model error.
	KnownSlow string `json:"known_slow"`
	// FLOPsCount names the FLOP count the source divided by to print its
	// model TFLOP/s where that is not Megatron's at d98e8a64 (the
	// calibration's MegatronFLOPs): "megatron-full-attention" or
	// "narayanan-eq3" (internal/estimate calibration_test.go). The
	// calibration converts the TFLOP/s to tokens/s with the same count.
	FLOPsCount string `json:"flops_count"`
	Notes      string `json:"notes"`
}

// degree is a parallel degree as the run gives it, 1 when unsaid.
func degree(p *int) int {
	if p == nil {
		return 1
	}
	return *p
}
