package check

import (
	"reflect"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// Hints suggest values; every value a hint suggests must pass every rule.
// A candidate is verified by running the rules again on a copy of the spec
// with the candidate set: it must clear the diagnostic it is offered for and
// bring no error the spec did not already have. The re-run builds no hints
// of its own (verifying), so verification never recurses.

// suggestion is one verified value a hint offers (kept for tests).
type suggestion struct {
	code, path string
	value      int
}

// accepts reports whether setting path to v clears code (when code is not
// empty) and adds no error beyond those the spec already has.
func (c *checker) accepts(code, path string, v int) bool {
	if c.verifying {
		return true
	}
	if c.baseline == nil {
		c.baseline = map[string]bool{}
		for _, d := range rerun(c.s) {
			if d.Severity == diag.Error {
				c.baseline[d.Code+"\x00"+d.Path] = true
			}
		}
	}
	if path == "" {
		return true
	}
	s2, ok := withInt(c.s, path, v)
	if !ok {
		return true // not a field this verifier can set: keep the value
	}
	for _, d := range rerun(s2) {
		if d.Severity != diag.Error {
			continue
		}
		if d.Code == code || !c.baseline[d.Code+"\x00"+d.Path] {
			return false
		}
	}
	c.suggested = append(c.suggested, suggestion{code, path, v})
	return true
}

// maxListed is the most values a hint lists (ints prints 12).
const maxListed = 12

// fieldFails reports whether the spec already has an error at path. A value
// derived from a field that fails its own rules (ffn_hidden as a multiple of
// a tp that does not divide the heads) is no suggestion: it would stop
// fitting once that field is fixed.
func (c *checker) fieldFails(path string) bool {
	if c.verifying {
		return false
	}
	c.accepts("", "", 0) // fills the baseline
	for k := range c.baseline {
		if strings.HasSuffix(k, "\x00"+path) {
			return true
		}
	}
	return false
}

// only keeps the values of vs that accepts takes, at most maxListed of them
// (the smallest), so a hint costs a bounded number of re-runs.
func (c *checker) only(code, path string, vs []int) []int {
	if c.verifying {
		return vs
	}
	var out []int
	for i, v := range vs {
		if len(out) == maxListed || i == 4*maxListed {
			break
		}
		if c.accepts(code, path, v) {
			out = append(out, v)
		}
	}
	return out
}

// nearest is nearestSatisfying over multiples of step, with every
// candidate verified.
func (c *checker) nearest(code, path string, x, step, limit int, ok func(int) bool) (below, above int) {
	return nearestSatisfying(x, step, limit, func(v int) bool {
		return (ok == nil || ok(v)) && c.accepts(code, path, v)
	})
}

// rerun runs every rule on s without building hints.
func rerun(s *spec.Spec) diag.List {
	v := &checker{s: s, d: spec.Derive(s), r: diag.NewReporter(nil), verifying: true}
	v.run()
	return v.r.List
}

// withInt returns a copy of s with the integer field at the dotted path (its
// JSON names, e.g. "parallel.tp", "model.moe.ffn_hidden") set to v. Structs
// behind pointers on the path are copied, so s is never changed.
func withInt(s *spec.Spec, path string, v int) (*spec.Spec, bool) {
	s2 := *s
	cur := reflect.ValueOf(&s2).Elem()
	parts := strings.Split(path, ".")
	for i, name := range parts {
		f, ok := fieldByJSON(cur, name)
		if !ok {
			return nil, false
		}
		last := i == len(parts)-1
		switch {
		case last && f.Kind() == reflect.Int:
			f.SetInt(int64(v))
			return &s2, true
		case last && f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Int:
			p := reflect.New(f.Type().Elem())
			p.Elem().SetInt(int64(v))
			f.Set(p)
			return &s2, true
		case last:
			return nil, false
		case f.Kind() == reflect.Struct:
			cur = f
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct && !f.IsNil():
			cp := reflect.New(f.Type().Elem())
			cp.Elem().Set(f.Elem())
			f.Set(cp)
			cur = cp.Elem()
		default:
			return nil, false
		}
	}
	return nil, false
}

func fieldByJSON(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}
