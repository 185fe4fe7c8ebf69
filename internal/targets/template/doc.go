// Package template is the rendering stage shared by the script targets
// (megatron, slurm, torchrun): each target embeds its built-in text/template,
// and a Set renders it, or the user's override of it from a template
// directory (the --templates flag or launch.templates).
//
// Every template runs with missingkey=error and with sprig's hermetic
// functions (no environment, clock or randomness, so output is byte-identical
// on every run and machine), plus the quoting functions of this package:
// shq (a POSIX shell word), shqJoin (a list of them), sbatchq (the value of
// an #SBATCH directive), comment (text that cannot end its comment line) and
// md (Markdown text with HTML made inert). An error in a template, built-in or the user's, is
// reported as an *Error naming the template file and line.
package template
