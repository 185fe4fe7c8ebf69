// Package spec is the typed Go view of a user's plan: the output of the load
// stage (internal/load) and the input of check, solve, layout and estimate. It
// also derives the values Megatron-Core derives (dp, microbatches, padded
// vocabulary, the layers of each pipeline stage, ...).
package spec
