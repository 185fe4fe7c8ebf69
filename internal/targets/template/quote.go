package template

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// shellSafe reports whether s is a non-empty word that no POSIX shell
// treats specially anywhere on a command line (no quoting needed). A word
// with '=' is safe only as an option (leading '-'): elsewhere, in the
// command position, it would be an assignment.
func shellSafe(s string) bool {
	if s == "" || (strings.Contains(s, "=") && !strings.HasPrefix(s, "-")) {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("@%+=:,./_-", r):
		default:
			return false
		}
	}
	return true
}

// ShellQuote returns s as a single POSIX shell word that expands to exactly
// s: bare when it holds only safe characters, else single-quoted. A single
// quote, $ or ` is written outside the quotes, backslash-escaped ('a'\”b',
// 'cost '\$'5'), so that linters such as shellcheck see no expansion meant
// inside single quotes. The empty string becomes ”.
func ShellQuote(s string) string {
	if shellSafe(s) {
		return s
	}
	if s == "" {
		return "''"
	}
	var b strings.Builder
	open := false
	for i := 0; i < len(s); i++ { // bytes: s need not be UTF-8
		switch c := s[i]; c {
		case '\'', '$', '`', '\\':
			if open {
				b.WriteByte('\'')
				open = false
			}
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			if !open {
				b.WriteByte('\'')
				open = true
			}
			b.WriteByte(c)
		}
	}
	if open {
		b.WriteByte('\'')
	}
	return b.String()
}

// ShellJoin quotes each word and joins them with spaces.
func ShellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = ShellQuote(w)
	}
	return strings.Join(q, " ")
}

// SbatchQuote returns s as the value of an #SBATCH directive. sbatch reads
// those lines itself (not through a shell): outside double quotes a blank ends
// the value, inside them a backslash escapes the next character. A value with
// only safe characters stays bare; any other is double-quoted with \ and "
// escaped. A line break cannot be written in a directive and is an error.
func SbatchQuote(s string) (string, error) {
	if strings.ContainsAny(s, "\n\r\x00") {
		return "", fmt.Errorf("%q cannot be written in an #SBATCH directive: it contains a line break or NUL", s)
	}
	if shellSafe(s) {
		return s, nil
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`, nil
}

// printable reports whether s is valid UTF-8 made only of printable
// characters and spaces: nothing that ends a line (\n, \r, \v, \f, NEL,
// U+2028, U+2029), no other control character, and no invisible format
// character (such as a bidirectional override) that would make the text read
// differently from what it is.
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (!unicode.IsPrint(r) && r != ' ') {
			return false
		}
	}
	return utf8.ValidString(s)
}

// Comment returns s as text that stays inside one comment line (# in a shell
// script, a line of megatron.args or of any generated file): s itself when it
// is printable text, else s as a Go double-quoted string with every line
// break, control, format or invalid byte escaped ("x\ntouch PWNED"). The
// result is always printable, so Comment(Comment(s)) == Comment(s).
func Comment(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// markdownSpecial are the characters that Markdown (CommonMark, GitHub's
// tables) reads as inline syntax anywhere in a line: they are
// backslash-escaped. < > & become HTML character references.
const markdownSpecial = "\\`*_[]|~#"

// Markdown returns s as Markdown text that renders as s literally and stays
// inside its paragraph, list item or table cell: HTML is inert
// (&lt;script&gt;), emphasis, links, code spans, headings and table pipes are
// escaped, a leading list or heading marker (-, +, =, "1.") is escaped, and a
// line break or other non-printable character is written as its escape
// (Comment's quoting without the quotes).
func Markdown(s string) string {
	if !printable(s) {
		q := strconv.Quote(s)
		s = q[1 : len(q)-1]
	}
	var b strings.Builder
	// A block marker at the start: "- x" would nest a list, "1. x" start one.
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	switch {
	case s != "" && strings.ContainsRune("-+=", rune(s[0])):
		b.WriteByte('\\')
	case digits > 0 && digits < len(s) && (s[digits] == '.' || s[digits] == ')') &&
		(digits+1 == len(s) || s[digits+1] == ' ' || s[digits+1] == '\t'):
		b.WriteString(s[:digits])
		b.WriteByte('\\')
		s = s[digits:]
	}
	for i, r := range s {
		switch {
		case r == '_' && i > 0 && i+1 < len(s) && alnum(s[i-1]) && alnum(s[i+1]):
			// Inside a word _ never emphasises (CommonMark's flanking
			// rule): train.global_batch stays readable.
			b.WriteRune(r)
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r < utf8.RuneSelf && strings.ContainsRune(markdownSpecial, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// MarkdownCode returns s as a Markdown code span (`s`), for values read as
// code such as a plan's degrees: the fence is one backtick longer than the
// longest run of backticks in s, and a line break or other non-printable
// character is written as its escape. A code span shows HTML as text.
func MarkdownCode(s string) string {
	if !printable(s) {
		q := strconv.Quote(s)
		s = q[1 : len(q)-1]
	}
	run, longest := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		// CommonMark strips one space on each side when both are there.
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
