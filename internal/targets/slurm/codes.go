package slurm

import "parc.dev/parc/internal/diag"

// Codes lists every code the launch-script targets emit.
var Codes = []diag.CodeInfo{
	{Code: "env-name", Severity: diag.Error, Meaning: "An environment variable name a shell cannot export.", Fix: "Use letters, digits and _ (not starting with a digit)."},
	{Code: "env-reserved", Severity: diag.Error, Meaning: "An environment variable the launch scripts set from the plan (RANK, MASTER_ADDR, ...).", Fix: "Remove it from cluster.env / launch.env."},
	{Code: "env-value", Severity: diag.Error, Meaning: "An environment value with a NUL character.", Fix: "Remove the NUL character."},
	{Code: "slurm-line-break", Severity: diag.Error, Meaning: "A value with a line break cannot be written in an #SBATCH directive.", Fix: "Remove the line break."},
	{Code: "launch-command", Severity: diag.Error, Meaning: "launch.python, launch.program or launch.parc_binary is empty or unusable.", Fix: "Give a program name or path."},
}
