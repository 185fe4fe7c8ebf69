package load

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"parc.dev/parc/internal/diag"
)

// fromHCL parses an HCL spec and converts it to a CUE value whose every node
// carries its HCL position, so the schema's errors cite plan.hcl:LINE:COL
// exactly as they cite a CUE file. Blocks become structs (`model { ... }`),
// attributes become fields; an object attribute (`env = { ... }`) is a struct.
func fromHCL(ctx *cue.Context, display, abs string, src []byte) (*cue.Value, diag.List) {
	st, diags := convertHCL(display, abs, src)
	if st == nil || diags.HasErrors() {
		return nil, diags
	}
	v := ctx.BuildExpr(st, cue.Filename(abs))
	if err := v.Err(); err != nil {
		return nil, diags
	}
	return &v, diags
}

// convertHCL parses HCL and converts it to a CUE struct literal whose nodes
// carry positions in a token.File named abs. It returns nil on a syntax error.
func convertHCL(display, abs string, src []byte) (*ast.StructLit, diag.List) {
	var diags diag.List
	f, hdiags := hclsyntax.ParseConfig(src, display, hcl.InitialPos)
	diags = append(diags, fromHCLDiags(hdiags)...)
	if hdiags.HasErrors() || f == nil {
		return nil, diags
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		diags.Errorf(diag.Pos{File: display, Line: 1, Column: 1}, "", "syntax", "", "not a native HCL syntax body")
		return nil, diags
	}
	tf := token.NewFile(abs, -1, len(src))
	tf.SetLinesForContent(src)
	c := &hclConverter{file: tf, display: display}
	st := c.body(body, "")
	return st, append(diags, c.diags...)
}

type hclConverter struct {
	file    *token.File
	display string
	diags   diag.List
}

func (c *hclConverter) pos(p hcl.Pos) token.Pos { return c.file.Pos(p.Byte, token.NoRelPos) }

func (c *hclConverter) dpos(p hcl.Pos) diag.Pos {
	return diag.Pos{File: c.display, Line: p.Line, Column: p.Column}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// body converts attributes and blocks, in source order.
func (c *hclConverter) body(b *hclsyntax.Body, prefix string) *ast.StructLit {
	type item struct {
		offset int
		field  *ast.Field
	}
	var items []item
	attrs := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		attrs = append(attrs, a)
	}
	slices.SortFunc(attrs, func(x, y *hclsyntax.Attribute) int { return x.NameRange.Start.Byte - y.NameRange.Start.Byte })
	for _, a := range attrs {
		path := join(prefix, a.Name)
		val, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			for _, d := range diags {
				pos := a.Expr.Range().Start
				if d.Subject != nil {
					pos = d.Subject.Start
				}
				c.diags.Errorf(c.dpos(pos), path, "hcl-expression",
					"HCL specs take literal values: strings, numbers, bools, lists and objects (no variables or functions)",
					"%s: %s", d.Summary, d.Detail)
			}
			continue
		}
		expr := c.value(val, a.Expr, path)
		if expr == nil {
			continue
		}
		label := ast.NewIdent(a.Name)
		ast.SetPos(label, c.pos(a.NameRange.Start))
		fld := &ast.Field{Label: label, Value: expr}
		ast.SetPos(fld, c.pos(a.NameRange.Start))
		items = append(items, item{a.NameRange.Start.Byte, fld})
	}
	seen := map[string]hcl.Range{}
	for _, blk := range b.Blocks {
		path := join(prefix, blk.Type)
		if len(blk.Labels) > 0 {
			c.diags.Errorf(c.dpos(blk.LabelRanges[0].Start), path, "hcl-block-label",
				fmt.Sprintf("write `%s {` with no label", blk.Type), "block %s takes no labels, got %q", blk.Type, blk.Labels)
			continue
		}
		if first, dup := seen[blk.Type]; dup {
			c.diags.Errorf(c.dpos(blk.TypeRange.Start), path, "hcl-duplicate-block",
				"merge the two blocks into one", "block %s is already defined at line %d", blk.Type, first.Start.Line)
			continue
		}
		if _, clash := b.Attributes[blk.Type]; clash {
			c.diags.Errorf(c.dpos(blk.TypeRange.Start), path, "hcl-duplicate-block",
				"write it either as a block or as an attribute", "%s is both an attribute and a block", blk.Type)
			continue
		}
		seen[blk.Type] = blk.TypeRange
		st := c.body(blk.Body, path)
		ast.SetPos(st, c.pos(blk.OpenBraceRange.Start))
		label := ast.NewIdent(blk.Type)
		ast.SetPos(label, c.pos(blk.TypeRange.Start))
		fld := &ast.Field{Label: label, Value: st}
		ast.SetPos(fld, c.pos(blk.TypeRange.Start))
		items = append(items, item{blk.TypeRange.Start.Byte, fld})
	}
	slices.SortFunc(items, func(x, y item) int { return x.offset - y.offset })
	st := &ast.StructLit{}
	for _, it := range items {
		st.Elts = append(st.Elts, it.field)
	}
	return st
}

