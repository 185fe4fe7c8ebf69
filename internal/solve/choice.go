package solve

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// An open parallel.layout or train.recompute_modules (spec.LayoutPath,
// spec.RecomputeModulesPath) is a choice the solver makes with the pipeline
// split and the recomputation, not a degree of its own.
//
// parallel.layout open (`layout: string`, a pattern, or a disjunction of
// layouts): parc chooses where the layers go and writes every plan's
// placement as a layout, since a layout excludes the split fields
// (Megatron-LM arguments.py and TransformerConfig at d98e8a64). A
// disjunction of layouts is searched as written; any other constraint gets
// the splits parc tries when it chooses the split (the even one, the
// accounted and uneven ones, and its two layout families), each written as
// the layout that places the same layers (splitLayout), and keeps those the
// constraint allows. Megatron derives vpp from a layout, so when the spec
// writes no vpp it is the layout's stages over pp.
//
// parallel.dp and parallel.sp open (`dp: int`, `dp: >=16`, `sp: bool`):
// each plan's is what it is when the spec does not write it, dp derived
// from the world and the other degrees (the plans whose dp the constraint
// does not allow are ruled out), sp on with tp > 1 (the activations' memory
// over tp at the same communication; Megatron's tensor-parallel overlap and
// MoE layers with tp > 1 need it), each as the constraint allows.
//
// train.recompute_method and train.recompute_layers open: with full
// recomputation parc chooses them as when the spec writes neither (the
// fewest layers of each model chunk that fit, with the block method, or
// every layer), or, with the block method written, the fewest layers (every
// layer: the most a chunk holds); with the uniform method written, the
// layers are Megatron's default 1; with the layers written, it tries both
// methods. Beside another recomputation they are left out (Megatron reads
// them only with full recomputation).
//
// train.recompute_modules open (`[...string]`, a disjunction of lists):
// parc chooses the list selective recomputation reruns among Megatron's
// default and the lists of Megatron-Bridge's recipes and of other published
// runs (moduleLists), and a
// disjunction's own lists, keeping those the constraint allows.

// openLayout takes the user's open layout v: it records the constraint and
// returns a value it allows, for decoding the spec once (newSolver).
func (sv *solver) openLayout(v cue.Value) (string, bool) {
	sv.layoutOpen, sv.layoutUser = true, v
	op, _ := v.Expr()
	sv.layoutAny = op == cue.NoOp && (v.IncompleteKind() == cue.StringKind || v.IncompleteKind() == cue.TopKind)
	sv.userLayouts = concreteDisjuncts[string](v)
	for _, l := range sv.userLayouts {
		sv.spend(int64(len(l)) + nodeWork)
		if pl, err := spec.ParsePipelineLayout(l); err == nil {
			sv.listedLayouts = append(sv.listedLayouts, split{layout: layoutUser, text: l, stages: len(pl.Stages)})
		}
	}
	tries := append(slices.Clone(sv.userLayouts), "", "E|L", "Et|tL")
	for _, l := range tries {
		if allows(v, l) {
			return l, true
		}
	}
	return "", false
}

// openModules takes the user's open recompute_modules v and returns a value
// it allows for decoding the spec once (nil: v is a list already).
func (sv *solver) openModules(v cue.Value) (any, bool) {
	sv.modulesOpen, sv.modulesUser = true, v
	sv.userModules = concreteDisjuncts[[]string](v)
	if v.IsConcrete() {
		return nil, true
	}
	for _, m := range append(slices.Clone(sv.userModules), moduleLists[1:]...) {
		if allows(v, m) {
			return m, true
		}
	}
	for _, m := range []string{"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp"} {
		if allows(v, []string{m}) {
			return []string{m}, true
		}
	}
	return nil, false
}

// concreteDisjuncts are the values of type T among v's disjuncts when v is
// a disjunction of concrete values (nil otherwise: a disjunct such as
// string allows every value). A disjunct of another type is left out: the
// schema's type rules it out.
func concreteDisjuncts[T any](v cue.Value) []T {
	op, args := v.Expr()
	if op != cue.OrOp {
		return nil
	}
	var out []T
	for _, a := range args {
		if !a.IsConcrete() {
			return nil
		}
		var x T
		if a.Decode(&x) == nil {
			out = append(out, x)
		}
	}
	return out
}

// allows reports whether constraint v admits the value x.
func allows(v cue.Value, x any) bool {
	return v.Unify(v.Context().Encode(x)).Validate(cue.Concrete(true)) == nil
}

