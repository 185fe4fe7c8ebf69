package load

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"parc.dev/parc/internal/diag"
)

// CUE's evaluator finds a field among its struct's fields by a linear scan
// (adt.Vertex.Lookup) and merges errors into a list it searches for
// duplicates (errors.Append): a struct of n fields costs O(n²) to build and
// to validate. parc keeps load linear in the input by never handing CUE a
// wide struct:
//
//   - unknownBatch or more fields the schema does not have in one struct
//     literal are reported by parc itself, from the syntax tree, and blanked
//     out of the text CUE evaluates (blanks keep every other position);
//   - a struct literal with more than MaxStructFields fields (an env map of
//     30,000 entries) is refused with too-many-fields.
const (
	unknownBatch = 64
	// MaxStructFields is the most fields parc reads in one struct literal.
	MaxStructFields = 10000
	// MaxListElements is the most elements parc reads in one list literal:
	// CUE finds a list's elements by the same linear scan, so a list of n
	// costs O(n²) too (20,000 strings in data.paths took 1.7 s to vet, and
	// the 1 MiB input holds 100,000).
	MaxListElements = 10000
)

// dropUnknown parses a user's CUE file and applies the rules above. It
// returns the text to evaluate and the diagnostics found; ok is false when
// the file must not be evaluated (too-many-fields). A file that does not
// parse is returned unchanged, for CUE to report.
func (r *Result) dropUnknown(abs string, data []byte) (out []byte, diags diag.List, ok bool) {
	f, err := parser.ParseFile(abs, data)
	if err != nil {
		return data, nil, true
	}
	if d := cueNesting(r.Display[abs], data, f); d != nil {
		return data, diag.List{*d}, false
	}
	out = data
	blank := func(n ast.Node) {
		if &out[0] == &data[0] {
			out = append([]byte(nil), data...)
		}
		start, end := n.Pos().Offset(), n.End().Offset()
		// A comma right after the field goes with it ("a: 1, x: 2, b: 3").
		j := end
		for j < len(out) && (out[j] == ' ' || out[j] == '\t') {
			j++
		}
		if j < len(out) && out[j] == ',' {
			end = j + 1
		}
		for i := start; i < end && i < len(out); i++ {
			if out[i] != '\n' {
				out[i] = ' '
			}
		}
	}
	diags, ok = r.pruneWide(&f.Decls, f.Pos(), func(fld *ast.Field) { blank(fld) })
	return out, diags, ok
}

// pruneWide applies the rules above to a syntax tree (a CUE file's, or the
// one the HCL front end builds): it reports a batch of unknown fields
// itself and takes them out of their struct (calling drop for each), and
// refuses a struct wider than MaxStructFields (ok false).
func (r *Result) pruneWide(top *[]ast.Decl, topPos token.Pos, drop func(*ast.Field)) (diags diag.List, ok bool) {
	if d := r.longList(*top); d != nil {
		return diag.List{*d}, false
	}
	ok = true
	var walk func(decls *[]ast.Decl, schema cue.Value, path []string, pos token.Pos)
	walk = func(decls *[]ast.Decl, schema cue.Value, path []string, pos token.Pos) {
		var unknown []*ast.Field
		for _, d := range *decls {
			fld, isField := d.(*ast.Field)
			if !isField || fld.Constraint != token.ILLEGAL {
				continue
			}
			name, isIdent, err := ast.LabelName(fld.Label)
			if err != nil || (!isIdent && !isString(fld.Label)) || strings.HasPrefix(name, "#") || strings.HasPrefix(name, "_") {
				continue
			}
			sel := cue.Str(name)
			if !schema.Exists() {
				continue
			}
			if !schema.Allows(sel) {
				unknown = append(unknown, fld)
				continue
			}
			if st, isStruct := fld.Value.(*ast.StructLit); isStruct {
				child := schema.LookupPath(cue.MakePath(sel))
				if !child.Exists() {
					child = schema.LookupPath(cue.MakePath(sel.Optional()))
				}
				if child.Exists() && child.IncompleteKind() == cue.StructKind {
					walk(&st.Elts, child, append(append([]string(nil), path...), name), st.Lbrace)
				} else if len(st.Elts) > MaxStructFields {
					walk(&st.Elts, cue.Value{}, append(append([]string(nil), path...), name), st.Lbrace)
				}
			}
		}
		kept := len(*decls)
		if len(unknown) >= unknownBatch {
			kept -= len(unknown)
		}
		if kept > MaxStructFields {
			where := "the top level"
			if len(path) > 0 {
				where = strings.Join(path, ".")
			}
			diags.Add(diag.Diagnostic{Severity: diag.Error, Code: "too-many-fields", Path: strings.Join(path, "."), Pos: r.pos(pos),
				Message: fmt.Sprintf("%s has %d fields; parc reads at most %d fields in one struct", where, kept, MaxStructFields),
				Hint:    "a spec has tens of fields per section: check that this is the file you meant"})
			ok = false
			return
		}
		if len(unknown) < unknownBatch {
			return // few: CUE reports them, with everything else
		}
		parent := strings.Join(path, ".")
		gone := make(map[*ast.Field]bool, len(unknown))
		for _, fld := range unknown {
			name, _, _ := ast.LabelName(fld.Label)
			full := name
			if parent != "" {
				full = parent + "." + name
			}
			diags.Add(r.unknownField(full, parent, name, r.pos(fld.Pos())))
			drop(fld)
			gone[fld] = true
		}
		*decls = slices.DeleteFunc(*decls, func(d ast.Decl) bool { f, isField := d.(*ast.Field); return isField && gone[f] })
	}
	walk(top, r.Schema, nil, topPos)
	return diags, ok
}

