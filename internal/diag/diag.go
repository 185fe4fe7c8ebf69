package diag

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Severity says whether a diagnostic makes a spec invalid.
type Severity int

const (
	Error Severity = iota
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// MarshalText lets Severity appear as "error" / "warning" in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Pos is a position in a source file. Line and Column are 1-based (Column
// counts bytes, as CUE does); a zero Line means the position is unknown.
type Pos struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// IsValid reports whether the position names a line of a file.
func (p Pos) IsValid() bool { return p.File != "" && p.Line > 0 }

func (p Pos) String() string {
	file := QuoteFile(p.File)
	switch {
	case p.File == "":
		return "-"
	case p.Line == 0:
		return file
	case p.Column == 0:
		return fmt.Sprintf("%s:%d", file, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", file, p.Line, p.Column)
}

// unprintable reports a rune a terminal line must not carry as it is: a
// control character (line breaks, escape sequences) or a Unicode line or
// paragraph separator.
func unprintable(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError
}

// QuoteFile is a file name as a diagnostic line shows it: as it is, or
// Go-quoted when it holds a character that would break the line or reach
// the terminal as a control sequence. A file named "x.cue\nplan.cue:1:1:
// error ..." cannot forge a diagnostic line, nor "\x1b]0;...\a" retitle the
// terminal. (JSON output keeps the name as it is, escaped by JSON.)
func QuoteFile(name string) string {
	if strings.ContainsFunc(name, unprintable) || !utf8.ValidString(name) {
		return strconv.Quote(name)
	}
	return name
}

// Printable is text with every unprintable rune written as a Go escape
// (\n, \x1b, \u2028), for a line of text output.
func Printable(s string) string {
	if !strings.ContainsFunc(s, unprintable) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				fmt.Fprintf(&b, "\\x%02x", s[i])
				continue
			}
		}
		if unprintable(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Related is another place that takes part in a diagnostic: the other side
// of a conflict, the field whose value the message quotes.
type Related struct {
	Pos
	Message string `json:"message"`
}

// Diagnostic is one problem found in a spec.
type Diagnostic struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	// Hint says how to fix it, listing valid values where there are any.
	Hint string `json:"hint,omitempty"`
	// Path is the spec field blamed, e.g. "parallel.tp".
	Path string `json:"path"`
	// Pos starts the range of source the diagnostic covers.
	Pos
	// EndLine and EndColumn end the range: the position just past its last
	// byte. Ranges (see List.WithRanges) sets them from the source; when
	// only the start is known they equal Line and Column.
	EndLine   int `json:"end_line"`
	EndColumn int `json:"end_column"`
	// Related lists the other places involved, in the user's files.
	Related []Related `json:"related"`
}

// MarshalJSON writes the diagnostic as the contract says (docs/architecture.md,
// "Diagnostics JSON" and its extension): related is a list, never null, and a
// known start without a known end is an empty range at the start.
func (d Diagnostic) MarshalJSON() ([]byte, error) {
	type plain Diagnostic
	p := plain(d)
	if p.Related == nil {
		p.Related = []Related{}
	}
	if p.EndLine == 0 {
		p.EndLine, p.EndColumn = p.Line, p.Column
	}
	return json.Marshal(p)
}

// String renders the diagnostic as FILE:LINE:COL: severity CODE: message,
// its related places and its hint, one per line.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Pos.String())
	fmt.Fprintf(&b, ": %s %s: %s", d.Severity, d.Code, Printable(d.Message))
	for _, r := range d.Related {
		fmt.Fprintf(&b, "\n\tnote: %s: %s", r.Pos, Printable(r.Message))
	}
	if d.Hint != "" {
		b.WriteString("\n\thint: ")
		b.WriteString(Printable(d.Hint))
	}
	return b.String()
}

// List gathers diagnostics.
type List []Diagnostic

// Add appends a diagnostic.
func (l *List) Add(d Diagnostic) { *l = append(*l, d) }

// Errorf appends an error at pos for path.
func (l *List) Errorf(pos Pos, path, code, hint, format string, args ...any) {
	l.Add(Diagnostic{Severity: Error, Code: code, Path: path, Pos: pos, Hint: hint, Message: fmt.Sprintf(format, args...)})
}

// Warnf appends a warning at pos for path.
func (l *List) Warnf(pos Pos, path, code, hint, format string, args ...any) {
	l.Add(Diagnostic{Severity: Warning, Code: code, Path: path, Pos: pos, Hint: hint, Message: fmt.Sprintf(format, args...)})
}

// HasErrors reports whether any diagnostic is an error.
func (l List) HasErrors() bool {
	return slices.ContainsFunc(l, func(d Diagnostic) bool { return d.Severity == Error })
}

// Errors counts the errors.
func (l List) Errors() int {
	n := 0
	for _, d := range l {
		if d.Severity == Error {
			n++
		}
	}
	return n
}

// Sort orders diagnostics by file, line, column, then code, and drops exact
// duplicates, so output is stable whatever order the stages ran in.
func (l List) Sort() List {
	out := slices.Clone(l)
	slices.SortStableFunc(out, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.CompactFunc(out, Diagnostic.equal)
}

func (d Diagnostic) equal(e Diagnostic) bool {
	return d.Severity == e.Severity && d.Code == e.Code && d.Message == e.Message && d.Hint == e.Hint &&
		d.Path == e.Path && d.Pos == e.Pos && d.EndLine == e.EndLine && d.EndColumn == e.EndColumn &&
		slices.Equal(d.Related, e.Related)
}

// Codes lists the codes in order (handy in tests).
func (l List) Codes() []string {
	out := make([]string, len(l))
	for i, d := range l {
		out[i] = d.Code
	}
	return out
}

// Locator finds the position of a spec field (a dotted path such as
// "parallel.tp") in the user's files. When the field itself was not written
// by the user (a default, or a preset's value) it returns the position of the
// nearest enclosing field the user did write.
type Locator func(path string) Pos

// NoPos is a Locator for specs built in memory (tests): every position is unknown.
func NoPos(string) Pos { return Pos{} }
