package diag

import (
	"bytes"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// WithRanges sets the end of every diagnostic whose start is known but whose
// end is not, from the source text source returns for its file (nil when it
// has none). The range covers the field or value at the start: up to the
// comma, line break or closing bracket that ends it at its own nesting
// level, so `tp: 16` in `{tp: 16, pp: 2}`, or a whole `parallel: {...}`
// block over several lines.
func (l List) WithRanges(source func(file string) []byte) List {
	out := make(List, len(l))
	// One line index per file: thousands of diagnostics in one file (one
	// per unknown field) must not each scan the file from its start.
	index := map[string]lineIndex{}
	for i, d := range l {
		if d.EndLine == 0 && d.IsValid() && d.Column > 0 {
			if src := source(d.File); src != nil {
				ix, ok := index[d.File]
				if !ok {
					ix = newLineIndex(src)
					index[d.File] = ix
				}
				d.EndLine, d.EndColumn = extent(src, ix, d.Pos)
			}
		}
		out[i] = d
	}
	return out
}

// Line returns line n (1-based) of src without its line break, and false
// when src has no such line.
func Line(src []byte, n int) (string, bool) {
	if len(src) == 0 {
		return "", n == 1
	}
	ix := cachedIndex(src)
	if n < 1 || n > len(ix) || (n > 1 && ix[n-1] == len(src)) {
		return "", false
	}
	end := len(src)
	if n < len(ix) {
		end = ix[n] - 1
	}
	return strings.TrimSuffix(string(src[ix[n-1]:end]), "\r"), true
}

// lineCache keeps the line index of the last source Line read, so printing
// thousands of diagnostics of one file does not scan it from the start for
// each.
var lineCache struct {
	sync.Mutex
	first *byte
	n     int
	ix    lineIndex
}

func cachedIndex(src []byte) lineIndex {
	lineCache.Lock()
	defer lineCache.Unlock()
	if lineCache.first != &src[0] || lineCache.n != len(src) {
		lineCache.first, lineCache.n, lineCache.ix = &src[0], len(src), newLineIndex(src)
	}
	return lineCache.ix
}

// Extent returns the end (line, column just past the last byte) of the field
// or value that starts at p in src. It reads src as CUE or HCL (by p.File's
// extension: HCL also has # comments); strings, brackets and comments are
// skipped as units. When p is not in src the range is empty: p itself.
func Extent(src []byte, p Pos) (endLine, endColumn int) {
	return extent(src, newLineIndex(src), p)
}

// lineIndex holds the offset at which each line of a source starts.
type lineIndex []int

func newLineIndex(src []byte) lineIndex {
	ix := lineIndex{0}
	for i, c := range src {
		if c == '\n' {
			ix = append(ix, i+1)
		}
	}
	return ix
}

// offset is the package's offset through the index.
func (ix lineIndex) offset(src []byte, line, col int) int {
	if line < 1 || line > len(ix) {
		return -1
	}
	off := ix[line-1]
	lineEnd := len(src) - off
	if line < len(ix) {
		lineEnd = ix[line] - 1 - off
	}
	if col < 1 || col-1 > lineEnd {
		return -1
	}
	return off + col - 1
}

// position is the package's position through the index.
func (ix lineIndex) position(off int) (line, col int) {
	n := sort.SearchInts(ix, off+1) // lines starting at or before off
	return n, off - ix[n-1] + 1
}

func extent(src []byte, ix lineIndex, p Pos) (endLine, endColumn int) {
	position := func(_ []byte, off int) (int, int) { return ix.position(min(off, len(src))) }
	endLine, endColumn = p.Line, p.Column
	start := ix.offset(src, p.Line, p.Column)
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
