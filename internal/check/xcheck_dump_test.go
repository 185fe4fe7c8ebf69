package check_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/targets/megatron"
)

// megatronCase is one plan as testdata/megatron-xcheck/xcheck.py reads it:
// the spec with parc's verdict, and what parc's Megatron target would launch
// (the argument list and the workers' environment), so Megatron-LM validates
// exactly the flags parc emits.
type megatronCase struct {
	check.XCase
	// Args is megatron.Args: pretrain_gpt.py's arguments.
	Args []string `json:"args"`
	// Env is megatron.Env: the environment every worker starts with.
	Env map[string]string `json:"env"`
	// TargetCodes are the errors of the Megatron target itself (a plan it
	// cannot express): parc rejects those plans too.
	TargetCodes []string `json:"target_codes"`
}

func forMegatron(cases []check.XCase) []megatronCase {
	out := make([]megatronCase, len(cases))
	for i, c := range cases {
		p := &plan.Plan{Spec: *c.Spec, Derived: c.Derived}
		args, diags := megatron.Args(p, nil)
		out[i] = megatronCase{XCase: c, Args: args, Env: megatron.Env(p)}
		for _, d := range diags {
			if d.Severity == diag.Error {
				out[i].TargetCodes = append(out[i].TargetCodes, d.Code)
			}
		}
	}
	return out
}

// TestDumpForMegatron writes the corpus, random grids and random options, with parc's
// verdicts and the arguments parc's Megatron target renders for them, for the
// cross-check against Megatron-LM (testdata/README.md):
//
//	PARC_XCHECK_DIR=/tmp/x go test ./internal/check -run TestDumpForMegatron
//	CASES=/tmp/x/corpus.json ERRORS=/tmp/x/errors.json python3 testdata/megatron-xcheck/xcheck.py
func TestDumpForMegatron(t *testing.T) {
	dir := os.Getenv("PARC_XCHECK_DIR")
	if dir == "" {
		t.Skip("set PARC_XCHECK_DIR to dump plans for the Megatron cross-check")
	}
	for name, v := range map[string]any{
		"corpus.json":  forMegatron(check.XcheckCorpus(t)),
		"random1.json": forMegatron(check.RandomForXcheck(t, 7, 3000)),
		"random2.json": forMegatron(check.RandomForXcheck(t, 9, 3000)),
		"options.json": forMegatron(check.OptionsForXcheck(t, 21, 1000)),
		// More seeds of the same generators (README: the rows after options.json).
		"random66.json":      forMegatron(check.RandomForXcheck(t, 66, 1500)),
		"options202.json":    forMegatron(check.OptionsForXcheck(t, 202, 3000)),
		"options303.json":    forMegatron(check.OptionsForXcheck(t, 303, 3000)),
		"options404.json":    forMegatron(check.OptionsForXcheck(t, 404, 3000)),
		"optimizer505.json":  forMegatron(check.OptimizerForXcheck(t, 505, 1000)),
		"activation606.json": forMegatron(check.ActivationForXcheck(t, 606, 600)),
		"lion707.json":       forMegatron(check.LionForXcheck(t, 707, 500)),
		"emerging808.json":   forMegatron(check.EmergingForXcheck(t, 808, 500)),
		"budget909.json":     forMegatron(check.BudgetForXcheck(t, 909, 500)),
		"errors.json":        check.ErrorCodes(),
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
