package megatron

import "parc.dev/parc/internal/diag"

// Codes lists every code the Megatron target emits.
var Codes = []diag.CodeInfo{
	{Code: "extra-arg-conflict", Severity: diag.Error, Meaning: "A raw argument in launch.extra_args sets something parc already generates from the spec.", Fix: "Set the spec field instead, or remove the extra argument."},
	{Code: "extra-arg-unknown", Severity: diag.Error, Meaning: "A raw argument in launch.extra_args is not one of pretrain_gpt.py's options: Megatron's parser stops with \"unrecognized arguments\".", Fix: "Check its spelling against Megatron-LM's arguments; an option a parser extension of the entry point adds (ModelOpt's --enable-gpt-oss) is listed in launch.extension_args."},
	{Code: "option-like-value", Severity: diag.Error, Meaning: "A value from a spec field (a data path, a checkpoint directory, a tokenizer file, a logging name) starts with \"-\": Megatron's argument parser would read it as an option (\"--train-iters=9\" in data.paths would override the generated --train-iters).", Fix: "Write a path that starts with - as ./-name."},
	{Code: "megatron-arg-line-break", Severity: diag.Error, Meaning: "A value with a line break cannot be written to megatron.args (one argument per line).", Fix: "Remove the line break."},
}
