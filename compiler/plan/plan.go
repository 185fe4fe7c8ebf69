// Package plan is the resolved IR: everything concrete about one training
// plan. It is the only input of the targets.
package plan

import "parc.dev/parc/compiler/spec"

// Plan is a checked, fully resolved plan.
type Plan struct {
	// Source is the spec file the plan came from, as the user named it.
	Source  string       `json:"source"`
	Spec    spec.Spec    `json:"spec"`
	Derived spec.Derived `json:"derived"`
}
