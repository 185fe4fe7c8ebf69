package load

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue/token"

	"cuelang.org/go/cue"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// Written reports whether the user's spec writes the field at path, as a
// value or open.
func (r *Result) Written(path string) bool { return r.User.LookupPath(cue.ParsePath(path)).Exists() }

// Open lists the solver fields (spec.OpenPaths) the user left open (`tp: int`,
// `tp: 1 | 2 | 4 | 8`, `pp: >=2`). Openness is decided on the user's own
// value, before the schema's defaults could make it concrete. An open
// parallel.layout and train.recompute_modules follow (spec.LayoutPath,
// spec.RecomputeModulesPath: a list is open when it may grow, `[...string]`,
// which CUE would otherwise read as the empty list), train.recompute_method
// and train.recompute_layers, parallel.dp and
// parallel.sp (spec.DataParallelPath, spec.SequenceParallelPath), and an open
// parallel.microbatch_group_size (spec.GroupSizePath) is listed last.
func (r *Result) Open() []string {
	var out []string
	for _, p := range spec.LeaveOpenPaths() {
		v := r.User.LookupPath(cue.ParsePath(p))
		if !v.Exists() {
			continue
		}
		if p == spec.RecomputeModulesPath && v.IsConcrete() && v.Allows(cue.AnyIndex) {
			out = append(out, p)
			continue
		}
		if _, hasDefault := v.Default(); hasDefault {
			continue // `*4 | 8` is a choice already made
		}
		if !v.IsConcrete() {
			out = append(out, p)
		}
	}
	return out
}

// Decode validates the unified plan as concrete and decodes it into a
// spec.Spec. All schema errors are reported at once.
func (r *Result) Decode() (*spec.Spec, diag.List) {
	return r.DecodeValue(r.Plan)
}

// DecodeValue decodes v, a value derived from r.Plan (the solver fills open
// fields with FillPath and decodes each candidate).
func (r *Result) DecodeValue(v cue.Value) (*spec.Spec, diag.List) {
	var diags diag.List
	if err := v.Validate(cue.Concrete(true)); err != nil {
		diags = fromCUEError(err, r)
	}
	// CUE leaves out "incomplete" errors when there are others; a user wants
	// every missing field at once, so walk for them.
	seen := map[string]bool{}
	for _, d := range diags {
		seen[d.Path] = true
	}
	// Likewise a closedness error can hide behind another error in the same
	// struct: check every user field against the schema ourselves.
	r.unknown(r.User, r.Schema, nil, seen, &diags)
	// A whole section missing is one error, not one per required field.
	for _, sec := range sections {
		if !r.User.LookupPath(cue.ParsePath(sec.name)).Exists() {
			diags.Add(r.missingSection(sec.name, sec.presets))
			seen[sec.name] = true
			diags = slices.DeleteFunc(diags, func(d diag.Diagnostic) bool {
				return d.Code == "missing-field" && strings.HasPrefix(d.Path, sec.name+".")
			})
			r.skipMissing = append(r.skipMissing, sec.name+".")
		}
	}
	// What an unknown reference (a misspelt preset: `clusters.dgx_a100 &
	// {nodes: 1}`) leaves empty is that error's consequence, not the
	// user's omission: no missing-field under its path.
	skip := slices.Clone(r.skipMissing)
	for _, d := range diags {
		if d.Code == "unknown-reference" && d.Path != "" {
			skip = append(skip, d.Path+".")
		}
	}
	defer func(saved []string) { r.skipMissing = saved }(r.skipMissing)
	r.skipMissing = skip
	diags = slices.DeleteFunc(diags, func(d diag.Diagnostic) bool { return d.Code == "missing-field" && r.skipped(d.Path) })
	r.missing(v, nil, seen, &diags)
	r.numbers(v, nil, seen, &diags)
	if diags.HasErrors() {
		return nil, r.withoutDefaultCascades(diags)
	}
	var s spec.Spec
	if err := v.Decode(&s); err != nil {
		return nil, fromCUEError(err, r)
	}
	s.Cluster.FillFromDatasheet()
	// Megatron derives the virtual stages from a pipeline layout
	// (validate_args); a vpp the user did not write follows it.
	if p := &s.Parallel; p.Layout != nil && !r.User.LookupPath(cue.ParsePath("parallel.vpp")).Exists() {
		if _, vpp, ok := p.LayoutStages(); ok {
			p.VPP = vpp
		}
	}
	return &s, nil
}

