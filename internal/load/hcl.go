package load

import (
	"fmt"
	"math"
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
//
// Like a CUE file, the converted tree never reaches CUE with a wide struct
// (see pruneWide): a batch of unknown attributes or blocks is reported here
// and left out, so load stays linear in the number of fields.
func fromHCL(ctx *cue.Context, display, abs string, src []byte, r *Result) (*cue.Value, map[string]diag.Pos, diag.List) {
	st, at, diags := convertHCLAt(display, abs, src)
	if st == nil || diags.HasErrors() {
		return nil, nil, diags
	}
	if r != nil {
		top := token.NoPos // the top level has no brace: its first field stands for it
		if len(st.Elts) > 0 {
			top = st.Elts[0].Pos()
		}
		pre, ok := r.pruneWide(&st.Elts, top, func(*ast.Field) {})
		diags = append(diags, pre...)
		if !ok {
			return nil, nil, diags
		}
	}
	v := ctx.BuildExpr(st, cue.Filename(abs))
	if err := v.Err(); err != nil {
		diags.Errorf(diag.Pos{File: display, Line: 1, Column: 1}, "", "syntax", "", "%v", err)
		return nil, nil, diags
	}
	return &v, at, diags
}

// convertHCL parses HCL and converts it to a CUE struct literal whose nodes
// carry positions in a token.File named abs. It returns nil on a syntax error.
func convertHCL(display, abs string, src []byte) (*ast.StructLit, diag.List) {
	st, _, diags := convertHCLAt(display, abs, src)
	return st, diags
}

// convertHCLAt is convertHCL, also returning the position of every attribute
// and block by its dotted path: CUE places the first field of a struct at
// the struct's brace, and an HCL diagnostic must name the attribute (as a
// CUE one names the field).
func convertHCLAt(display, abs string, src []byte) (*ast.StructLit, map[string]diag.Pos, diag.List) {
	var diags diag.List
	if d := hclNesting(display, src); d != nil {
		diags.Add(*d)
		return nil, nil, diags
	}
	f, hdiags := hclsyntax.ParseConfig(src, display, hcl.InitialPos)
	diags = append(diags, fromHCLDiags(hdiags)...)
	if hdiags.HasErrors() || f == nil {
		return nil, nil, diags
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		diags.Errorf(diag.Pos{File: display, Line: 1, Column: 1}, "", "syntax", "", "not a native HCL syntax body")
		return nil, nil, diags
	}
	tf := token.NewFile(abs, -1, len(src))
	tf.SetLinesForContent(src)
	c := &hclConverter{file: tf, display: display, at: map[string]diag.Pos{}, src: src}
	st := c.body(body, "")
	return st, c.at, append(diags, c.diags...)
}

type hclConverter struct {
	src     []byte
	file    *token.File
	display string
	diags   diag.List
	at      map[string]diag.Pos
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
		c.at[path] = c.dpos(a.NameRange.Start)
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
		c.at[path] = c.dpos(blk.TypeRange.Start)
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
		if bf.IsInf() {
			// 1/0 in HCL arithmetic: no schema field takes it, and CUE
			// has no literal for it.
			c.diags.Errorf(c.dpos(start), path, "number-too-large", "write a finite number",
				"%s = %s is not a finite number: parc holds numbers up to %g", path, bf.Text('g', 6), math.MaxFloat64)
			return nil
		}
		if bf.IsInt() && !c.floatLiteral(expr) {
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

// floatLiteral reports whether expr is a number written with a fraction or
// an exponent (1e400, 2.0): it stays a float, as the same text in CUE.
func (c *hclConverter) floatLiteral(expr hclsyntax.Expression) bool {
	if _, ok := expr.(*hclsyntax.LiteralValueExpr); !ok {
		return false
	}
	r := expr.Range()
	if r.Start.Byte < 0 || r.End.Byte > len(c.src) || r.Start.Byte > r.End.Byte {
		return false
	}
	return strings.ContainsAny(string(c.src[r.Start.Byte:r.End.Byte]), ".eE")
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
		out.Add(diag.Diagnostic{Severity: sev, Code: "syntax", Message: msg, Pos: pos, Hint: hclSyntaxHint(d)})
	}
	return out
}

// hclSyntaxHint says how to write what an HCL syntax error is about: the
// parser's summary names the construct it expected.
func hclSyntaxHint(d *hcl.Diagnostic) string {
	sum := strings.ToLower(d.Summary + " " + d.Detail)
	switch {
	case strings.Contains(sum, "argument or block definition required"), strings.Contains(sum, "equals sign"):
		return "set a field as `name = value` and open a section as `name {` ... `}` (HCL uses =, not :)"
	case strings.Contains(sum, "invalid expression"), strings.Contains(sum, "missing expression"):
		return `give the value after =: a number (8), a string ("H100"), true/false, a list ([1, 2]) or an object ({ A = "b" })`
	case strings.Contains(sum, "multi-line string"):
		return `close the string with " on the same line; write a line break inside it as \n`
	case strings.Contains(sum, "unclosed"), strings.Contains(sum, "missing newline"), strings.Contains(sum, "unterminated"):
		return "close every { with } and every \" with \"; one attribute per line"
	case strings.Contains(sum, "invalid character"), strings.Contains(sum, "invalid multi-line"):
		return "HCL takes letters, digits, _ and - in names, and values as numbers, \"strings\", true/false, [lists] and { objects }"
	}
	return "see the HCL example in the README: blocks `model { ... }`, attributes `layers = 32`"
}
