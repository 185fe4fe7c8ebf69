package load

import "parc.dev/parc/internal/diag"

// Codes lists every code the load stage emits.
var Codes = []diag.CodeInfo{
	{Code: "file-not-found", Severity: diag.Error, Meaning: "The spec file cannot be read.", Fix: "Check the path; parc takes .cue and .hcl files."},
	{Code: "permission-denied", Severity: diag.Error, Meaning: "The spec file exists but this user may not read it.", Fix: "Check the file's permissions and those of its directories."},
	{Code: "file-unreadable", Severity: diag.Error, Meaning: "The spec path is a directory, or reading it failed.", Fix: "Give a spec file that can be read."},
	{Code: "input-too-large", Severity: diag.Error, Meaning: "The spec, or the launch script or config.json parc import reads, is larger than 1 MiB (load.MaxInputBytes), the most parc reads; an endless input such as /dev/zero stops there.", Fix: "Check that this is the file you meant: a spec or a launch script is a few kilobytes."},
	{Code: "too-many-fields", Severity: diag.Error, Meaning: "One struct of the spec has more than 10,000 fields (load.MaxStructFields) the schema allows there (an env map of 30,000 entries); unknown fields do not count, they are reported one by one.", Fix: "Check that this is the file you meant: a spec has tens of fields per section."},
	{Code: "too-many-elements", Severity: diag.Error, Meaning: "One list of the spec has more than 10,000 elements (load.MaxListElements); CUE evaluates a list in time that grows with the square of its length.", Fix: "Check that this is the file you meant: a spec's lists hold a few to a few thousand entries."},
	{Code: "too-deep", Severity: diag.Error, Meaning: "The spec nests brackets or CUE expressions more than 1,000 levels deep (load.MaxNesting); HCL's parser would overflow its stack and CUE's evaluation time grows with the square of a chain's length.", Fix: "Check that this is the file you meant: a spec nests a few levels."},
	{Code: "not-text", Severity: diag.Error, Meaning: "The spec is not UTF-8 text (a NUL byte or a byte that starts no UTF-8 character, such as an image renamed .cue); reported at the first such byte.", Fix: "Give a .cue or .hcl text file."},
	{Code: "number-too-large", Severity: diag.Error, Meaning: "A number parc cannot hold: an integer outside 64 bits, or a number beyond float64's range or so small it would round to 0.", Fix: "Use a value within the limits the message names."},
	{Code: "structural-cycle", Severity: diag.Error, Meaning: "A field whose value contains itself (x: {a: x}).", Fix: "Refer to the fields you need one by one instead of an enclosing struct."},
	{Code: "import-cycle", Severity: diag.Error, Meaning: "CUE packages that import each other.", Fix: "Remove one of the imports of the chain the message lists."},
	{Code: "missing-section", Severity: diag.Error, Meaning: "The spec has no model, cluster or train section at all (reported once, at the top, instead of once per required field).", Fix: "Add the section: a preset (the hint lists them) or its fields."},
	{Code: "unused-import", Severity: diag.Error, Meaning: "A CUE import the spec does not use (CUE refuses it).", Fix: "Remove the import, or use the package."},
	{Code: "syntax", Severity: diag.Error, Meaning: "The file is not valid CUE or HCL.", Fix: "Fix the text at the position shown."},
	{Code: "unknown-field", Severity: diag.Error, Meaning: "A key the schema does not have (every struct is closed), often a typo or a Megatron flag name.", Fix: "Use the suggested name; the hint lists the fields allowed there."},
	{Code: "type-mismatch", Severity: diag.Error, Meaning: "A value of the wrong type (a string where a number belongs, ...).", Fix: "Write a value of the type the hint names."},
	{Code: "out-of-range", Severity: diag.Error, Meaning: "A number outside its bounds (a degree of 0, a negative count).", Fix: "Use a value within the bounds the hint names."},
	{Code: "invalid-value", Severity: diag.Error, Meaning: "A value the schema does not allow (not one of an enum's choices, or conflicting with another value).", Fix: "Use one of the values the hint lists."},
	{Code: "missing-field", Severity: diag.Error, Meaning: "A required field is missing or not concrete.", Fix: "Set it; the hint says what it must be."},
	{Code: "unknown-reference", Severity: diag.Error, Meaning: "A reference to something that does not exist, such as an unknown preset (models.llama9).", Fix: "Use one of the presets the hint lists."},
	{Code: "unknown-import", Severity: diag.Error, Meaning: "An import parc cannot resolve.", Fix: `Presets are imported as "parc.dev/stdlib/models" and "parc.dev/stdlib/clusters".`},
	{Code: "cue-language-version", Severity: diag.Error, Meaning: "The user's cue.mod/module.cue declares a CUE language version older than parc's presets need; it governs imported packages too.", Fix: "Raise language.version in cue.mod/module.cue to the version the message names."},
	{Code: "hcl-expression", Severity: diag.Error, Meaning: "An HCL expression parc cannot evaluate to a literal (variables, functions).", Fix: "Write literal strings, numbers, bools, lists and objects."},
	{Code: "hcl-block-label", Severity: diag.Error, Meaning: "An HCL block with a label (`model \"x\" {`).", Fix: "Write the block without a label."},
	{Code: "hcl-duplicate-block", Severity: diag.Error, Meaning: "The same HCL block twice, or as both block and attribute.", Fix: "Merge them into one block."},
}
