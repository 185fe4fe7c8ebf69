package megatron

import (
	"regexp"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
	"cuelang.org/go/encoding/yaml"

	mg "parc.dev/parc/internal/targets/megatron"
)

// readRecipe reads a Megatron-LM training recipe: a YAML file whose ARGS
// map Megatron's options, written as their names with underscores
// (num_layers: 48 for --num-layers 48), to their values, and whose ENV_VARS
// give the run's environment (examples/moe_recipes on Megatron-LM's dev
// branch, e5ad09802d: DEPENDENCIES, ENV_VARS, ARGS), or one of its
// functional tests' configs, whose MODEL_ARGS write the options as on the
// command line ("--num-layers": 32; tests/functional_tests/test_cases/*/
// model_config.yaml at d98e8a64). The arguments are
// what those keys say on a command line, in the file's order, each word at
// its key's or value's place: true is the option alone, a list its values
// after it, false and null leave an option that takes no value out (its
// default), a scalar is the option and the value as written (split at its
// blanks for an option that takes several values). ok is false
// when the input is not such a file (no top-level ARGS or MODEL_ARGS
// mapping).
func readRecipe(src string) (Command, bool) {
	f, err := yaml.Extract("recipe.yaml", src)
	if err != nil || f == nil {
		return Command{}, false
	}
	var args, env *ast.StructLit
	for _, d := range f.Decls {
		fd, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		name, _, _ := ast.LabelName(fd.Label)
		s, _ := fd.Value.(*ast.StructLit)
		switch name {
		case "ARGS", "MODEL_ARGS":
			args = s
		case "ENV_VARS":
			env = s
		}
	}
	if args == nil {
		return Command{}, false
	}
	var c Command
	at := func(n ast.Node) (int, int) {
		p := n.Pos()
		return p.Line(), p.Column()
	}
	for _, d := range args.Elts {
		fd, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		key, _, _ := ast.LabelName(fd.Label)
		opt := key
		if !strings.HasPrefix(key, "-") {
			opt = "--" + strings.ReplaceAll(key, "_", "-")
		}
		line, col := at(fd.Label)
		word := Word{Text: opt, Line: line, Col: col}
		var vals []ast.Expr
		switch v := fd.Value.(type) {
		case *ast.ListLit:
			vals = v.Elts
		case *ast.BasicLit:
			switch {
			case v.Kind == token.TRUE && !mg.Options[opt].TakesValues():
				c.Args = append(c.Args, word)
				continue
			case v.Kind == token.FALSE && !mg.Options[opt].TakesValues(), v.Kind == token.NULL:
				continue
			}
			vals = []ast.Expr{v}
		default:
			vals = []ast.Expr{fd.Value}
		}
		c.Args = append(c.Args, word)
		many := mg.Options[opt].Nargs == "+" || mg.Options[opt].Nargs == "*"
		for _, v := range vals {
			l, k := at(v)
			text := scalarText(v)
			if many && len(vals) == 1 && strings.ContainsAny(text, " \t") {
				// recompute_modules: moe_act layernorm: the values of an
				// option that takes several, as a command line splits them.
				for _, f := range strings.Fields(text) {
					c.Args = append(c.Args, Word{Text: f, Line: l, Col: k})
				}
				continue
			}
			c.Args = append(c.Args, Word{Text: text, Line: l, Col: k})
		}
	}
	// References the file's runner fills in (${LOAD_PATH}) stay as written.
	for _, w := range c.Args {
		if ref := refRE.FindString(w.Text); ref != "" {
			c.Notes = append(c.Notes, Note{Line: w.Line, Col: w.Col, Code: "import-unresolved", Raw: ref,
				Msg: ref + " is not assigned in the input (a recipe's runner fills it in; the environment is not read); kept as written"})
		}
	}
	if env != nil {
		for _, d := range env.Elts {
			fd, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			name, _, _ := ast.LabelName(fd.Label)
			line, col := at(fd.Label)
			c.Env = append(c.Env, EnvVar{Name: name, Value: scalarText(fd.Value), Line: line, Col: col})
		}
	}
	return c, true
}

// refRE is a shell-style reference in a recipe's value.
var refRE = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)

// scalarText is a YAML value as a command line would give it: a string
// unquoted, a number or boolean as written, anything else in CUE's syntax.
func scalarText(e ast.Expr) string {
	if b, ok := e.(*ast.BasicLit); ok {
		if b.Kind == token.STRING {
			if s, err := literal.Unquote(b.Value); err == nil {
				return s
			}
		}
		return b.Value
	}
	if n, ok := e.(*ast.Ident); ok {
		return n.Name
	}
	return ""
}
