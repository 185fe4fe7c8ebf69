package schema

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
)

// Field is one row of the spec reference: a dotted path, its type and
// bounds, its default and the schema's comment on it.
type Field struct {
	Path, Type, Default, Doc string
	Optional                 bool
}

// Reference lists every field of #Plan in schema order, for the README's
// spec reference (generated, so it cannot drift from the schema).
func Reference() ([]Field, error) {
	f, err := parser.ParseFile(Filename, Source, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	defs := map[string]*ast.StructLit{}
	for _, d := range f.Decls {
		if fld, ok := d.(*ast.Field); ok {
			name, _, _ := ast.LabelName(fld.Label)
			if st, ok := fld.Value.(*ast.StructLit); ok {
				defs[name] = st
			}
		}
	}
	plan, ok := defs["#Plan"]
	if !ok {
		return nil, fmt.Errorf("schema has no #Plan")
	}
	ctx := cuecontext.New()
	val := ctx.CompileBytes(Source, cue.Filename(Filename)).LookupPath(cue.ParsePath("#Plan"))
	var out []Field
	var walk func(st *ast.StructLit, prefix string) error
	walk = func(st *ast.StructLit, prefix string) error {
		for _, e := range st.Elts {
			fld, ok := e.(*ast.Field)
			if !ok {
				continue
			}
			name, _, err := ast.LabelName(fld.Label)
			if err != nil {
				// pattern constraints such as [string]: string
				continue
			}
			path := name
			if prefix != "" {
				path = prefix + "." + name
			}
			value := fld.Value
			if id, ok := value.(*ast.Ident); ok && strings.HasPrefix(id.Name, "#") && defs[id.Name] != nil {
				if id.Name != "#Count" {
					out = append(out, Field{Path: path, Type: "struct", Optional: fld.Constraint != 0, Doc: comment(fld)})
					if err := walk(defs[id.Name], path); err != nil {
						return err
					}
					continue
				}
			}
			if sub, ok := value.(*ast.StructLit); ok {
				out = append(out, Field{Path: path, Type: "struct", Optional: fld.Constraint != 0, Doc: comment(fld)})
				if err := walk(sub, path); err != nil {
					return err
				}
				continue
			}
			typ, def := describe(value, val.LookupPath(cue.ParsePath(path)))
			out = append(out, Field{Path: path, Type: typ, Default: def, Optional: fld.Constraint != 0, Doc: comment(fld)})
		}
		return nil
	}
	if err := walk(plan, ""); err != nil {
		return nil, err
	}
	return out, nil
}

func comment(f *ast.Field) string {
	var parts []string
	for _, c := range ast.Comments(f) {
		parts = append(parts, strings.TrimSpace(c.Text()))
	}
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}

// describe renders a field's constraint without its default, and the default.
// A default computed from other fields, written in parentheses
// (`*((distributed_optimizer || fsdp) && overlap_grad_reduce)`),
// is shown as its expression, not as the value it takes in the schema alone.
func describe(expr ast.Expr, v cue.Value) (typ, def string) {
	if d, ok := v.Default(); ok && d.IsConcrete() {
		def = fmt.Sprint(d)
	}
	var alts []string
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		if b, ok := e.(*ast.BinaryExpr); ok && b.Op.String() == "|" {
			walk(b.X)
			walk(b.Y)
			return
		}
		if u, ok := e.(*ast.UnaryExpr); ok && u.Op.String() == "*" {
			_, computed := u.X.(*ast.ParenExpr)
			if def == "" || computed {
				b, _ := format.Node(u.X)
				def = string(b)
			}
			// A default string is one of an enum's values; a default number
			// is already inside the bounds beside it.
			if lit, ok := u.X.(*ast.BasicLit); !ok || lit.Kind.String() != "STRING" {
				return
			}
			e = u.X
		}
		b, _ := format.Node(e)
		alts = append(alts, string(b))
	}
	walk(expr)
	if slices.Contains(alts, "string") {
		// `string | *"model"`: the default is not an enum value.
		alts = slices.DeleteFunc(alts, func(a string) bool { return strings.HasPrefix(a, `"`) })
	}
	typ = strings.Join(alts, " \\| ")
	typ = strings.ReplaceAll(typ, "#Count", "int & >=1")
	return typ, def
}