// layoutConflicts reports an open layout beside an open split field, or
// beside one the spec sets (account_for_* true, first/last_stage_layers): a
// layout places every layer and excludes the split fields, so no plan could
// pass.
func (sv *solver) layoutConflicts() diag.List {
	var ds diag.List
	if !sv.layoutOpen {
		return nil
	}
	p := sv.base.Parallel
	for _, f := range spec.PipelineSplitFields {
		switch {
		case sv.open[f]:
			ds.Errorf(sv.at(spec.LayoutPath), spec.LayoutPath, CodeOpenNoValue,
				fmt.Sprintf("leave either parallel.layout or %s open, not both", f.Path()),
				"parallel.layout and %s are both open: a layout places every layer and excludes the pipeline-split fields (Megatron-LM), so no plan can set both", f.Path())
		case f == spec.OpenAccountForEmbedding && p.AccountForEmbedding, f == spec.OpenAccountForLoss && p.AccountForLoss,
			f == spec.OpenFirstStageLayers && p.FirstStageLayers != nil, f == spec.OpenLastStageLayers && p.LastStageLayers != nil:
			ds.Errorf(sv.at(f.Path()), f.Path(), CodeOpenNoValue,
				fmt.Sprintf("remove %s and let the layout place the layers, or write parallel.layout", f.Path()),
				"parallel.layout is open and %s is set: a layout places every layer and excludes the pipeline-split fields (Megatron-LM), so no plan can set both", f.Path())
		}
	}
	return ds
}

// splitLayout is the layout that places the layers as p does with its
// split fields (pp·vpp stages in Megatron's order, virtual stage v of rank r
// at v·pp + r; the embedding on the first, the MTP layers and the loss on
// the last, where Megatron builds them without a layout).
func splitLayout(layers, mtp int, p spec.Parallel) (string, bool) {
	st := spec.StageLayers(layers, p)
	if st == nil {
		return "", false
	}
	S := p.PP * p.VPP
	stages := make([]string, S)
	for v := range p.VPP {
		for r := range p.PP {
			i := v*p.PP + r
			s := strings.Repeat("t", st[r][v].Count)
			if i == 0 {
				s = "E" + s
			}
			if i == S-1 {
				s += strings.Repeat("m", mtp) + "L"
			}
			stages[i] = s
		}
	}
	return spec.CompactLayout(stages), true
}

// planLayout is the parallel.layout plan lf writes: its split's own (a
// generated or listed layout) or, with parallel.layout open, the layout
// that places the layers as its split does; false when it writes none.
func (sv *solver) planLayout(lf *leaf) (string, bool) {
	sp := sv.splits[lf.split]
	if !sv.layoutOpen {
		return sp.layoutFor(int(lf.pp), int(lf.vpp))
	}
	return sv.openLayoutOf(sp, int(lf.pp), int(lf.vpp))
}

// openLayoutKey is a split with pp and vpp: one layout.
type openLayoutKey struct {
	s       split
	pp, vpp int32
}

// openLayoutOf is the layout a plan with split s, pp and vpp writes when
// parallel.layout is open: its split's own, or the layout that places the
// layers as the split does, in the first form the user's constraint allows
// (Megatron's compact form, then every stage spelled out: a pattern such
// as =~"^(E|t|L|\\|)*$" allows only the second); false when it allows
// neither. The rules reject such a plan (vppRule), before any estimate.
func (sv *solver) openLayoutOf(s split, pp, vpp int) (string, bool) {
	k := openLayoutKey{s, int32(pp), int32(vpp)}
	if l, ok := sv.openLayouts[k]; ok {
		return l.s, l.ok
	}
	l, ok := s.layoutFor(pp, vpp)
	if !ok {
		q := spec.Parallel{PP: pp, VPP: vpp}
		s.apply(&q)
		l, ok = splitLayout(sv.base.Model.Layers, sv.base.Model.MTPLayers, q)
	}
	if ok && sv.userLayouts == nil && !sv.layoutAny {
		// A listed layout is the user's own; any other is tested.
		sv.spend(int64(len(l)) + nodeWork)
		ok = false
		for _, form := range layoutForms(l) {
			if allows(sv.layoutUser, form) {
				l, ok = form, true
				break
			}
		}
	}
	if sv.openLayouts == nil {
		sv.openLayouts = map[openLayoutKey]layoutOf{}
	}
	sv.openLayouts[k] = layoutOf{l, ok}
	return l, ok
}

// layoutForms are the ways to write layout l: as given (parc writes
// Megatron's compact form), then with every stage spelled out.
func layoutForms(l string) []string {
	if pl, err := spec.ParsePipelineLayout(l); err == nil && pl.Plain() != l {
		return []string{l, pl.Plain()}
	}
	return []string{l}
}

