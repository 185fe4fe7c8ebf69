package cli

// The view layer. A command computes (through the compiler) and hands its
// diagnostics and its result to a view, which renders them in the format
// --format chose: diagnostics to stderr as FILE:LINE:COL lines with the
// source line underlined; the result as text, or as JSON on stdout. When the
// spec has errors a JSON view prints the diagnostics JSON on stdout
// ({"valid": false, "diagnostics": [...]}, as parc vet does), so a script
// reading stdout always gets JSON. Commands never branch on --format.

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

	"parc.dev/parc/internal/diag"
)

// view renders one command's output.
type view struct {
	cmd  *cobra.Command
	json bool
	// jsonOnly: in JSON mode the diagnostics go only into the JSON (parc
	// vet), not to stderr as well.
	jsonOnly bool
	// failedResult: the command's JSON result holds the diagnostics and is
	// printed even when the spec failed (parc solve: an empty ranking).
	failedResult bool
	// notes are text lines for stderr after the diagnostics (parc vet's
	// "ok  FILE"); JSON has no place for them.
	notes []string
}

// newView validates --format.
func newView(cmd *cobra.Command, format string) (*view, error) {
	switch format {
	case "text", "json":
		return &view{cmd: cmd, json: format == "json"}, nil
	}
	return nil, usageError{fmt.Errorf("--format must be text or json, got %q", format)}
}

// diagReport is the contract JSON of diagnostics (docs/architecture.md, "Diagnostics
// JSON"): parc vet --format json, and any JSON command whose spec failed.
type diagReport struct {
	Valid       bool      `json:"valid"`
	Diagnostics diag.List `json:"diagnostics"`
}

// diagnostics shows diags (file names relative to the working directory).
// When failed it adds the one-line summary (with tail) and, in JSON, prints
// the diagnostics JSON on stdout; it returns the exit error then.
func (v *view) diagnostics(diags diag.List, failed bool, tail string) error {
	diags = relDiags(diags)
	stderr := v.cmd.ErrOrStderr()
	if !v.json || !v.jsonOnly {
		printDiags(stderr, diags)
		if !v.json {
			for _, n := range v.notes {
				fmt.Fprintln(stderr, n)
			}
		}
		if failed {
			fmt.Fprintf(stderr, "parc %s: %s%s\n", v.cmd.Name(), summary(diags), tail)
		}
	}
	if !failed {
		return nil
	}
	if v.json && !v.failedResult {
		if err := writeJSON(v.cmd.OutOrStdout(), diagReport{Valid: false, Diagnostics: nonNil(diags)}); err != nil {
			return err
		}
	}
	return exitError{ExitSpec}
}

// result prints a command's result: text writes the text form; value is
// the JSON form.
func (v *view) result(text func(w io.Writer) error, value func() (any, error)) error {
	if !v.json {
		return text(v.cmd.OutOrStdout())
	}
	x, err := value()
	if err != nil {
		return err
	}
	return writeJSON(v.cmd.OutOrStdout(), x)
}

// nonNil makes an empty list print as [], not null.
func nonNil(l diag.List) diag.List {
	if l == nil {
		return diag.List{}
	}
	return l
}

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