// longList reports the first list literal with more than MaxListElements
// elements, before CUE evaluates it.
func (r *Result) longList(decls []ast.Decl) *diag.Diagnostic {
	var found *ast.ListLit
	for _, d := range decls {
		ast.Walk(d, func(n ast.Node) bool {
			if found != nil {
				return false
			}
			if l, isList := n.(*ast.ListLit); isList && len(l.Elts) > MaxListElements {
				found = l
				return false
			}
			return true
		}, nil)
		if found != nil {
			return &diag.Diagnostic{Severity: diag.Error, Code: "too-many-elements", Pos: r.pos(found.Lbrack),
				Message: fmt.Sprintf("this list has %d elements; parc reads at most %d elements in one list", len(found.Elts), MaxListElements),
				Hint:    "a spec's lists hold a few to a few thousand entries (data paths, extra arguments): check that this is the file you meant"}
		}
	}
	return nil
}

func isString(l ast.Label) bool {
	lit, ok := l.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING
}

// sections are the top-level sections a spec must have, and the preset
// package a user picks one from ("" when there are no presets).
var sections = []struct{ name, presets string }{
	{"model", "models"}, {"cluster", "clusters"}, {"train", ""},
}

// missingSection is the one error for a top-level section the spec does not
// have at all (instead of CUE's "imported and not used" for its preset
// package, or one missing-field per required field at 1:1).
func (r *Result) missingSection(name, presets string) diag.Diagnostic {
	file := ""
	if len(r.Files) > 0 {
		file = r.Display[r.Files[0]]
	}
	d := diag.Diagnostic{Severity: diag.Error, Code: "missing-section", Path: name, Pos: diag.Pos{File: file, Line: 1, Column: 1},
		Message: fmt.Sprintf("the spec has no %s section", name)}
	if len(r.Files) > 0 && strings.HasSuffix(r.Files[0], ".hcl") {
		// HCL cannot import presets: name the block and a preset's figures.
		d.Hint = hclSectionHint[name]
		return d
	}
	switch presets {
	case "":
		d.Hint = "add train: {seq_length: 4096, micro_batch: 1, global_batch: 64, iters: 1000} (the hint of each field says what it takes)"
	default:
		names := Presets(presets)
		ex := "…"
		if len(names) > 0 {
			ex = names[0]
		}
		suffix := ""
		if presets == "clusters" {
			// A cluster preset leaves the node count to the spec: the
			// suggestion must be complete to pass.
			if slices.Contains(names, "dgx_h100") {
				ex = "dgx_h100"
			}
			suffix = " & {nodes: 1}"
		}
		d.Hint = fmt.Sprintf(`add %s: %s.%s%s (import "%s/%s"), or write the %s out field by field; the presets: %s`,
			name, presets, ex, suffix, StdlibImportPath, presets, name, strings.Join(names, ", "))
	}
	return d
}

// hclSectionHint is missing-section's hint in an HCL spec: the block to
// write, with the figures of a stdlib preset (TestMissingSectionHCLHintPasses
// writes them out and loads the spec).
var hclSectionHint = map[string]string{
	"model": `add a model block; HCL cannot import presets, so write the fields of one from stdlib/models, ` +
		`e.g. llama3_8b: layers = 32, hidden = 4096, ffn_hidden = 14336, heads = 32, query_groups = 8, vocab = 128256, ` +
		`activation = "swiglu", normalization = "rmsnorm", position_embedding = "rope", rotary_base = 500000, tie_embeddings = false, bias = false`,
	"cluster": `add a cluster block; HCL cannot import presets, so write the figures of one from stdlib/clusters, ` +
		`e.g. dgx_h100: nodes = 1, gpus_per_node = 8, nvlink_gbps = 450, network_gbps = 50, ` +
		`and a gpu block with name = "H100-SXM5-80GB", memory_gib = 80, bf16_tflops = 989`,
	"train": `add a train block: seq_length = 4096, micro_batch = 1, global_batch = 64, iters = 1000 (the hint of each field says what it takes)`,
}

// topLevelFields lists the labels of a CUE file's top-level fields (nil when
// it does not parse).
func topLevelFields(name string, data []byte) map[string]bool {
	f, err := parser.ParseFile(name, data)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		if fld, ok := d.(*ast.Field); ok {
			if n, _, err := ast.LabelName(fld.Label); err == nil {
				out[n] = true
			}
		}
	}
	return out
}