// withoutDefaultCascades drops the missing-field errors of fields the user
// did not write and the schema alone defaults, when another error is in the
// list: such a default is computed from other fields
// (train.grad_reduce_in_bf16 from train.precision), so it is missing only
// because one of them is in error, which that error already says
// (precision: "int8" is one error, not two).
func (r *Result) withoutDefaultCascades(diags diag.List) diag.List {
	if !slices.ContainsFunc(diags, func(d diag.Diagnostic) bool { return d.Severity == diag.Error && d.Code != "missing-field" }) {
		return diags
	}
	return slices.DeleteFunc(diags, func(d diag.Diagnostic) bool {
		if d.Code != "missing-field" || d.Path == "" || r.User.LookupPath(cue.ParsePath(d.Path)).Exists() {
			return false
		}
		_, ok := r.Schema.LookupPath(cue.ParsePath(d.Path)).Default()
		return ok
	})
}

// Locator returns r.Locate as a diag.Locator.
func (r *Result) Locator() diag.Locator { return r.Locate }

// missing reports every regular field of v that is still not concrete.
func (r *Result) missing(v cue.Value, path []string, seen map[string]bool, out *diag.List) {
	it, err := v.Fields()
	if err != nil {
		return
	}
	for it.Next() {
		f := it.Value()
		p := append(append([]string(nil), path...), label(it.Selector()))
		name := strings.Join(p, ".")
		if isStruct(f) {
			r.missing(f, p, seen, out)
			continue
		}
		if seen[name] || f.Err() != nil && !isIncomplete(f) || r.skipped(name) {
			continue
		}
		if f.IsConcrete() {
			continue
		}
		if _, ok := f.Default(); ok {
			continue
		}
		seen[name] = true
		what := formatSchemaConstraint(r.Schema.LookupPath(cue.ParsePath(name)))
		msg := fmt.Sprintf("required field %s is missing", name)
		if uv := r.User.LookupPath(cue.ParsePath(name)); uv.Exists() {
			msg = fmt.Sprintf("%s is not concrete: it is %v", name, uv)
		}
		hint := ""
		if what != "" {
			hint = fmt.Sprintf("set %s to %s", name, what)
		}
		out.Add(diag.Diagnostic{Severity: diag.Error, Code: "missing-field", Path: name, Pos: r.Locate(name), Message: msg, Hint: hint})
	}
}

func isIncomplete(v cue.Value) bool {
	err := v.Err()
	return err != nil && strings.Contains(err.Error(), "incomplete")
}

// isStruct reports whether v is a struct, also when an error inside it made
// the whole struct an error value.
func isStruct(v cue.Value) bool {
	if v.IncompleteKind() == cue.StructKind {
		return true
	}
	if v.Kind() != cue.BottomKind {
		return false
	}
	_, err := v.Fields()
	return err == nil
}

// unknown reports every field the user wrote that the schema does not allow.
func (r *Result) unknown(user, schema cue.Value, path []string, seen map[string]bool, out *diag.List) {
	it, err := user.Fields(cue.Optional(true))
	if err != nil {
		return
	}
	for it.Next() {
		sel := it.Selector()
		p := append(append([]string(nil), path...), label(sel))
		name := strings.Join(p, ".")
		if !schema.Allows(sel) {
			if !seen[name] {
				seen[name] = true
				parent := strings.Join(path, ".")
				out.Add(r.unknownField(name, parent, label(sel), r.fieldPos(it.Value(), name)))
			}
			continue
		}
		child := schema.LookupPath(cue.MakePath(sel))
		if child.Exists() && child.IncompleteKind() == cue.StructKind && it.Value().IncompleteKind() == cue.StructKind {
			r.unknown(it.Value(), child, p, seen, out)
		}
	}
}

