// Package megatron is the Megatron-Core target: it turns a resolved plan into
// the arguments of Megatron-LM's pretrain_gpt.py (megatron.args, one flag or
// value per line), the environment the workers need, and the worker command
// shared by every launch target.
//
// Every flag name and value written here is one that Megatron-Core's own
// argument parser and validate_args accept, at the commit recorded in
// options.tsv (dumped from the real argparse parser; see testdata/README.md
// for how it was made and how the generated arguments are run through
// Megatron's parse_args and validate_args).
package megatron
