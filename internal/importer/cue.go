package importer

import (
	"fmt"
	"strconv"
	"strings"

	"parc.dev/parc/internal/spec"
)

// CUEString writes s as a CUE string literal (CUE's own quoting, as
// spec.Literal writes the values hints suggest).
func CUEString(s string) string { return spec.Literal(s) }

// CUELiteral writes a value read from an argument list or a config file
// (bool, int64, float64, string, or a list of them) as a CUE literal. A
// float keeps a decimal point so that CUE reads it back as a float.
func CUELiteral(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		return s
	case string:
		return CUEString(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = CUELiteral(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return CUEString(fmt.Sprint(v))
}
