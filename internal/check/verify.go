package check

import (
	"cmp"
	"reflect"
	"slices"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/schema"
)

// Hints suggest values; every value a hint suggests must pass every rule
// (issue 12 item 15). A candidate is verified by running the rules again on
// a copy of the spec with the candidate set: it must clear the diagnostic it
// is offered for and bring no error the spec did not already have. The
// re-run builds no hints of its own (verifying), so verification never
// recurses. A hint whose candidates all fail says that no value fits instead
// of suggesting one (see listed).

// A setting is one field (its dotted JSON path, e.g. "parallel.tp") set to a
// value: an int, a string, a []int, or nil to remove an optional field.
type setting struct {
	path  string
	value any
}

// removed is the value of a setting that removes a field which is not
// optional in Go: the field takes its schema default, def.
type removed struct{ def any }

func valueOf(v any) any {
	if r, ok := v.(removed); ok {
		return r.def
	}
	return v
}

// suggestion is one verified setting a hint offers (kept for tests).
type suggestion struct {
	code string
	set  []setting
}

// accepts reports whether setting path to v clears every diagnostic of code
// (when code is not empty; errors and warnings alike), adds no error beyond
// those the spec already has and leaves no error on path.
func (c *checker) accepts(code, path string, v int) bool {
	return c.acceptsAll(code, setting{path, v})
}

// acceptsRange verifies a range hint ("use at most 300") at both ends and
// at its middle: the range is printed only when all three pass, so a rule
// that holds at the ends and not inside (a divisibility, a window) cannot
// hide behind them.
func (c *checker) acceptsRange(code, path string, lo, hi int) bool {
	if hi < lo {
		return false
	}
	for _, v := range []int{lo, lo + (hi-lo)/2, hi} {
		if !c.accepts(code, path, v) {
			return false
		}
	}
	return true
}

// acceptsAll is accepts for several fields set together.
func (c *checker) acceptsAll(code string, set ...setting) bool {
	return c.acceptsIf(code, func(d diag.Diagnostic) bool { return d.Code == code }, set)
}

// acceptsIf is acceptsAll where offered tells the diagnostics the settings
// must clear.
func (c *checker) acceptsIf(code string, offered func(diag.Diagnostic) bool, set []setting) bool {
	if c.verifying {
		return true
	}
	c.fillBaseline()
	s2 := c.s
	for _, st := range set {
		// A suggested value must pass the schema too, not only the rules
		// (global_batch 1073741825 where the schema stops at 2^30 would
		// fail at load): it is unified with the field's own CUE constraint.
		if !schema.Allows(st.path, valueOf(st.value)) {
			return false
		}
		var ok bool
		if s2, ok = WithValue(s2, st.path, valueOf(st.value)); !ok {
			// Not a field the verifier can set: an unverifiable value is
			// not suggested (TestWithValueReachesEveryHintField keeps the
			// hints' fields settable).
			return false
		}
	}
	for _, d := range rerun(s2, c.o) {
		// The diagnostic offered for must go, whatever its severity (a
		// warning's hint is held to the same rule); no new error may come,
		// and no error may stay on a field the hint sets: a value that
		// breaks a rule the old value broke too is no suggestion (tp=16384
		// for the world size with heads=32, while tp=3 fails tp-heads).
		if offered(d) || (d.Severity == diag.Error && (!c.baseline[d.Code+"\x00"+d.Path] || (sets(set, d.Path) && !jointRules[d.Code]))) {
			return false
		}
	}
	c.suggested = append(c.suggested, suggestion{code, set})
	return true
}

// jointRules are rules on the product of several degrees, blamed on one of
// them (tp·pp·cp against the world size, etp·ep·pp): when the spec already
// breaks one, a value for that degree cannot clear it alone, and another
// degree's value does (the grid hint lists both). Such an error may stay on
// the field a hint sets; any other error on it means the value itself
// breaks a rule.
var jointRules = map[string]bool{"world-size": true, "world-not-divisible": true, "expert-grid-not-divisible": true}

