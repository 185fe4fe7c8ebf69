// Package compiler is parc's pipeline as one pure function: a spec source in,
// a resolved plan, its artifacts and every diagnostic out.
//
//	load → spec → check → (solve) → layout → estimate → plan → targets
//
// Nothing here writes files or prints: cmd/parc (via internal/cli) does that.
package compiler

// MegatronCommit is the NVIDIA/Megatron-LM commit whose rules, defaults and
// flags parc follows (internal/targets/megatron/options.tsv is its argparse
// table); `parc version` prints it.
const MegatronCommit = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
