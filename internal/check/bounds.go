package check

import "parc.dev/parc/schema"

// A suggested value must pass the schema too, not only the rules: a hint
// that offers global_batch 1073741825 where the schema stops at 2^30 would
// fail at load. schemaAllows puts the value through the schema's own
// constraint on the field (schema.Allows unifies it with the field's CUE
// expression: bounds, enums and types alike), so the two cannot drift.
func schemaAllows(path string, value any) bool {
	return schema.Allows(path, value)
}
