// Package plan is the resolved IR: everything concrete about one training
// plan. It is the only input of the targets.
package plan

import (
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/spec"
)

// Plan is a checked, fully resolved plan.
type Plan struct {
	// Source is the spec file the plan came from, as the user named it.
	Source  string       `json:"source"`
	Spec    spec.Spec    `json:"spec"`
	Derived spec.Derived `json:"derived"`
	// Layout places every rank and lists every process group.
	Layout *layout.Layout `json:"layout"`
	// Estimate is the cost model's view: memory, bubble, comms, time.
	Estimate *estimate.Estimate `json:"estimate"`
	// Choice is set when parc solve chose degrees the spec left open.
	Choice *Choice `json:"choice,omitempty"`
	// MegatronArgs is the argument list the plan implies for Megatron-Core's
	// entry point, computed once when the plan is resolved (the megatron
	// target's check fills it) and read by every target that runs it.
	MegatronArgs []string `json:"-"`
}

// Choice records what the solver chose and what came second.
type Choice struct {
	Open      []string `json:"open"`
	Chosen    string   `json:"chosen"`
	RunnerUp  string   `json:"runner_up,omitempty"`
	MarginPct float64  `json:"margin_pct,omitempty"`
	Evaluated int      `json:"evaluated"`
}