// sets reports whether one of set is the field at path.
func sets(set []setting, path string) bool {
	for _, st := range set {
		if st.path == path {
			return true
		}
	}
	return false
}

func (c *checker) fillBaseline() {
	if c.baseline != nil {
		return
	}
	c.baseline = map[string]bool{}
	for _, d := range rerun(c.s, c.o) {
		if d.Severity == diag.Error {
			c.baseline[d.Code+"\x00"+d.Path] = true
		}
	}
}

// maxListed is the most values a hint lists (ints prints 12).
const maxListed = 12

// maxTried bounds the candidates one hint verifies once it has found one,
// and maxSearched before it says no value fits, so a hint costs a bounded
// number of re-runs.
const (
	maxTried    = 4 * maxListed
	maxSearched = 1024
)

// fieldFails reports whether the spec already has an error at path. A value
// derived from a field that fails its own rules (ffn_hidden as a multiple of
// a tp that does not divide the heads) is no suggestion: it would stop
// fitting once that field is fixed.
func (c *checker) fieldFails(path string) bool {
	if c.verifying {
		return false
	}
	c.fillBaseline()
	for k := range c.baseline {
		if strings.HasSuffix(k, "\x00"+path) {
			return true
		}
	}
	return false
}

// only keeps the values of vs that accepts takes, at most maxListed of them
// (the smallest).
func (c *checker) only(code, path string, vs []int) []int {
	if c.verifying {
		return vs
	}
	var out []int
	for i, v := range vs {
		if len(out) == maxListed || (i >= maxTried && len(out) > 0) || i == maxSearched {
			break
		}
		if c.accepts(code, path, v) {
			out = append(out, v)
		}
	}
	return out
}

// near is only over the candidates closest to x first (ties: the smaller),
// returned in ascending order: the values a user most likely meant.
func (c *checker) near(code, path string, x int, vs []int) []int {
	byDist := slices.Clone(vs)
	slices.SortStableFunc(byDist, func(a, b int) int {
		return cmp.Or(cmp.Compare(abs(a-x), abs(b-x)), cmp.Compare(a, b))
	})
	out := c.only(code, path, byDist)
	slices.Sort(out)
	return out
}

// written reports whether the user's own text sets the field at path: the
// locator places it apart from its parent (a field the user did not write,
// a default or a preset's value, is placed at the nearest field the user
// wrote, load.Result.Locate).
func (c *checker) written(path string) bool {
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return false
	}
	p := c.r.At(path)
	return p.IsValid() && p != c.r.At(path[:i])
}

