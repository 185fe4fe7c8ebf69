package check

import (
	"math/big"
	"regexp"
	"strings"
	"sync"

	"parc.dev/parc/schema"
)

// A suggested value must pass the schema too, not only the rules: a hint
// that offers global_batch 1073741825 where the schema stops at 2^30 would
// fail at load. schemaBounds reads the numeric bounds of every field from
// the schema's own reference (the README's table), so the two cannot drift.

var (
	boundsOnce sync.Once
	bounds     map[string][]bound
	boundRE    = regexp.MustCompile(`(>=|<=|>|<)(-?[0-9][0-9.eE+-]*)`)
)

type bound struct {
	op string
	v  *big.Float
}

func fieldBounds() map[string][]bound {
	boundsOnce.Do(func() {
		bounds = map[string][]bound{}
		fields, err := schema.Reference()
		if err != nil {
			return // the schema's own tests report it
		}
		for _, f := range fields {
			for _, m := range boundRE.FindAllStringSubmatch(f.Type, -1) {
				if v, ok := new(big.Float).SetString(m[2]); ok {
					bounds[f.Path] = append(bounds[f.Path], bound{m[1], v})
				}
			}
		}
	})
	return bounds
}

// schemaAllows reports whether a suggested value is inside the schema's
// bounds for the field at path (JSON names; values that are not numbers,
// and fields without bounds, always are).
func schemaAllows(path string, value any) bool {
	var x *big.Float
	switch v := value.(type) {
	case int:
		x = new(big.Float).SetInt64(int64(v))
	case float64:
		x = big.NewFloat(v)
	default:
		return true
	}
	for _, b := range fieldBounds()[strings.TrimSuffix(path, "?")] {
		c := x.Cmp(b.v)
		switch b.op {
		case ">=":
			if c < 0 {
				return false
			}
		case ">":
			if c <= 0 {
				return false
			}
		case "<=":
			if c > 0 {
				return false
			}
		case "<":
			if c >= 0 {
				return false
			}
		}
	}
	return true
}
