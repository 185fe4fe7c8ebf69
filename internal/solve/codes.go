package solve

import "parc.dev/parc/internal/diag"

// Codes lists every code the solve stage emits.
var Codes = []diag.CodeInfo{
	{Code: CodeNoFeasiblePlan, Severity: diag.Error, Meaning: "No assignment of the open degrees passes every check; the message names the rule that rejected most of them.", Fix: "Widen the open fields' constraints, add nodes, or change the batch."},
	{Code: CodeOpenNoValue, Severity: diag.Error, Meaning: "An open field's constraint admits no value parc can try.", Fix: "Write it as a concrete value, a disjunction (1 | 2 | 4 | 8) or bounds (>=2)."},
	{Code: CodeSearchTooLarge, Severity: diag.Error, Meaning: "The open fields span more assignments than one search may estimate (a work budget of about 8 s; the work of a plan grows with the model's layers); parc picks no plan from an unfinished search.", Fix: "Write some open fields as values or short disjunctions (1 | 2 | 4 | 8) instead of int or a bound, or leave fewer of them open."},
	{Code: CodeAboveHeadroom, Severity: diag.Error, Meaning: "Every plan that passes the checks needs more than the memory headroom (default 90% of the GPU's memory) at its peak; parc solve picks none of them.", Fix: "Raise solve.memory_headroom (or --memory-headroom) up to 1, add nodes, or leave train.recompute open."},
}
