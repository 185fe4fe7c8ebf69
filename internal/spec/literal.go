package spec

import (
	"fmt"
	"strconv"
	"strings"

	"cuelang.org/go/cue/literal"
)

// Literal writes a setting's value as a spec writes it: a string in CUE's
// own quoting (as the importer writes them, importer.CUEString), a list of
// strings as a list of them, a number in its shortest form. Hints and
// reports that name a value use it, so a value is written one way wherever
// parc suggests it.
func Literal(v any) string {
	switch x := v.(type) {
	case string:
		return literal.String.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = literal.String.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return fmt.Sprint(v)
}
