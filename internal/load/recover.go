package load

import (
	"cuelang.org/go/cue"

	"parc.dev/parc/internal/spec"
)

// Recover decodes the part of a plan that has no schema error: every concrete
// field without an error is copied onto a fresh #Plan and the result decoded.
// It lets the checks of later stages run on a spec that also has schema
// mistakes (an unknown key, one bad value), so a user sees every mistake in
// one run. It returns nil when the rest is not complete enough to decode.
func (r *Result) Recover() *spec.Spec {
	fresh := r.Schema
	var walk func(v cue.Value, path []cue.Selector)
	walk = func(v cue.Value, path []cue.Selector) {
		it, err := v.Fields()
		if err != nil {
			return
		}
		for it.Next() {
			f := it.Value()
			p := append(append([]cue.Selector(nil), path...), it.Selector())
			if isStruct(f) {
				walk(f, p)
				continue
			}
			if f.Err() != nil || !f.IsConcrete() {
				continue
			}
			fresh = fresh.FillPath(cue.MakePath(p...), f)
		}
	}
	walk(r.Plan, nil)
	if fresh.Validate(cue.Concrete(true)) != nil {
		return nil
	}
	var s spec.Spec
	if fresh.Decode(&s) != nil {
		return nil
	}
	s.Cluster.FillFromDatasheet()
	return &s
}
