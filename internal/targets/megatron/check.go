package megatron

import (
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/plan"
)

// Check is the Megatron target's check of a resolved plan (a resolve.Check):
// it builds the argument list once, records it on the plan for the targets
// that run it (megatron.args, launch.json), and returns what Megatron cannot
// be told (see Args).
func Check(p *plan.Plan, at diag.Locator) diag.List {
	args, diags := Args(p, at)
	p.MegatronArgs = args
	return diags
}
