package measured

// RecomputeConstraint is what a measured run's spec writes for
// train.recompute: "" when the run says how it recomputed (train.recompute,
// and recompute_modules with selective recomputation), else the CUE
// constraint that leaves the field open. The rows' notes say why a run may
// not say it ("recompute ... unknown, not off"): the run fit its GPUs with
// some recomputation the source does not give. Its published plan is then
// rated with the best recomputation the checks allow, the one parc solve
// picks with every other field as the run gives it and the whole GPU as
// the memory limit (the run fit): none where the plan fits without,
// else the least that fits. The solver corpus (TestPublishedCorpus,
// internal/solve) and the calibration (TestCalibration,
// internal/estimate) both write a run's recomputation with it.
//
// Selective recomputation without its modules (Megatron-Bridge's
// DeepSeek-V3 rows: "modules vary by GPU; not copied") admits only
// "selective" and leaves recompute_modules to the solver likewise.
func RecomputeConstraint(train map[string]any) string {
	switch r, _ := train["recompute"].(string); {
	case r == "":
		return "string"
	case r == "selective" && train["recompute_modules"] == nil:
		return `=~"^selective$"`
	}
	return ""
}
