package schema

import (
	"fmt"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// Allows reports whether value satisfies the schema's own constraint on the
// field at path (dotted JSON names, as in the reference; a trailing "?" is
// ignored): the value is unified with the field's CUE expression, so every
// bound, enum and type the schema states applies, exactly as at load. A nil
// value (the field removed) is allowed wherever the schema has the field; a
// path the schema does not have is not allowed.
//
// Constraints that refer to other fields are taken as written: a value is
// only refused for a conflict with the field's own bounds, since the other
// fields are not known here.
func Allows(path string, value any) bool {
	planOnce.Do(func() {
		planCtx = cuecontext.New()
		planDef = planCtx.CompileBytes(Source, cue.Filename(Filename)).LookupPath(cue.ParsePath("#Plan"))
	})
	key, cacheable := allowsKey(path, value)
	planMu.Lock()
	defer planMu.Unlock()
	if ok, hit := allowed[key]; hit && cacheable {
		return ok
	}
	ok := allows(path, value)
	if cacheable {
		if len(allowed) >= maxAllowed {
			clear(allowed) // bounded memory on any input
		}
		allowed[key] = ok
	}
	return ok
}

// allowsKey is the memo key of a query; only scalar values are memoised.
func allowsKey(path string, value any) (string, bool) {
	switch value.(type) {
	case nil, bool, int, int64, float64, string:
		return fmt.Sprintf("%s\x00%T\x00%v", path, value, value), true
	}
	return "", false
}

// allows is Allows without the memo; planMu is held.
func allows(path string, value any) bool {
	if planDef.Err() != nil {
		return false
	}
	var sels []cue.Selector
	for _, name := range strings.Split(strings.TrimSuffix(path, "?"), ".") {
		// Every field is looked up as optional: a required field matches
		// an optional selector too.
		sels = append(sels, cue.Str(name).Optional())
	}
	field := planDef.LookupPath(cue.MakePath(sels...))
	if !field.Exists() && len(sels) > 1 {
		// A key of a map such as launch.env: the pattern's constraint.
		sels[len(sels)-1] = cue.AnyString
		field = planDef.LookupPath(cue.MakePath(sels...))
	}
	if !field.Exists() {
		return false
	}
	if value == nil {
		return true
	}
	v := planCtx.Encode(value)
	if v.Err() != nil {
		return false
	}
	return field.Unify(v).Validate() == nil
}

var (
	planOnce sync.Once
	// planMu serialises use of the compiled schema: a cue.Value is not
	// documented as safe for concurrent use.
	planMu  sync.Mutex
	planCtx *cue.Context
	planDef cue.Value
	// allowed memoises Allows: a hint's search asks about the same few
	// fields and values many times, and one unification costs tens of µs.
	allowed = map[string]bool{}
)

const maxAllowed = 1 << 16
