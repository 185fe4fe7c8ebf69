// Package schema embeds the CUE schema #Plan that every spec is unified with.
// It is the first half of the load stage; internal/load does the unification.
package schema

import _ "embed"

// Source is the text of plan.cue.
//
//go:embed plan.cue
var Source []byte

// Filename is the name positions inside the schema carry.
const Filename = "parc:schema/plan.cue"
