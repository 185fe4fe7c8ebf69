// Package stdlib is the embedded preset library of the load stage: CUE presets
// for published model shapes (package models, imported as
// "parc.dev/stdlib/models") and GPU systems (package clusters, imported as
// "parc.dev/stdlib/clusters"). internal/load copies every embedded file into the
// user's CUE module under cue.mod/pkg/parc.dev/stdlib/..., so a spec can write
//
//	import "parc.dev/stdlib/models"
//	model: models.llama3_70b
//
// The presets are plain data (no definitions) and use only CUE language
// features of v0.9 and older, because the user's module language version
// governs them too.
package stdlib

import "embed"

// FS holds models/*.cue and clusters/*.cue.
//
//go:embed models clusters
var FS embed.FS
