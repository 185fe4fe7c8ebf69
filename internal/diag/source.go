package diag

import (
	"bytes"
	"path/filepath"
	"strings"
)

// WithRanges sets the end of every diagnostic whose start is known but whose
// end is not, from the source text source returns for its file (nil when it
// has none). The range covers the field or value at the start: up to the
// comma, line break or closing bracket that ends it at its own nesting
// level, so `tp: 16` in `{tp: 16, pp: 2}`, or a whole `parallel: {...}`
// block over several lines.
func (l List) WithRanges(source func(file string) []byte) List {
	out := make(List, len(l))
	for i, d := range l {
		if d.EndLine == 0 && d.IsValid() && d.Column > 0 {
			if src := source(d.File); src != nil {
				d.EndLine, d.EndColumn = Extent(src, d.Pos)
			}
		}
		out[i] = d
	}
	return out
}

// Line returns line n (1-based) of src without its line break, and false
// when src has no such line.
func Line(src []byte, n int) (string, bool) {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(src, '\n')
		if j < 0 {
			return "", false
		}
		src = src[j+1:]
	}
	if n < 1 || (len(src) == 0 && n > 1) {
		return "", false
	}
	if j := bytes.IndexByte(src, '\n'); j >= 0 {
		src = src[:j]
	}
	return strings.TrimSuffix(string(src), "\r"), true
}

// Extent returns the end (line, column just past the last byte) of the field
// or value that starts at p in src. It reads src as CUE or HCL (by p.File's
// extension: HCL also has # comments); strings, brackets and comments are
// skipped as units. When p is not in src the range is empty: p itself.
func Extent(src []byte, p Pos) (endLine, endColumn int) {
	endLine, endColumn = p.Line, p.Column
	start := offset(src, p.Line, p.Column)
	if start < 0 || start >= len(src) {
		return
	}
	hash := strings.EqualFold(filepath.Ext(p.File), ".hcl")
	depth, end := 0, start
	for i := start; i < len(src); {
		c := src[i]
		switch {
		case c == '"' || c == '\'':
			i = skipString(src, i)
			end = i
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '/', hash && c == '#':
			if depth == 0 {
				return position(src, end)
			}
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '{' || c == '[' || c == '(':
			depth++
		case c == '}' || c == ']' || c == ')':
			if depth == 0 {
				return position(src, end)
			}
			depth--
		case (c == ',' || c == '\n') && depth == 0:
			return position(src, end)
		}
		i++
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			end = i
		}
	}
	return position(src, end)
}

// skipString returns the offset just past the string literal starting at i
// (a CUE multi-line """ string included; an unterminated one ends at its
// line's end).
func skipString(src []byte, i int) int {
	q := src[i]
	if bytes.HasPrefix(src[i:], []byte{q, q, q}) {
		if j := bytes.Index(src[i+3:], []byte{q, q, q}); j >= 0 {
			return i + 3 + j + 3
		}
		return len(src)
	}
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q:
			return j + 1
		case '\n':
			return j
		}
	}
	return len(src)
}

// offset converts a 1-based line and byte column to an offset (-1 if out of
// range).
func offset(src []byte, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		j := bytes.IndexByte(src[off:], '\n')
		if j < 0 {
			return -1
		}
		off += j + 1
	}
	lineEnd := bytes.IndexByte(src[off:], '\n')
	if lineEnd < 0 {
		lineEnd = len(src) - off
	}
	if col < 1 || col-1 > lineEnd {
		return -1
	}
	return off + col - 1
}

// position converts an offset to a 1-based line and byte column.
func position(src []byte, off int) (line, col int) {
	off = min(off, len(src))
	line = 1 + bytes.Count(src[:off], []byte{'\n'})
	return line, off - (bytes.LastIndexByte(src[:off], '\n') + 1) + 1
}
