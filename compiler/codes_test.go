package compiler

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the diagnostic-code table in README.md")

var codeRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// emittedCodes scans parc's non-test source for every diagnostic code it can
// emit: the code argument of Errorf/Warnf and the checker's report, a Code:
// field of a diag.Diagnostic literal, and Code* constants.
func emittedCodes(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, root := range []string{".", "../internal"} {
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			lit := func(x ast.Expr) {
				if bl, ok := x.(*ast.BasicLit); ok && bl.Kind == token.STRING {
					if s, err := strconv.Unquote(bl.Value); err == nil && codeRE.MatchString(s) {
						out[s] = fset.Position(bl.Pos()).String()
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					switch sel.Sel.Name {
					case "Errorf", "Warnf":
						if len(n.Args) > 2 {
							lit(n.Args[2])
						}
					case "report":
						if len(n.Args) > 0 {
							lit(n.Args[0])
						}
					}
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" {
						lit(n.Value)
					}
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if strings.HasPrefix(name.Name, "Code") && i < len(n.Values) {
							lit(n.Values[i])
						}
					}
				}
				return true
			})
			return nil
		})
		require.NoError(t, err)
	}
	return out
}

// Every code parc emits is registered (so it is in the README), and every
// registered code is emitted somewhere.
func TestCodeRegistryIsComplete(t *testing.T) {
	registered := map[string]bool{}
	for _, c := range Codes() {
		assert.False(t, registered[c.Code], "code %s registered twice", c.Code)
		registered[c.Code] = true
		assert.NotEmpty(t, c.Meaning, c.Code)
		assert.NotEmpty(t, c.Fix, c.Code)
	}
	emitted := emittedCodes(t)
	require.Greater(t, len(emitted), 50, "the scan finds the codes")
	for _, code := range slices.Sorted(maps.Keys(emitted)) {
		assert.True(t, registered[code], "%s emits %q, which no Codes list registers", emitted[code], code)
	}
	for code := range registered {
		_, ok := emitted[code]
		assert.True(t, ok, "registered code %q is never emitted", code)
	}
}

const codesBegin, codesEnd = "<!-- codes:begin -->", "<!-- codes:end -->"

func codesTable() string {
	var b strings.Builder
	b.WriteString("| code | severity | Megatron rule | meaning | fix |\n|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, c := range Codes() {
		rule := c.Rule
		if rule == "" {
			rule = "–"
		}
		b.WriteString("| `" + c.Code + "` | " + c.Severity.String() + " | " + rule + " | " + cell(c.Meaning) + " | " + cell(c.Fix) + " |\n")
	}
	return b.String()
}

// README.md's code table is generated from Codes(); `go test ./compiler
// -run TestREADMECodes -update` rewrites it.
func TestREADMECodes(t *testing.T) {
	path := filepath.Join("..", "README.md")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(data)
	i, j := strings.Index(text, codesBegin), strings.Index(text, codesEnd)
	require.True(t, i >= 0 && j > i, "README.md has no codes block")
	want := text[:i+len(codesBegin)] + "\n" + codesTable() + text[j:]
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	require.Equal(t, want, text, "README.md's code table is out of date: go test ./compiler -run TestREADMECodes -update")
}
