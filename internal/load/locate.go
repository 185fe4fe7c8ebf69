package load

import (
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"

	"parc.dev/parc/internal/diag"
)

// Locate returns the position of the spec field at a dotted path in the
// user's own text. When the user did not write that field (a default, or a
// value from a preset), it walks up to the nearest field the user wrote, so a
// diagnostic never points inside the embedded schema or presets.
func (r *Result) Locate(path string) diag.Pos {
	parts := strings.Split(path, ".")
	for n := len(parts); n > 0; n-- {
		if p, ok := r.hclAt[strings.Join(parts[:n], ".")]; ok {
			return p
		}
		v := r.User.LookupPath(cue.ParsePath(strings.Join(parts[:n], ".")))
		if !v.Exists() {
			continue
		}
		if p, ok := r.userPos([]token.Pos{v.Pos()}); ok {
			return p
		}
		if src := v.Source(); src != nil {
			if p, ok := r.userPos([]token.Pos{src.Pos()}); ok {
				return p
			}
		}
	}
	if len(r.Files) > 0 {
		return diag.Pos{File: r.Display[r.Files[0]], Line: 1, Column: 1}
	}
	return diag.Pos{}
}
