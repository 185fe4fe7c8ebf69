package load

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"parc.dev/parc/stdlib"
)

// formatSchemaConstraint describes a schema value in words a user reads:
// `one of "a", "b"` for an enum, the bounds otherwise, and the default
// after them ("a non-negative integer; default 1234").
func formatSchemaConstraint(v cue.Value) string {
	bounds, def := schemaBounds(v)
	if def != "" && bounds != "" {
		return bounds + "; default " + def
	}
	return bounds
}

// schemaBounds describes what a schema value allows, without its default,
// and names the default apart ("" when none).
func schemaBounds(v cue.Value) (bounds, def string) {
	if d, ok := v.Default(); ok && d.IsConcrete() && d.Kind() != cue.StructKind && d.Kind() != cue.ListKind {
		def = fmt.Sprint(d)
	}
	op, args := v.Expr()
	switch {
	case op == cue.OrOp:
		var alts []string
		allConcrete := true
		for _, a := range args {
			if a.IsConcrete() && a.Kind() != cue.StructKind && a.Kind() != cue.ListKind {
				alts = append(alts, fmt.Sprint(a))
			} else {
				allConcrete = false
			}
		}
		if allConcrete && len(alts) > 0 {
			return "one of " + strings.Join(alts, ", "), def
		}
		var parts []string
		for _, a := range args {
			if a.IsConcrete() {
				continue
			}
			parts = append(parts, describeBound(fmt.Sprint(a)))
		}
		return strings.Join(parts, " or "), def
	case op == cue.NoOp && len(args) == 1 && def != "":
		// A field with a default (`int & >=0 | *1234`): CUE gives the
		// constraint alone as the one argument.
		return describeBound(fmt.Sprint(args[0])), def
	}
	return describeBound(fmt.Sprint(v)), def
}

var (
	intRange  = regexp.MustCompile(`^u?int & >=(-?\d+) & <=(-?\d+)$`)
	uintUpTo  = regexp.MustCompile(`^uint & <=(\d+)$`)
	numRange  = regexp.MustCompile(`^(?:number & )?(>=?)(-?[0-9.eE+-]+) & (<=?)(-?[0-9.eE+-]+)$`)
	numBound  = regexp.MustCompile(`^(?:number & )?(>=?|<=?)(-?[0-9.eE+-]+)$`)
	relations = map[string]string{">=": "at least", ">": "greater than", "<=": "at most", "<": "less than"}
)

func describeBound(s string) string {
	s = strings.ReplaceAll(s, "*", "")
	if m := intRange.FindStringSubmatch(s); m != nil {
		return fmt.Sprintf("an integer from %s to %s", m[1], m[2])
	}
	if m := uintUpTo.FindStringSubmatch(s); m != nil {
		return fmt.Sprintf("an integer from 0 to %s", m[1])
	}
	switch s {
	case "int & >=1", "uint & >=1":
		return "a positive integer (>= 1)"
	case "int & >=0", "uint":
		return "a non-negative integer"
	case "int":
		return "an integer"
	case "number & >0", ">0":
		return "a positive number"
	case "number & >=0", ">=0":
		return "a non-negative number"
	case "number":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	if m := numRange.FindStringSubmatch(s); m != nil {
		return fmt.Sprintf("a number %s %s and %s %s", relations[m[1]], m[2], relations[m[3]], m[4])
	}
	if m := numBound.FindStringSubmatch(s); m != nil {
		return fmt.Sprintf("a number %s %s", relations[m[1]], m[2])
	}
	return s
}

// languageVersion finds `language: version: "..."` in a module file.
func languageVersion(f *ast.File) (string, token.Pos) {
	for _, d := range f.Decls {
		fld, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		if name, _, _ := ast.LabelName(fld.Label); name != "language" {
			continue
		}
		st, ok := fld.Value.(*ast.StructLit)
		if !ok {
			continue
		}
		for _, e := range st.Elts {
			vf, ok := e.(*ast.Field)
			if !ok {
				continue
			}
			if name, _, _ := ast.LabelName(vf.Label); name != "version" {
				continue
			}
			if lit, ok := vf.Value.(*ast.BasicLit); ok {
				return strings.Trim(lit.Value, `"`), lit.Pos()
			}
		}
	}
	return "", token.NoPos
}

// Presets lists the preset names of a stdlib package ("models", "clusters").
func Presets(pkg string) []string {
	var out []string
	_ = fs.WalkDir(stdlib.FS, pkg, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || path.Ext(p) != ".cue" {
			return nil
		}
		b, err := stdlib.FS.ReadFile(p)
		if err != nil {
			return nil
		}
		f, err := parser.ParseFile(p, b)
		if err != nil {
			return nil
		}
		for _, d := range f.Decls {
			if fld, ok := d.(*ast.Field); ok {
				if name, _, err := ast.LabelName(fld.Label); err == nil && !strings.HasPrefix(name, "#") && !strings.HasPrefix(name, "_") {
					out = append(out, name)
				}
			}
		}
		return nil
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// presetHint suggests a preset for an undefined reference such as models.llama9.
func (r *Result) presetHint(_ error, args []any) string {
	name := ""
	for _, a := range args {
		if s, ok := a.(string); ok {
			name = s
		} else {
			name = strings.Trim(fmt.Sprint(a), `"`)
		}
	}
	var hints []string
	for _, pkg := range []string{"models", "clusters"} {
		names := Presets(pkg)
		// The one preset the name begins (clusters.dgx_a100 for
		// dgx_a100_80g) before the nearest spelling (dgx_h100).
		var longer []string
		for _, n := range names {
			if name != "" && strings.HasPrefix(n, name+"_") {
				longer = append(longer, n)
			}
		}
		if len(longer) == 1 {
			hints = append(hints, fmt.Sprintf("did you mean %s.%s?", pkg, longer[0]))
		} else if s := suggest(name, names); s != "" {
			hints = append(hints, fmt.Sprintf("did you mean %s.%s?", pkg, s))
		}
	}
	hints = append(hints, "models: "+strings.Join(Presets("models"), ", "))
	hints = append(hints, "clusters: "+strings.Join(Presets("clusters"), ", "))
	return strings.Join(hints, "; ")
}
