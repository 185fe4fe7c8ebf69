package load

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"

	"parc.dev/parc/internal/diag"
)

// MaxNesting is the deepest a spec may nest brackets, or expressions in
// CUE (a chain of 1+1+…): a real spec nests fewer than ten levels. HCL's
// parser recurses once per bracket and overflows the stack (a fatal error,
// not a panic) at about 100,000 levels; CUE evaluates a chain of n additions
// in time quadratic in n (40,000 terms took 26 s). The README's Limits
// section states it.
const MaxNesting = 1000

func tooDeep(name string, data []byte, off int) *diag.Diagnostic {
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := 1 + utf8.RuneCount(data[bytes.LastIndexByte(data[:off], '\n')+1:off])
	return &diag.Diagnostic{Severity: diag.Error, Code: "too-deep", Pos: diag.Pos{File: name, Line: line, Column: col},
		Message: fmt.Sprintf("the spec nests more than %d levels deep here (brackets, or a chain of operators such as a | b | … or 1 + 1 + …, each operator a level); parc reads at most %d", MaxNesting, MaxNesting),
		Hint:    "a spec nests a few levels (sections, lists, env maps) and lists a few alternatives: check that this is the file you meant"}
}

// hclNesting finds the first bracket of an HCL file that opens level
// MaxNesting+1, before HCL's recursive parser sees it. It follows HCL's
// lexical structure far enough to skip comments, strings (but not the
// expressions inside ${ }) and heredocs.
func hclNesting(name string, data []byte) *diag.Diagnostic {
	// stack: 's' a string, 'i' an interpolation's brace, 'b' a bracket.
	var stack []byte
	depth := 0
	inString := func() bool { return len(stack) > 0 && stack[len(stack)-1] == 's' }
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString() {
			switch {
			case c == '\\':
				i++
			case c == '"':
				stack = stack[:len(stack)-1]
			case (c == '$' || c == '%') && i+1 < len(data) && data[i+1] == '{':
				i++
				stack = append(stack, 'i')
				if depth++; depth > MaxNesting {
					return tooDeep(name, data, i)
				}
			case c == '\n':
				stack = stack[:len(stack)-1] // HCL strings end at the line; the parser reports it
			}
			continue
		}
		switch {
		case c == '#' || c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				return nil
			}
			i += end + 3
		case c == '<' && i+1 < len(data) && data[i+1] == '<':
			i = skipHeredoc(data, i)
		case c == '"':
			stack = append(stack, 's')
		case c == '{' || c == '[' || c == '(':
			stack = append(stack, 'b')
			if depth++; depth > MaxNesting {
				return tooDeep(name, data, i)
			}
		case c == '}' || c == ']' || c == ')':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
				depth--
			}
		}
	}
	return nil
}

// skipHeredoc returns the offset of the last byte of the heredoc that
// starts at data[i] ("<<EOF" or "<<-EOF"), or i+1 when it is not one.
func skipHeredoc(data []byte, i int) int {
	j := i + 2
	if j < len(data) && data[j] == '-' {
		j++
	}
	k := j
	for k < len(data) && (data[k] == '_' || data[k] >= 'A' && data[k] <= 'Z' || data[k] >= 'a' && data[k] <= 'z' || data[k] >= '0' && data[k] <= '9') {
		k++
	}
	if k == j {
		return i + 1
	}
	marker := data[j:k]
	nl := bytes.IndexByte(data[k:], '\n')
	if nl < 0 {
		return len(data)
	}
	for p := k + nl + 1; p < len(data); {
		e := bytes.IndexByte(data[p:], '\n')
		lineEnd := len(data)
		if e >= 0 {
			lineEnd = p + e
		}
		if bytes.Equal(bytes.TrimSpace(data[p:lineEnd]), marker) {
			return lineEnd
		}
		p = lineEnd + 1
	}
	return len(data)
}

// cueNesting reports the first node of a CUE syntax tree more than
// MaxNesting levels deep (brackets and operators alike).
func cueNesting(name string, data []byte, f *ast.File) *diag.Diagnostic {
	var found token.Pos
	depth := 0
	ast.Walk(f, func(n ast.Node) bool {
		if found.IsValid() {
			return false
		}
		if depth++; depth > MaxNesting {
			found = n.Pos()
			return false
		}
		return true
	}, func(ast.Node) { depth-- })
	if !found.IsValid() {
		return nil
	}
	return tooDeep(name, data, min(max(found.Offset(), 0), len(data)))
}
