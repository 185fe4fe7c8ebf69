package check

import (
	"slices"
	"testing"

	"parc.dev/parc/internal/diag"
)

// Megatron-LM's verdicts on train.optimizer (d98e8a64): validate_args
// rejects an emerging optimizer (muon) with FSDP and with a checkpoint
// format other than torch or torch_dist (O5/O7); OptimizerConfig rejects
// the precision-aware optimizer with anything but adam (O9);
// get_megatron_optimizer rejects fp16 with an emerging optimizer and its
// layer-wise distributed optimizer with overlap_param_gather_with_optimizer_step
// (O10). sgd and adam pass all of them; muon with the distributed optimizer
// is its layer-wise one, not an error. TestMegatronParity runs the cases
// Megatron's own validation covers through it.
func TestOptimizerOptions(t *testing.T) {
	for _, tc := range []struct {
		override string
		paths    []string // where optimizer-options is reported
	}{
		{`{"train": {"optimizer": "muon", "distributed_optimizer": true}}`, nil},
		{`{"train": {"optimizer": "muon"}}`, nil},
		{`{"train": {"optimizer": "sgd", "distributed_optimizer": true}}`, nil},
		{`{"train": {"optimizer": "sgd", "fsdp": true}}`, nil},
		{`{"train": {"optimizer": "sgd", "precision": "fp16"}}`, nil},
		{`{"train": {"optimizer": "muon", "fsdp": true}}`, []string{"train.optimizer"}},
		{`{"train": {"optimizer": "muon", "precision": "fp16"}}`, []string{"train.optimizer"}},
		{`{"train": {"optimizer": "muon", "distributed_optimizer": true, "precision_aware_optimizer": true}}`, []string{"train.precision_aware_optimizer"}},
		{`{"train": {"optimizer": "sgd", "distributed_optimizer": true, "precision_aware_optimizer": true}}`, []string{"train.precision_aware_optimizer"}},
		{`{"train": {"distributed_optimizer": true, "precision_aware_optimizer": true}}`, nil},
		{`{"train": {"optimizer": "muon"}, "checkpoint": {"format": "torch"}}`, nil},
		{`{"train": {"optimizer": "muon"}, "checkpoint": {"format": "torch_dcp"}}`, []string{"checkpoint.format"}},
		{`{"train": {"optimizer": "muon", "distributed_optimizer": true, "overlap_param_gather_with_optimizer_step": true}}`,
			[]string{"train.overlap_param_gather_with_optimizer_step"}},
		{`{"train": {"optimizer": "muon", "fsdp": true, "precision": "fp16"}}`, []string{"train.optimizer", "train.optimizer"}},
	} {
		l := runSpec(specFrom(t, parse(t, tc.override)))
		var got []string
		for _, d := range l {
			if d.Code == "optimizer-options" {
				got = append(got, d.Path)
				if d.Severity != diag.Error || d.Hint == "" {
					t.Errorf("%s: %v", tc.override, d)
				}
			}
		}
		if !slices.Equal(got, tc.paths) {
			t.Errorf("%s: optimizer-options at %v, want %v: %v", tc.override, got, tc.paths, l)
		}
	}
}
