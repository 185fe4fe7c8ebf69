// Package importer holds what the importers (parc import megatron) share
// with the rest of parc: their diagnostic codes. The importers themselves
// live in subpackages (importer/megatron).
package importer

import "parc.dev/parc/internal/diag"

// Codes lists every code `parc import` emits. Diagnostics of the imported
// spec's own checks keep vet's codes, placed at the input's line.
var Codes = []diag.CodeInfo{
	{Code: "import-no-command", Severity: diag.Error, Meaning: "The input holds no training command: no command runs a .py program with options, and no line starts with an option.", Fix: "Give the arguments of pretrain_gpt.py, one per line, or the command line or script that runs it."},
	{Code: "import-unknown-option", Severity: diag.Error, Meaning: "Megatron's argument parser (pretrain_gpt.py, megatron/training/arguments.py) does not know an argument: it stops with \"unrecognized arguments\".", Fix: "Check the spelling against Megatron-LM's arguments.py; options of extensions (ModelOpt) need the extension's parser."},
	{Code: "import-bad-argument", Severity: diag.Error, Meaning: "Megatron's argument parser rejects an argument's values: a missing value, a value that is not an int/float, or not one of the option's choices.", Fix: "Give the option the number and kind of values Megatron's parser takes."},
	{Code: "import-unresolved", Severity: diag.Warning, Meaning: "A shell expansion in the script cannot be known without running it (a variable the script never assigns, $(command), an unsupported ${...} form); the text is kept as written.", Fix: "Assign the variable in the script or write its value; check the imported value."},
	{Code: "import-shell", Severity: diag.Warning, Meaning: "The script has control flow (if/for/while/case) or a quote left open; the importer does not evaluate it and applies every assignment in the order written.", Fix: "Check the imported spec against the branch the run takes, or import the argument list itself."},
	{Code: "import-program", Severity: diag.Warning, Meaning: "The training command runs another program than pretrain_gpt.py; its arguments are read with pretrain_gpt.py's parser and the spec's launch.program keeps the program.", Fix: "Check the spec against that program's own options."},
	{Code: "import-cluster-assumed", Severity: diag.Warning, Meaning: "The arguments do not say which GPUs run them; the spec uses the default cluster preset.", Fix: "Name the cluster with --cluster PRESET (or --gpus-per-node)."},
	{Code: "import-nodes-assumed", Severity: diag.Warning, Meaning: "Neither --nodes nor torchrun's --nnodes gives the node count; the spec uses the fewest nodes the parallel degrees and the global batch fit.", Fix: "Give the job's node count with --nodes N."},
	{Code: "import-extra-arg", Severity: diag.Warning, Meaning: "An argument has no spec field; it is carried verbatim in launch.extra_args, so Megatron still gets it.", Fix: "Keep it, or give the schema a field for it (issue 13's naming rule)."},
	{Code: "import-megatron-rejects", Severity: diag.Error, Meaning: "Megatron's validate_args (d98e8a64) rejects a combination of the arguments that a spec cannot even write, because parc emits only one of them: more than one of --num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout; --num-layers-per-virtual-pipeline-stage with an uneven pipeline or layers it does not divide.", Fix: "Keep one way of giving the virtual pipeline (parc's parallel.vpp or parallel.layout)."},
	{Code: "import-no-eval-interval", Severity: diag.Warning, Meaning: "The arguments leave --eval-interval out, so the spec writes logging.eval_interval: null and Megatron keeps its default None; Megatron d98e8a64 divides train_iters by it when it sizes the datasets (training.py get_train_valid_test_num_samples), so pretraining stops at start-up with a TypeError unless --full-validation or --skip-train is given.", Fix: "Set logging.eval_interval (parc's default is 1000) unless the run validates fully or skips training."},
	{Code: "import-not-round-trip", Severity: diag.Warning, Meaning: "parc compile of the imported spec gives Megatron a different value for an argparse destination than the input does, and an extra argument cannot fix it (parc writes that option itself).", Fix: "Edit the spec field the option comes from, or run with the original arguments."},
	{Code: "import-hf-json", Severity: diag.Error, Meaning: "parc import hf: the file is not a JSON object, or not the config.json of a decoder transformer (num_hidden_layers, hidden_size, num_attention_heads).", Fix: "Give the model's config.json."},
	{Code: "import-hf-unexpressed", Severity: diag.Warning, Meaning: "parc import hf: a config.json key changes the model but has no spec field (sliding windows, attention sinks, a RoPE scaling other than llama3/YaRN, a fractional RoPE base); the spec leaves it out.", Fix: "Check the spec against the model's architecture."},
}
