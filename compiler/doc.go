// Package compiler is parc's pipeline as one pure function: a spec source in,
// a resolved plan, its artifacts and every diagnostic out.
//
//	load → spec → check → (solve) → layout → estimate → plan → targets
//
// Nothing here writes files or prints: cmd/parc (via internal/cli) does that.
package compiler
