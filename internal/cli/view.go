package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/plan"
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
// each followed by the source line with the range underlined, its related
// places and its hint.
func printDiags(w io.Writer, l diag.List) {
	src := sources{}
	for _, d := range l {
		first, rest, _ := strings.Cut(d.String(), "\n")
		fmt.Fprintln(w, first)
		if snip := snippet(src.text(d.File), d); snip != "" {
			fmt.Fprint(w, snip)
		}
		if rest != "" {
			fmt.Fprintln(w, rest)
		}
	}
}

// sources reads the spec files diagnostics name, once each, for the
// snippets. Only regular files are read: a spec that came from a pipe
// cannot be read twice.
type sources map[string][]byte

func (s sources) text(file string) []byte {
	if b, ok := s[file]; ok {
		return b
	}
	var b []byte
	if st, err := os.Stat(file); err == nil && st.Mode().IsRegular() {
		b, _ = os.ReadFile(file)
	}
	s[file] = b
	return b
}

// snippet is the diagnostic's first source line with its range underlined
// (a caret at the start, tildes to the end of the range on that line), as
// clang and esbuild print it:
//
//	9 | parallel: {tp: 3, pp: 4}
//	  |            ^~~~~
//
// It is empty when the line is unknown, too long to be useful, or holds
// bytes a terminal should not be sent.
func snippet(src []byte, d diag.Diagnostic) string {
	const maxLine = 400
	line, ok := diag.Line(src, d.Line)
	if !ok || d.Column < 1 || d.Column-1 > len(line) || len(line) > maxLine || !utf8.ValidString(line) ||
		strings.ContainsFunc(line, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) {
		return ""
	}
	start := d.Column - 1
	end := len(strings.TrimRight(line, " \t"))
	if d.EndLine == d.Line && d.EndColumn > d.Column {
		end = min(d.EndColumn-1, len(line))
	}
	var under strings.Builder
	for _, r := range line[:start] {
		if r == '\t' {
			under.WriteByte('\t')
		} else {
			under.WriteByte(' ')
		}
	}
	under.WriteByte('^')
	if n := utf8.RuneCountInString(line[start:max(start, end)]); n > 1 {
		under.WriteString(strings.Repeat("~", n-1))
	}
	return fmt.Sprintf("%5d | %s\n      | %s\n", d.Line, line, under.String())
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
