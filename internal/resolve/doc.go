// Package resolve runs the stages after load on one concrete spec — derive,
// check, layout, the topology checks, estimate, and what the targets cannot
// express — and returns the plan IR. Both the compiler (one spec) and the
// solver (each candidate it verifies) go through it, so a candidate is
// accepted exactly when parc vet would accept it.
package resolve
