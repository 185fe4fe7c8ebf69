package compiler

import (
	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/importer"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/solve"
	"parc.dev/parc/internal/targets/megatron"
)

// compileCodes are the codes Compile itself emits.
var compileCodes = []diag.CodeInfo{
	{Code: "template", Severity: diag.Error, Meaning: "A user template (launch.templates or --templates) fails to parse or execute, or a file there overrides no target; the message names the template's file and line.", Fix: "Fix the template (text/template, missingkey=error) or rename the file to NAME.tmpl of a target."},
	{Code: "templates-outside", Severity: diag.Error, Meaning: "launch.templates leads outside the spec's directory (.., an absolute path, or a symbolic link): a spec must not pull the templates that write its scripts from elsewhere.", Fix: "Keep the templates beside the spec, or pass --templates DIR on the command line."},
	{Code: "relative-path", Severity: diag.Warning, Rule: "", Meaning: "A relative path (launch.program, data paths, tokenizer files, checkpoints, tensorboard_dir) without an absolute launch.workdir: the job resolves it against the directory sbatch is run in, not the output directory.", Fix: "Set launch.workdir to an absolute directory (the Megatron-LM checkout), or make the paths absolute."},
	{Code: "slurm-output-dir", Severity: diag.Warning, Rule: "", Meaning: "cluster.slurm.output or error names a file in a directory; Slurm opens it before the script runs and does not create the directory.", Fix: "Create the directory before sbatch, or name a file in an existing directory."},
	{Code: "templates-dir", Severity: diag.Error, Meaning: "The template directory does not exist.", Fix: "Give a directory of NAME.tmpl files."},
}

// Codes lists every diagnostic code parc emits, stage by stage in pipeline
// order. README.md's table is generated from it.
func Codes() []diag.CodeInfo {
	var out []diag.CodeInfo
	for _, stage := range [][]diag.CodeInfo{load.Codes, check.Codes, solve.Codes, estimate.Codes, megatron.Codes, compileCodes, importer.Codes} {
		out = append(out, stage...)
	}
	return out
}
