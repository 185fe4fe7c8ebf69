package load

import (
	"slices"

	"cuelang.org/go/cue"
)

// presetBlocks are the blocks stdlib presets fill (model and cluster).
var presetBlocks = []string{"model", "cluster"}

// presetDefaults lets a preset's defaults win over the schema's. A preset
// writes each field as a default (`rotary_base: *500000 | _`) so that a user
// can override it (`models.llama3_8b & {rotary_base: 10000}`); where the
// schema has a default of its own for the field (`rotary_base: *10000 | int`)
// CUE finds two defaults that disagree and keeps neither, leaving the field
// incomplete. For each field of the model and cluster blocks that the
// unified plan leaves not concrete while the user's value (the preset, with
// the user's overrides) has a concrete default, that default is filled in:
// the user's side states the model, the schema's default is the fallback.
func presetDefaults(user, plan cue.Value) cue.Value {
	paths := make([]cue.Path, len(presetBlocks))
	for i, b := range presetBlocks {
		paths[i] = cue.ParsePath(b)
	}
	return fillDefaults(user, plan, paths)
}

// PresetDefaults applies the same rule to a preset on its own: every field
// the schema definition def leaves not concrete once unified with the preset
// takes the preset's default (the stdlib's tests check presets this way).
func PresetDefaults(preset, def cue.Value) cue.Value {
	return fillDefaults(preset, def, []cue.Path{cue.MakePath()})
}

// fillDefaults fills, under each of paths, the user's defaults that the
// unified plan leaves not concrete. It first fills every such field found
// against one unification (batch) and unifies once more to check them; a
// fill only makes the plan more concrete, so the batch fills at least the
// fields the one-by-one walk would, and any other field it fills the walk
// would have found concrete at the user's own default (a default the plan
// resolves is the meet of both sides', so it is the user's) or in conflict
// with it, which the check sees at the filled field. Only then, or where the
// plan was already in error there, the walk runs one field at a time,
// unifying again after each fill (a field the plan computes from one filled
// before it keeps the computed value).
func fillDefaults(user, plan cue.Value, paths []cue.Path) cue.Value {
	batch := defaultFiller{user: user, plan: plan, batch: true}
	batch.fillAll(paths)
	if len(batch.filled) == 0 {
		return user
	}
	unified := batch.user.Unify(plan)
	if !slices.ContainsFunc(batch.filled, func(p cue.Path) bool { return unified.LookupPath(p).Err() != nil }) {
		return batch.user
	}
	walk := defaultFiller{user: user, plan: plan}
	walk.fillAll(paths)
	return walk.user
}

// defaultFiller walks the user's value and fills the defaults. A preset
// writes every field as a default, so most fields are checked against the
// unified plan: it is unified once and again only after a fill changed the
// user's value (a unification per field made loading a preset cost tens of
// whole-plan unifications; BenchmarkLoadPresets).
type defaultFiller struct {
	user, plan cue.Value
	unified    cue.Value
	fresh      bool // unified is user & plan for the current user
	// batch keeps the first unification for every field (fillDefaults
	// checks the fills afterwards); filled lists the fields filled.
	batch  bool
	filled []cue.Path
}

// unifiedAt is the plan unified with the current user's value, at path.
func (f *defaultFiller) unifiedAt(path cue.Path) cue.Value {
	if !f.fresh {
		f.unified, f.fresh = f.user.Unify(f.plan), true
	}
	return f.unified.LookupPath(path)
}

// fillAll fills under each of paths.
func (f *defaultFiller) fillAll(paths []cue.Path) {
	for _, p := range paths {
		f.fill(p)
	}
}

func (f *defaultFiller) fill(path cue.Path) {
	u := f.user.LookupPath(path)
	if !u.Exists() {
		return
	}
	if u.IncompleteKind() == cue.StructKind {
		it, err := u.Fields()
		if err != nil {
			return
		}
		var sels []cue.Selector
		for it.Next() {
			sels = append(sels, it.Selector())
		}
		for _, sel := range sels {
			f.fill(cue.MakePath(append(path.Selectors(), sel)...))
		}
		return
	}
	if u.IsConcrete() {
		return
	}
	d, ok := u.Default()
	if !ok || !d.IsConcrete() || d.Validate(cue.Concrete(true)) != nil {
		return
	}
	if unified := f.unifiedAt(path); unified.Exists() && unified.Validate(cue.Concrete(true)) == nil {
		return
	}
	f.user = f.user.FillPath(path, d)
	f.fresh = f.fresh && f.batch
	f.filled = append(f.filled, path)
}