// onlyStrings is only for a string field.
func (c *checker) onlyStrings(code, path string, vs []string) []string {
	if c.verifying {
		return vs
	}
	var out []string
	for _, v := range vs {
		if c.acceptsAll(code, setting{path, v}) {
			out = append(out, v)
		}
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// nearest is nearestSatisfying over multiples of step, with every
// candidate verified.
func (c *checker) nearest(code, path string, x, step, limit int, ok func(int) bool) (below, above int) {
	tried := 0 // each try re-runs every rule: at most maxSearched of them
	return nearestSatisfying(x, step, limit, func(v int) bool {
		if ok != nil && !ok(v) {
			return false
		}
		if tried++; tried > maxSearched {
			return false
		}
		return c.accepts(code, path, v)
	})
}

// rerun runs every rule on s with options o without building hints.
func rerun(s *spec.Spec, o Options) diag.List {
	v := &checker{s: s, d: spec.Derive(s), r: diag.NewReporter(nil), verifying: true, o: o}
	v.run()
	return v.r.List
}

// withInt returns a copy of s with the integer field at the dotted path (its
// JSON names, e.g. "parallel.tp", "model.moe.ffn_hidden") set to v.
func withInt(s *spec.Spec, path string, v int) (*spec.Spec, bool) {
	return WithValue(s, path, v)
}

// WithValue returns a copy of s with the field at the dotted path set to v:
// an int or string field (or a pointer to one), an []int, or an optional
// field removed (v nil). Structs behind pointers on the path are copied, so
// s is never changed. The hints' verifier sets their values with it, and
// explain's faster settings theirs (estimate.fasterCandidate.apply).
func WithValue(s *spec.Spec, path string, v any) (*spec.Spec, bool) {
	s2 := *s
	cur := reflect.ValueOf(&s2).Elem()
	parts := strings.Split(path, ".")
	for i, name := range parts {
		f, ok := fieldByJSON(cur, name)
		if !ok {
			return nil, false
		}
		if i == len(parts)-1 {
			return &s2, setField(f, v)
		}
		switch {
		case f.Kind() == reflect.Struct:
			cur = f
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct:
			// A block the spec leaves out (checkpoint) starts empty: the
			// rules read only the fields a hint sets in it.
			cp := reflect.New(f.Type().Elem())
			if !f.IsNil() {
				cp.Elem().Set(f.Elem())
			}
			f.Set(cp)
			cur = cp.Elem()
		case f.Kind() == reflect.Map && f.Type().Key().Kind() == reflect.String && i == len(parts)-2:
			// An environment variable (launch.env.NAME): set, or removed
			// with nil, in a copy of the map.
			m := reflect.MakeMap(f.Type())
			for it := f.MapRange(); it.Next(); {
				m.SetMapIndex(it.Key(), it.Value())
			}
			key := reflect.ValueOf(parts[i+1]).Convert(f.Type().Key())
			if v == nil {
				m.SetMapIndex(key, reflect.Value{})
			} else {
				rv := reflect.ValueOf(v)
				if !rv.Type().AssignableTo(f.Type().Elem()) {
					return nil, false
				}
				m.SetMapIndex(key, rv)
			}
			f.Set(m)
			return &s2, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// setField sets f to v, converting between a value and a pointer to it.
func setField(f reflect.Value, v any) bool {
	if v == nil {
		if f.Kind() != reflect.Pointer && f.Kind() != reflect.Slice {
			return false
		}
		f.Set(reflect.Zero(f.Type()))
		return true
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.Type().AssignableTo(f.Type()):
		switch x := v.(type) {
		case []int:
			rv = reflect.ValueOf(slices.Clone(x))
		case []string:
			rv = reflect.ValueOf(slices.Clone(x))
		}
		f.Set(rv)
		return true
	case f.Kind() == reflect.Pointer && rv.Type().AssignableTo(f.Type().Elem()):
		p := reflect.New(f.Type().Elem())
		p.Elem().Set(rv)
		f.Set(p)
		return true
	case rv.CanConvert(f.Type()) && rv.Kind() == f.Kind():
		f.Set(rv.Convert(f.Type()))
		return true
	}
	// A number of the other kind (an int for a float field, or a float
	// that is a whole number for an int field), or a pointer to one.
	t := f.Type()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	isFloat := func(k reflect.Kind) bool { return k == reflect.Float64 || k == reflect.Float32 }
	isInt := func(k reflect.Kind) bool { return k >= reflect.Int && k <= reflect.Int64 }
	switch {
	case isInt(rv.Kind()) && isFloat(t.Kind()):
	case isFloat(rv.Kind()) && isInt(t.Kind()) && rv.Float() == float64(int64(rv.Float())):
	default:
		return false
	}
	nv := rv.Convert(t)
	if f.Kind() == reflect.Pointer {
		p := reflect.New(t)
		p.Elem().Set(nv)
		nv = p
	}
	f.Set(nv)
	return true
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

// An option is one way a hint offers to fix a diagnostic by naming settings
// (a boolean turned on or off, a recipe, a flag unset): its text and the
// settings it makes together.
type option struct {
	text string
	set  []setting
}

func opt(text string, set ...setting) option { return option{text, set} }

// note adds an explanation to an option's text.
func (o option) note(text string) option { o.text += " (" + text + ")"; return o }

// setOpt is the option that makes settings, said as settingsText says them.
func setOpt(set ...setting) option { return option{settingsText(set), set} }

// options verifies a hint made of options the way only verifies values:
// each option's settings are substituted and every rule runs again; an
// option passes when the diagnostic of code at path goes and no new error
// comes (acceptsAt). The hint is full when every option passes, the passing
// options alone (joined by ", or ") when some do, and otherwise says that no
// single setting passes: a hint never offers a setting that fails a check.
func (c *checker) options(code, path, full string, opts ...option) string {
	if c.verifying {
		return full
	}
	var ok, tried []string
	for _, o := range opts {
		tried = append(tried, o.text)
		if c.acceptsAt(code, path, o.set...) {
			ok = append(ok, o.text)
		}
	}
	switch len(ok) {
	case len(opts):
		return full
	case 0:
		return "no single setting passes every check with the rest of the plan as it is (tried: " + strings.Join(tried, "; ") + ")"
	}
	return strings.Join(ok, ", or ")
}

// anyOf is options whose full text is every option's, joined by ", or ":
// the hint offers exactly the options that pass.
func (c *checker) anyOf(code, path string, opts ...option) string {
	texts := make([]string, len(opts))
	for i, o := range opts {
		texts[i] = o.text
	}
	return c.options(code, path, strings.Join(texts, ", or "), opts...)
}

// valueOptions makes one option per candidate value of field (with the
// extra settings each needs) that passes, at most n of them, the closest
// to the candidates' order first: a list of values offered beside other
// options ("set parallel.vpp: 1, or set parallel.pp: 4").
func (c *checker) valueOptions(code, path, field string, cands []int, n int, extra ...setting) []option {
	var out []option
	for i, v := range cands {
		if len(out) == n || (i >= maxTried && len(out) > 0) || i == maxSearched {
			break
		}
		set := append([]setting{{field, v}}, extra...)
		if c.verifying || c.acceptsAt(code, path, set...) {
			out = append(out, opt(settingsText(set), set...))
		}
	}
	return out
}

// A dim is a field a fix needs some value of, and the values to try.
type dim struct {
	field string
	cands []int
}

// firstPassing is the first option (fixed settings with one value of each
// dim, the dims' candidates tried in order, at most maxTried combinations)
// that clears the diagnostic of code at path and adds no error; ok is false
// when none does. A fix that needs several fields at once ("change the
// listed settings") is offered only as settings that pass together.
func (c *checker) firstPassing(code, path string, fixed []setting, dims ...dim) (o option, ok bool) {
	tried := 0
	var try func(set []setting, rest []dim) bool
	try = func(set []setting, rest []dim) bool {
		if len(rest) == 0 {
			tried++
			if c.verifying || c.acceptsAt(code, path, set...) {
				o, ok = setOpt(set...), true
				return true
			}
			return false
		}
		for _, v := range rest[0].cands {
			if tried >= maxTried {
				return false
			}
			if try(append(slices.Clone(set), setting{rest[0].field, v}), rest[1:]) {
				return true
			}
		}
		return false
	}
	try(fixed, dims)
	return o, ok
}

// settingsText writes settings as a hint says them: "set a.b: 1 and c.d:
// true; remove e.f" (nil removes a field, or sets it to its default when
// def names one).
func settingsText(set []setting) string {
	var sets, removes []string
	for _, st := range set {
		if _, ok := st.value.(removed); ok || st.value == nil {
			removes = append(removes, st.path)
			continue
		}
		sets = append(sets, st.path+": "+spec.Literal(st.value))
	}
	var parts []string
	if len(sets) > 0 {
		parts = append(parts, "set "+strings.Join(sets, " and "))
	}
	if len(removes) > 0 {
		parts = append(parts, "remove "+strings.Join(removes, " and "))
	}
	return strings.Join(parts, "; ")
}

// acceptsAt is acceptsAll for a diagnostic that shares its code with others:
// the settings must clear the diagnostics of code at path (those elsewhere
// may stay) and add no error beyond those the spec already has.
func (c *checker) acceptsAt(code, path string, set ...setting) bool {
	return c.acceptsIf(code, func(d diag.Diagnostic) bool { return d.Code == code && d.Path == path }, set)
}
