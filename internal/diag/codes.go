package diag

// CodeInfo describes one diagnostic code for the README's table: its
// severity, the Megatron-Core rule it mirrors (if any), what it means and how
// to fix it. Each stage lists the codes it emits in a Codes variable;
// compiler.Codes gathers them.
type CodeInfo struct {
	Code     string
	Severity Severity
	// Rule names the Megatron-LM rule(s) of docs/rules.md
	// the code mirrors ("" for rules Megatron cannot see).
	Rule    string
	Meaning string
	Fix     string
}