// value converts an evaluated HCL value, using the syntax tree for positions
// where it has one (list elements and object items).
func (c *hclConverter) value(v cty.Value, expr hclsyntax.Expression, path string) ast.Expr {
	start := expr.Range().Start
	var out ast.Expr
	switch {
	case v.IsNull():
		out = ast.NewNull()
	case !v.IsKnown():
		c.diags.Errorf(c.dpos(start), path, "hcl-expression", "", "value of %s is not known", path)
		return nil
	case v.Type() == cty.String:
		out = &ast.BasicLit{Kind: token.STRING, Value: literal.String.Quote(v.AsString())}
	case v.Type() == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			i, _ := bf.Int(new(big.Int))
			out = &ast.BasicLit{Kind: token.INT, Value: i.String()}
		} else {
			out = &ast.BasicLit{Kind: token.FLOAT, Value: bf.Text('g', -1)}
		}
	case v.Type() == cty.Bool:
		out = ast.NewBool(v.True())
	case v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType():
		var elems []hclsyntax.Expression
		if tc, ok := expr.(*hclsyntax.TupleConsExpr); ok {
			elems = tc.Exprs
		}
		list := &ast.ListLit{}
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, ev := it.Element()
			var ex hclsyntax.Expression = expr
			if i < len(elems) {
				ex = elems[i]
			}
			e := c.value(ev, ex, fmt.Sprintf("%s[%d]", path, i))
			if e == nil {
				return nil
			}
			list.Elts = append(list.Elts, e)
		}
		out = list
	case v.Type().IsObjectType() || v.Type().IsMapType():
		items := map[string]hclsyntax.Expression{}
		keyPos := map[string]hcl.Pos{}
		if oc, ok := expr.(*hclsyntax.ObjectConsExpr); ok {
			for _, item := range oc.Items {
				if kv, diags := item.KeyExpr.Value(nil); !diags.HasErrors() && kv.Type() == cty.String {
					items[kv.AsString()] = item.ValueExpr
					keyPos[kv.AsString()] = item.KeyExpr.Range().Start
				}
			}
		}
		st := &ast.StructLit{}
		var keys []string
		for it := v.ElementIterator(); it.Next(); {
			k, _ := it.Element()
			keys = append(keys, k.AsString())
		}
		slices.SortFunc(keys, func(a, b string) int {
			pa, oka := keyPos[a]
			pb, okb := keyPos[b]
			if oka && okb {
				return pa.Byte - pb.Byte
			}
			return strings.Compare(a, b)
		})
		for _, k := range keys {
			var ex hclsyntax.Expression = expr
			if e, ok := items[k]; ok {
				ex = e
			}
			e := c.value(v.GetAttr(k), ex, join(path, k))
			if e == nil {
				return nil
			}
			label := ast.NewString(k)
			if p, ok := keyPos[k]; ok {
				ast.SetPos(label, c.pos(p))
			} else {
				ast.SetPos(label, c.pos(start))
			}
			fld := &ast.Field{Label: label, Value: e}
			ast.SetPos(fld, label.Pos())
			st.Elts = append(st.Elts, fld)
		}
		out = st
	default:
		c.diags.Errorf(c.dpos(start), path, "hcl-expression", "", "unsupported HCL value of type %s", v.Type().FriendlyName())
		return nil
	}
	ast.SetPos(out, c.pos(start))
	return out
}

// fromHCLDiags maps HCL's own (syntax) diagnostics.
func fromHCLDiags(ds hcl.Diagnostics) diag.List {
	var out diag.List
	for _, d := range ds {
		sev := diag.Error
		if d.Severity == hcl.DiagWarning {
			sev = diag.Warning
		}
		var pos diag.Pos
		if d.Subject != nil {
			pos = diag.Pos{File: d.Subject.Filename, Line: d.Subject.Start.Line, Column: d.Subject.Start.Column}
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		out.Add(diag.Diagnostic{Severity: sev, Code: "syntax", Message: msg, Pos: pos})
	}
	return out
}