// chosenModules are the module lists tried with selective recomputation
// when parc chooses them: moduleLists that apply to the model, then a
// disjunction's own lists, each kept when the user's open list allows it
// (the default, nil, is written as Megatron's ["core_attn"]).
func (sv *solver) chosenModules() [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, mods := range append(slices.Clone(moduleLists), sv.userModules...) {
		key := strings.Join(mods, ",")
		if mods == nil {
			key = "core_attn"
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if slices.Equal(mods, []string{"mlp"}) && sv.base.Model.MoE != nil && !slices.ContainsFunc(sv.userModules, func(u []string) bool { return slices.Equal(u, mods) }) {
			continue
		}
		if sv.modulesOpen && !allows(sv.modulesUser, modulesWritten(mods)) {
			continue
		}
		r := recompute{mode: "selective", modules: mods}
		if mods == nil || sv.modulesApply(r) {
			out = append(out, mods)
		}
	}
	return out
}

// modulesWritten is how a module list is written in the spec: Megatron's
// default for nil.
func modulesWritten(mods []string) []string {
	if mods == nil {
		return []string{"core_attn"}
	}
	return mods
}

// openDerived takes the user's open parallel.dp or parallel.sp and returns
// a value it allows, for decoding the spec once.
func (sv *solver) openDerived(p string, v cue.Value) (any, bool) {
	var tries []any
	if p == spec.SequenceParallelPath {
		sv.spOpen, sv.spUser = true, v
		tries = []any{true, false}
	} else {
		sv.dpOpen, sv.dpUser, sv.dpAllows = true, v, map[int]bool{}
		for _, d := range intPlaceholders {
			tries = append(tries, d)
		}
	}
	for _, x := range tries {
		if allows(v, x) {
			return x, true
		}
	}
	return nil, false
}

// dpAllowed reports whether the user's open parallel.dp allows dp (always
// when dp is not open).
func (sv *solver) dpAllowed(dp int) bool {
	if !sv.dpOpen {
		return true
	}
	ok, seen := sv.dpAllows[dp]
	if !seen {
		ok = allows(sv.dpUser, dp)
		sv.dpAllows[dp] = ok
	}
	return ok
}

// derivedValues writes the open parallel.dp and parallel.sp of a plan of
// tp, cp and pp into vals.
func (sv *solver) derivedValues(vals map[string]any, tp, cp, pp int) {
	if sv.dpOpen {
		if dp, ok := spec.Replicas(sv.world, tp, cp, pp); ok {
			vals[spec.DataParallelPath] = dp
		}
	}
	if sv.spOpen {
		sp := tp > 1
		if !allows(sv.spUser, sp) {
			sp = !sp
		}
		vals[spec.SequenceParallelPath] = sp
	}
}

// openFullRecompute takes the user's open train.recompute_method or
// train.recompute_layers and returns a value it allows, for decoding the
// spec once.
func (sv *solver) openFullRecompute(p string, v cue.Value) (any, bool) {
	if p == spec.RecomputeMethodPath {
		sv.methodOpen, sv.methodUser = true, v
		for _, m := range []string{"uniform", "block"} {
			if allows(v, m) {
				sv.methodPH = m
				return m, true
			}
		}
		return nil, false
	}
	sv.layersOpen, sv.layersUser = true, v
	for _, k := range intPlaceholders {
		if allows(v, k) {
			sv.layersPH = k
			return k, true
		}
	}
	return nil, false
}

// fullRecomputeValues writes a plan's train.recompute_method and
// train.recompute_layers into vals: the block of rl layers per chunk parc
// chose (written or open, both fields); with the fields open and full
// recomputation the leaf's other choice (every layer), else the
// placeholders (cleared after decoding).
func (sv *solver) fullRecomputeValues(vals map[string]any, rc recompute, lf *leaf) {
	if rc.layersImplied && lf.rl > 0 {
		vals[spec.RecomputeMethodPath], vals[spec.RecomputeLayersPath] = "block", int(lf.rl)
		return
	}
	if !sv.methodOpen && !sv.layersOpen {
		return
	}
	method, layers := sv.methodPH, sv.layersPH
	switch {
	case rc.mode != "full":
	case rc.layersImplied && sv.base.Train.RecomputeMethod == "block" && !sv.methodOpen:
		// Every layer with the block method: the most layers a chunk holds.
		q := spec.Parallel{PP: int(lf.pp), VPP: int(lf.vpp)}
		sv.splits[lf.split].apply(&q)
		layers = max(1, spec.LargestChunk(spec.StageLayers(sv.base.Model.Layers, q)))
	case rc.layersImplied:
		method, layers = "uniform", 1 // every layer
	case rc.method != "":
		method = rc.method
	default:
		layers = 1 // the uniform method written: Megatron's default
	}
	if sv.methodOpen {
		vals[spec.RecomputeMethodPath] = method
	}
	if sv.layersOpen {
		vals[spec.RecomputeLayersPath] = layers
	}
}
