package cli

import (
	"github.com/spf13/cobra"

	"encoding/json"
	"fmt"
	"io"
	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/plan"
	"path/filepath"
	"strings"

	"parc.dev/parc/internal/diag"
)

// relPath shows a file relative to the working directory when it is inside it.
func relPath(file string) string {
	if file == "" || !filepath.IsAbs(file) {
		return file
	}
	wd, err := filepath.Abs(".")
	if err != nil {
		return file
	}
	rel, err := filepath.Rel(wd, file)
	if err != nil || strings.HasPrefix(rel, "..") {
		return file
	}
	return rel
}

// relDiags rewrites file names relative to the working directory.
func relDiags(l diag.List) diag.List {
	out := make(diag.List, len(l))
	for i, d := range l {
		d.File = relPath(d.File)
		out[i] = d
	}
	return out
}

// printDiags writes diagnostics as FILE:LINE:COL: severity CODE: message,
// each followed by its hint, then a one-line summary when there are errors.
func printDiags(w io.Writer, l diag.List) {
	for _, d := range l {
		fmt.Fprintln(w, d.String())
	}
}

func summary(l diag.List) string {
	e, wn := l.Errors(), len(l)-l.Errors()
	return fmt.Sprintf("%d error%s, %d warning%s", e, plural(e), wn, plural(wn))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// checkFormat validates --format.
func checkFormat(f string) error {
	if f != "text" && f != "json" {
		return usageError{fmt.Errorf("--format must be text or json, got %q", f)}
	}
	return nil
}

// reportDiags prints diagnostics to the command's stderr and, when the spec
// failed (failed true), a summary line; it returns the exit error then.
func reportDiags(cmd *cobra.Command, diags diag.List, failed bool, tail string) error {
	printDiags(cmd.ErrOrStderr(), diags)
	if !failed {
		return nil
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "parc %s: %s%s\n", cmd.Name(), summary(diags), tail)
	return exitError{ExitSpec}
}

// vetPlan vets one spec for a command that needs its plan, printing the
// diagnostics; it returns the exit error when the spec has errors.
func vetPlan(cmd *cobra.Command, file string) (*plan.Plan, error) {
	p, diags := compiler.Vet(compiler.Source{Path: file})
	return p, reportDiags(cmd, relDiags(diags), p == nil, "")
}