// fieldPos is the position of a user's field, falling back to Locate.
func (r *Result) fieldPos(v cue.Value, path string) diag.Pos {
	if p, ok := r.hclAt[path]; ok {
		return p
	}
	if p, ok := r.userPos([]token.Pos{v.Pos()}); ok {
		return p
	}
	return r.Locate(path)
}

// numbers reports every concrete number parc cannot hold: an integer outside
// 64 bits, a number beyond float64's range or so small it would round to 0.
// CUE's numbers are arbitrary-precision, so the schema's bounds (>=1) let
// them through and decoding would fail without a position.
func (r *Result) numbers(v cue.Value, path []string, seen map[string]bool, out *diag.List) {
	switch v.IncompleteKind() {
	case cue.StructKind:
		it, err := v.Fields()
		if err != nil {
			return
		}
		for it.Next() {
			r.numbers(it.Value(), append(append([]string(nil), path...), label(it.Selector())), seen, out)
		}
		return
	case cue.ListKind:
		it, err := v.List()
		if err != nil {
			return
		}
		for i := 0; it.Next(); i++ {
			r.numbers(it.Value(), append(append([]string(nil), path...), strconv.Itoa(i)), seen, out)
		}
		return
	}
	if !v.IsConcrete() || v.Err() != nil {
		return
	}
	field := fieldPath(path)
	msg := ""
	kind := v.Kind()
	if kind == cue.IntKind && !isListPath(path) {
		// An integer in a field that takes any number (lr: 1e308 * 10)
		// is held as a float64.
		if sf := r.schemaField(field); sf.Exists() && sf.IncompleteKind()&cue.FloatKind != 0 {
			kind = cue.FloatKind
		}
	}
	switch kind {
	case cue.IntKind:
		if _, err := v.Int64(); err != nil {
			msg = fmt.Sprintf("%s = %s does not fit in a 64-bit integer: parc holds integers from %d to %d", field, shortNumber(fmt.Sprint(v)), int64(math.MinInt64), int64(math.MaxInt64))
		}
	case cue.FloatKind:
		switch _, err := v.Float64(); {
		case errors.Is(err, cue.ErrAbove):
			msg = fmt.Sprintf("%s = %s is beyond the largest number parc holds (%g)", field, shortNumber(fmt.Sprint(v)), math.MaxFloat64)
		case errors.Is(err, cue.ErrBelow):
			msg = fmt.Sprintf("%s = %s is too small for parc to hold: it would round to 0 (the smallest positive number is %g)", field, shortNumber(fmt.Sprint(v)), math.SmallestNonzeroFloat64)
		case err != nil:
			msg = fmt.Sprintf("%s = %v is not a number parc can hold: %v", field, v, err)
		}
	}
	if msg == "" || seen[field] {
		return
	}
	seen[field] = true
	hint := ""
	if !isListPath(path) {
		hint = r.allowedHint(field)
	}
	pos, ok := r.userPos([]token.Pos{v.Pos()})
	if !ok {
		pos = r.Locate(strings.Join(path, "."))
	}
	out.Add(diag.Diagnostic{Severity: diag.Error, Code: "number-too-large", Path: field, Pos: pos, Message: msg, Hint: hint})
}

// fieldPath writes a path with list indices as field[i].
func fieldPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func isListPath(path []string) bool {
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			return true
		}
	}
	return false
}

func (r *Result) skipped(path string) bool {
	for _, p := range r.skipMissing {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// label is a field's name as a path element: the unquoted name of a regular
// field, else the selector as CUE writes it (a list index in a value CUE
// could not evaluate as a list: Unquoted panics on it).
func label(sel cue.Selector) string {
	if sel.LabelType() == cue.StringLabel {
		return sel.Unquoted()
	}
	return sel.String()
}
