package template

import (
	"fmt"
	"strings"
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
