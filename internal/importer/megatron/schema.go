package megatron

import (
	"encoding/json"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"parc.dev/parc/schema"
	"parc.dev/parc/stdlib"
)

// schemaView answers what the importer needs from parc's schema: whether a
// field exists, what it accepts, its default and the fields' order.
type schemaView struct {
	ctx  *cue.Context
	plan cue.Value
}

var (
	viewOnce sync.Once
	view     *schemaView
)

func theSchema() *schemaView {
	viewOnce.Do(func() {
		ctx := cuecontext.New()
		v := ctx.CompileBytes(schema.Source, cue.Filename(schema.Filename))
		view = &schemaView{ctx: ctx, plan: v.LookupPath(cue.ParsePath("#Plan"))}
	})
	return view
}

// field returns the schema's value at a dotted spec path (optional fields
// included).
func (s *schemaView) field(p string) (cue.Value, bool) {
	v := s.plan
	for _, name := range strings.Split(p, ".") {
		next := v.LookupPath(cue.MakePath(cue.Str(name)))
		if !next.Exists() {
			next = v.LookupPath(cue.MakePath(cue.Str(name).Optional()))
		}
		if !next.Exists() {
			return cue.Value{}, false
		}
		v = next
	}
	return v, true
}

// accepts reports whether the field at p exists and takes value.
func (s *schemaView) accepts(p string, value any) bool {
	f, ok := s.field(p)
	if !ok || value == nil {
		return false
	}
	if k := f.IncompleteKind(); k&cue.StructKind != 0 && k&^cue.StructKind == 0 {
		return false // a block, not a field
	}
	u := f.Unify(s.ctx.Encode(cueValue(f, value)))
	return u.Validate(cue.Concrete(true)) == nil
}

// isInt reports whether the field at p holds integers only.
func (s *schemaView) isInt(p string) bool {
	f, ok := s.field(p)
	return ok && f.IncompleteKind()&^(cue.IntKind|cue.BottomKind) == 0
}

// defaultOf returns the schema's default at p, if it has one.
func (s *schemaView) defaultOf(p string) (any, bool) {
	f, ok := s.field(p)
	if !ok {
		return nil, false
	}
	d, ok := f.Default()
	if !ok || !d.IsConcrete() {
		return nil, false
	}
	if d.IncompleteKind() == cue.StructKind {
		return nil, false
	}
	return goValue(d)
}

// defaultGiven returns the schema's default at p with the values of the
// other fields of p's block (vals, by dotted spec path) filled in: a
// default the schema computes from other fields (overlap_param_gather's
// from the optimizer sharding and overlap_grad_reduce), evaluated by the
// schema itself. Values the schema does not accept are left out.
func (s *schemaView) defaultGiven(p string, vals map[string]any) (any, bool) {
	block, _, _ := strings.Cut(p, ".")
	// The block's values gathered in a struct of their own, then filled
	// into the plan at once: a FillPath per field into the plan
	// re-evaluates the whole plan each time.
	given := s.ctx.CompileString("{}")
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		if k == p || !strings.HasPrefix(k, block+".") || !s.accepts(k, vals[k]) {
			continue
		}
		f, _ := s.field(k)
		given = given.FillPath(cue.ParsePath(strings.TrimPrefix(k, block+".")), s.ctx.Encode(cueValue(f, vals[k])))
	}
	v := s.plan.FillPath(cue.MakePath(cue.Str(block)), given)
	f := v.LookupPath(cue.ParsePath(p))
	d, ok := f.Default()
	if !f.Exists() || !ok || !d.IsConcrete() || d.IncompleteKind() == cue.StructKind {
		return nil, false
	}
	return goValue(d)
}

// fields lists the fields of the block at p in the schema's order.
func (s *schemaView) fields(p string) []string {
	v := s.plan
	if p != "" {
		var ok bool
		if v, ok = s.field(p); !ok {
			return nil
		}
	}
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		out = append(out, it.Selector().Unquoted())
	}
	return out
}

// cueValue adapts a namespace value to the field: an integral float for an
// integer field becomes an int.
func cueValue(f cue.Value, v any) any {
	if x, ok := v.(float64); ok && f.IncompleteKind()&^(cue.IntKind|cue.BottomKind) == 0 && x == float64(int64(x)) {
		return int64(x)
	}
	return v
}

// goValue decodes a concrete CUE value into the namespace's Go types.
func goValue(v cue.Value) (any, bool) {
	b, err := v.MarshalJSON()
	if err != nil {
		return nil, false
	}
	return decodeJSON(b)
}

func decodeJSON(b []byte) (any, bool) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return nil, false
	}
	return plainJSON(x), true
}

func plainJSON(v any) any {
	switch v := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			f, _ := v.Float64()
			return f
		}
		i, err := v.Int64()
		if err != nil {
			f, _ := v.Float64()
			return f
		}
		return i
	case []any:
		for i := range v {
			v[i] = plainJSON(v[i])
		}
		return v
	case map[string]any:
		for k := range v {
			v[k] = plainJSON(v[k])
		}
		return v
	}
	return v
}

// preset is one model preset of the stdlib, flattened ("moe.experts").
type preset struct {
	name   string
	fields map[string]any
}

var (
	presetsOnce sync.Once
	presets     []preset
)

// eachPreset calls fn with every preset (top-level field not hidden and no
// definition) of the embedded stdlib package dir ("models" or "clusters").
func eachPreset(dir string, fn func(name string, v cue.Value)) {
	ctx := cuecontext.New()
	_ = fs.WalkDir(stdlib.FS, dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || path.Ext(p) != ".cue" {
			return nil
		}
		b, err := stdlib.FS.ReadFile(p)
		if err != nil {
			return nil
		}
		it, err := ctx.CompileBytes(b, cue.Filename(p)).Fields()
		if err != nil {
			return nil
		}
		for it.Next() {
			name := it.Selector().Unquoted()
			if !strings.HasPrefix(name, "_") && !strings.HasPrefix(name, "#") {
				fn(name, it.Value())
			}
		}
		return nil
	})
}

// modelPresets loads stdlib/models: each preset's fields, flattened.
func modelPresets() []preset {
	presetsOnce.Do(func() {
		eachPreset("models", func(name string, v cue.Value) {
			m, ok := goValue(v)
			mm, isMap := m.(map[string]any)
			if !ok || !isMap {
				return
			}
			flat := map[string]any{}
			flatten("", mm, flat)
			// The defaults a preset leaves to the schema that decide a
			// shape's match (matchPreset): query_groups = heads, the
			// experts' size = ffn_hidden. Filled here, once: the presets
			// are shared by every import, concurrent ones included.
			if _, ok := flat["query_groups"]; !ok {
				flat["query_groups"] = flat["heads"]
			}
			if _, ok := flat["ffn_hidden"]; ok {
				if _, ok := flat["moe.ffn_hidden"]; !ok && flat["moe.experts"] != nil {
					flat["moe.ffn_hidden"] = flat["ffn_hidden"]
				}
			}
			presets = append(presets, preset{name, flat})
		})
		slices.SortFunc(presets, func(a, b preset) int { return strings.Compare(a.name, b.name) })
	})
	return presets
}

func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(p, sub, out)
			continue
		}
		out[p] = v
	}
}
