package load

import (
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
	for _, b := range presetBlocks {
		user = fillDefaults(user, plan, cue.ParsePath(b))
	}
	return user
}

// PresetDefaults applies the same rule to a preset on its own: every field
// the schema definition def leaves not concrete once unified with the preset
// takes the preset's default (the stdlib's tests check presets this way).
func PresetDefaults(preset, def cue.Value) cue.Value {
	return fillDefaults(preset, def, cue.MakePath())
}

func fillDefaults(user, plan cue.Value, path cue.Path) cue.Value {
	u := user.LookupPath(path)
	if !u.Exists() {
		return user
	}
	if u.IncompleteKind() == cue.StructKind {
		it, err := u.Fields()
		if err != nil {
			return user
		}
		var sels []cue.Selector
		for it.Next() {
			sels = append(sels, it.Selector())
		}
		for _, sel := range sels {
			user = fillDefaults(user, plan, cue.MakePath(append(path.Selectors(), sel)...))
		}
		return user
	}
	if u.IsConcrete() {
		return user
	}
	d, ok := u.Default()
	if !ok || !d.IsConcrete() || d.Validate(cue.Concrete(true)) != nil {
		return user
	}
	unified := user.Unify(plan).LookupPath(path)
	if unified.Exists() && unified.Validate(cue.Concrete(true)) == nil {
		return user
	}
	return user.FillPath(path, d)
}
