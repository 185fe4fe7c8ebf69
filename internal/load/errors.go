package load

import (
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	"github.com/agext/levenshtein"
	"golang.org/x/mod/semver"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/schema"
)

// isUserFile reports whether a CUE position is in one of the user's files
// rather than the embedded schema or preset library.
func (r *Result) isUserFile(name string) bool {
	if name == "" || name == schema.Filename {
		return false
	}
	return !strings.Contains(filepath.ToSlash(name), "/cue.mod/pkg/"+StdlibImportPath+"/")
}

func (r *Result) pos(p token.Pos) diag.Pos {
	if !p.IsValid() {
		return diag.Pos{}
	}
	name := p.Filename()
	if d, ok := r.Display[name]; ok {
		name = d
	}
	return diag.Pos{File: name, Line: p.Line(), Column: p.Column()}
}

// userPos picks the first of ps in a user file.
func (r *Result) userPos(ps []token.Pos) (diag.Pos, bool) {
	for _, p := range ps {
		if p.IsValid() && r.isUserFile(p.Filename()) {
			return r.pos(p), true
		}
	}
	return diag.Pos{}, false
}

// fromCUEError turns every error in err into a diagnostic at the user's text.
func fromCUEError(err error, r *Result) diag.List {
	errs := cueerrors.Errors(err)
	// A value outside an enum comes as "N errors in empty disjunction"
	// followed by one conflict per alternative: report it once.
	disjunction := map[string]bool{}
	for _, e := range errs {
		if f, _ := e.Msg(); strings.Contains(f, "empty disjunction") {
			disjunction[strings.Join(e.Path(), ".")] = true
		}
	}
	var out diag.List
	for _, e := range errs {
		path := strings.Join(e.Path(), ".")
		if disjunction[path] {
			if f, _ := e.Msg(); !strings.Contains(f, "empty disjunction") {
				continue
			}
			d := r.diagnostic(e)
			d.Code = "invalid-value"
			got := "this value"
			if uv := r.User.LookupPath(userPath(e.Path())); uv.Exists() && uv.IsConcrete() {
				got = fmt.Sprint(uv)
			}
			d.Message = fmt.Sprintf("%s = %s is not allowed", path, got)
			if uv := r.User.LookupPath(userPath(e.Path())); uv.Exists() && uv.IsConcrete() &&
				(uv.Kind() == cue.IntKind || uv.Kind() == cue.FloatKind) {
				// A number field with a default (`int & >=0 | *1234`):
				// name the limit, not the default.
				d.Code = "out-of-range"
				d.Message = fmt.Sprintf("%s = %s is out of range", path, shortNumber(got))
				if bounds, _ := schemaBounds(r.schemaField(path)); bounds != "" {
					d.Message += ": it must be " + bounds
				}
				if sf := r.schemaField(path); sf.Exists() && sf.IncompleteKind()&cue.NumberKind == 0 {
					// A number where the schema takes a string or a bool.
					d.Code = "type-mismatch"
					d.Message = fmt.Sprintf("%s = %s is a number: it must be %s", path, shortNumber(got), lastOr(firstBounds(sf), sf.IncompleteKind().String()))
				}
				if uv.Kind() == cue.FloatKind && isIntField(r.schemaField(path)) {
					d.Message = fmt.Sprintf("%s = %s is not an integer: it must be %s", path, shortNumber(got), lastOr(firstBounds(r.schemaField(path)), "an integer"))
				}
				if p, ok := r.userPos([]token.Pos{uv.Pos()}); ok {
					d.Pos = p // the value, not the field's label
				}
			} else if uv.Exists() && uv.IsConcrete() {
				// A string or bool where the schema takes another kind
				// (`tp: "1"` against `#Count | *1`): the same error as in a
				// field without a default (mismatched types).
				if sf := r.schemaField(path); sf.Exists() && uv.Kind()&sf.IncompleteKind() == 0 && sf.IncompleteKind() != cue.BottomKind {
					d.Code = "type-mismatch"
					d.Message = fmt.Sprintf("%s has type %v, want %v (got %s)", path, uv.Kind(), sf.IncompleteKind(), got)
					if p, ok := r.userPos([]token.Pos{uv.Pos()}); ok {
						d.Pos = p
					}
				}
			}
			out = append(out, d)
			continue
		}
		out = append(out, r.diagnostic(e))
	}
	return out
}

func (r *Result) diagnostic(e cueerrors.Error) diag.Diagnostic {
	path := strings.Join(e.Path(), ".")
	format, args := e.Msg()
	// e.Error() is CUE's whole message, its causes included ("import
	// failed: ...: package import cycle not allowed"); Msg alone can be an
	// empty "%s" or drop the cause.
	msg := strings.TrimPrefix(e.Error(), path+": ")
	if msg == "" {
		msg = fmt.Sprintf(format, args...)
	}
	msg = strings.TrimPrefix(msg, "cannot get syntax for ")
	ps := append([]token.Pos{e.Position()}, e.InputPositions()...)
	pos, ok := r.userPos(ps)
	if !ok && path != "" && r.User.Exists() {
		pos = r.Locate(path)
	}
	if !pos.IsValid() && len(r.Files) > 0 {
		if p, ok := r.userPos(cueerrors.Positions(e)); ok {
			pos = p
		} else {
			pos = diag.Pos{File: r.Display[r.Files[0]]}
		}
	}
	d := diag.Diagnostic{Severity: diag.Error, Path: path, Pos: pos, Message: msg, Related: r.related(e, pos)}
	switch {
	case strings.Contains(format, "field not allowed"):
		field := ""
		if n := len(e.Path()); n > 0 {
			field = e.Path()[n-1]
		}
		parent := strings.Join(e.Path()[:max(0, len(e.Path())-1)], ".")
		u := r.unknownField(path, parent, field, pos)
		d.Code, d.Message, d.Hint = u.Code, u.Message, u.Hint
	case strings.Contains(format, "out of bound"):
		d.Code = "out-of-range"
		if len(args) == 2 {
			d.Message = fmt.Sprintf("%s = %v is out of range: must be %v", lastOr(path, "value"), shortNumber(fmt.Sprint(args[0])), args[1])
			// The whole range, not the one bound CUE tested.
			if b := firstBounds(r.schemaField(path)); b != "" {
				d.Message = fmt.Sprintf("%s = %v is out of range: it must be %s", lastOr(path, "value"), shortNumber(fmt.Sprint(args[0])), b)
			}
		}
		d.Hint = r.allowedHint(path)
	case strings.Contains(format, "mismatched types"):
		d.Code = "type-mismatch"
		if len(args) >= 4 {
			d.Message = fmt.Sprintf("%s has type %v, want %v (got %v)", lastOr(path, "value"), args[2], args[3], args[0])
		}
		// A float where the schema takes integers (CUE names the two
		// kinds in either order): say so plainly.
		if uv := r.User.LookupPath(userPath(e.Path())); path != "" && uv.Exists() && uv.IsConcrete() &&
			uv.Kind() == cue.FloatKind && isIntField(r.schemaField(path)) {
			d.Message = fmt.Sprintf("%s = %s is not an integer: it must be %s", path, shortNumber(fmt.Sprint(uv)), lastOr(firstBounds(r.schemaField(path)), "an integer"))
		}
		d.Hint = r.allowedHint(path)
	case strings.Contains(format, "conflicting values"), strings.Contains(format, "empty disjunction"):
		d.Code = "invalid-value"
		d.Hint = r.allowedHint(path)
	case strings.Contains(format, "required but not present"), strings.Contains(format, "incomplete value"),
		strings.Contains(format, "non-concrete value"):
		d.Code = "missing-field"
		uv := r.User.LookupPath(userPath(e.Path()))
		if strings.Contains(format, "required") || path != "" && r.User.Exists() && !uv.Exists() {
			// Not written at all: CUE's "incomplete value >=1 & int"
			// would show the schema's syntax.
			d.Message = fmt.Sprintf("required field %s is missing", path)
		} else {
			d.Message = fmt.Sprintf("%s is not set to a concrete value (%s)", path, msg)
		}
		d.Hint = r.allowedHint(path)
		if mine, theirs, kind, ok := r.twoDefaults(path, uv); ok {
			// tp: *4 | int against the schema's #Count | *1: CUE keeps
			// no default when two disagree, so the field is left open.
			d.Message = fmt.Sprintf("%s has two defaults, the %s written here and parc's %s, and CUE keeps neither when they disagree, so the field has no value", path, mine, theirs)
			d.Hint = fmt.Sprintf("write %s: %s for that value, or write it without a default (%s: %s) to let parc solve choose it", path, mine, path, kind)
		}
	case strings.Contains(format, "undefined field") || strings.Contains(format, "reference") && strings.Contains(format, "not found"):
		d.Code = "unknown-reference"
		d.Hint = r.presetHint(e, args)
	case strings.Contains(msg, "imported and not used"):
		d.Code = "unused-import"
		d.Hint = "remove the import, or use the package"
		for _, sec := range sections {
			if sec.presets != "" && strings.Contains(msg, `"`+StdlibImportPath+"/"+sec.presets+`"`) {
				if top := topLevelFields(r.source.Path, r.source.Data); top != nil && !top[sec.name] {
					return r.missingSection(sec.name, sec.presets)
				}
			}
		}
	case strings.Contains(msg, "import cycle"):
		d.Code = "import-cycle"
		chain := make([]string, 0, len(ps))
		for _, p := range cueerrors.Positions(e) {
			chain = append(chain, r.pos(p).String())
		}
		d.Message = "package import cycle not allowed: the imports " + strings.Join(chain, " → ") + " lead back to where they started"
		d.Hint = "remove one of the imports so that no package imports itself, directly or through others"
	case strings.Contains(format, "structural cycle"):
		d.Code = "structural-cycle"
		d.Message = fmt.Sprintf("%s: structural cycle: the value of %s contains itself", lastOr(path, "value"), lastOr(path, "this field"))
		d.Hint = "a field cannot refer to a struct that encloses it; refer to the fields you need one by one"
	case strings.Contains(format, "cannot find package") || strings.Contains(format, "import failed") ||
		strings.Contains(format, "package") && strings.Contains(format, "not found"):
		d.Code = "unknown-import"
		d.Hint = `presets are imported as "parc.dev/stdlib/models" and "parc.dev/stdlib/clusters"`
	case strings.Contains(msg, "exceeds maximum nesting depth"):
		d.Code = "too-deep"
		d.Hint = "a spec nests a few levels (sections, lists, env maps): check that this is the file you meant"
	case strings.HasPrefix(format, "expected") || strings.Contains(format, "illegal") || strings.Contains(format, "missing ','") ||
		strings.Contains(format, "string literal not terminated") || strings.Contains(format, "unexpected"):
		d.Code = "syntax"
	default:
		d.Code = "invalid-value"
	}
	return d
}

// related keeps the other positions CUE gives for an error (both sides of a
// conflict, the constraint a value violates) that are in the user's files.
func (r *Result) related(e cueerrors.Error, primary diag.Pos) []diag.Related {
	format, _ := e.Msg()
	what := "also involved here"
	if strings.Contains(format, "conflicting values") {
		what = "the conflicting value"
	}
	var out []diag.Related
	seen := map[diag.Pos]bool{primary: true}
	for _, p := range append(append([]token.Pos{e.Position()}, e.InputPositions()...), cueerrors.Positions(e)...) {
		if !p.IsValid() || !r.isUserFile(p.Filename()) {
			continue
		}
		dp := r.pos(p)
		if seen[dp] {
			continue
		}
		seen[dp] = true
		out = append(out, diag.Related{Pos: dp, Message: what})
	}
	return out
}

// userPath is an error's path as a CUE path: a list element is an index
// (cue.ParsePath("a.0") is a syntax error, whose text ended up in messages
// as the value: "recompute_modules.0 = _|_ // expected 'EOF'").
func userPath(parts []string) cue.Path {
	sels := make([]cue.Selector, len(parts))
	for i, p := range parts {
		if n, err := strconv.Atoi(p); err == nil && n >= 0 {
			sels[i] = cue.Index(n)
		} else {
			sels[i] = cue.Str(p)
		}
	}
	return cue.MakePath(sels...)
}

// isIntField reports whether the schema value takes integers only.
func isIntField(v cue.Value) bool {
	return v.Exists() && v.IncompleteKind()&cue.IntKind != 0 && v.IncompleteKind()&cue.FloatKind == 0
}

// firstBounds is the bounds of a schema value without its default.
func firstBounds(v cue.Value) string {
	b, _ := schemaBounds(v)
	return b
}

// shortNumber writes a number of more than 24 digits in scientific notation
// (1e400 from HCL arrives as 401 digits): a message names it, not spells it.
func shortNumber(s string) string {
	if len(s) <= 24 {
		return s
	}
	f, ok := new(big.Float).SetPrec(64).SetString(s)
	if !ok {
		return s[:21] + "..."
	}
	return f.Text('g', 6)
}

func lastOr(path, def string) string {
	if path == "" {
		return def
	}
	return path
}

// schemaFields lists the field names #Plan allows at a dotted path.
func (r *Result) schemaFields(parent string) []string {
	if f, ok := r.fieldsOf[parent]; ok {
		return f
	}
	f := r.lookupSchemaFields(parent)
	if r.fieldsOf == nil {
		r.fieldsOf = map[string][]string{}
	}
	r.fieldsOf[parent] = f
	return f
}

func (r *Result) lookupSchemaFields(parent string) []string {
	v := r.Schema
	if parent != "" {
		v = v.LookupPath(cue.ParsePath(parent))
	}
	if !v.Exists() {
		return nil
	}
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		out = append(out, label(it.Selector()))
	}
	slices.Sort(out)
	return out
}

// allowedHint describes what the schema allows at path.
func (r *Result) allowedHint(path string) string {
	if path == "" {
		return ""
	}
	v := r.schemaField(path)
	if !v.Exists() {
		return ""
	}
	text := strings.TrimSpace(formatSchemaConstraint(v))
	if text == "" || strings.Contains(text, "_|_") {
		return ""
	}
	return fmt.Sprintf("%s must be %s", path, text)
}

// twoDefaults reports the user's default of the field at path and the
// schema's, when both exist and differ: the reason the unified field is
// incomplete.
func (r *Result) twoDefaults(path string, uv cue.Value) (mine, theirs, kind string, ok bool) {
	if path == "" || !uv.Exists() {
		return "", "", "", false
	}
	ud, ok1 := uv.Default()
	sd, ok2 := r.schemaField(path).Default()
	if !ok1 || !ok2 || !ud.IsConcrete() || !sd.IsConcrete() || ud.Equals(sd) {
		return "", "", "", false
	}
	kind = sd.Kind().String() // int, string, bool
	if sd.Kind() == cue.FloatKind {
		kind = "number"
	}
	return fmt.Sprint(ud), fmt.Sprint(sd), kind, true
}

// schemaField is the schema's value at a dotted path, optional fields
// (iters?) included.
func (r *Result) schemaField(path string) cue.Value {
	parts := strings.Split(path, ".")
	if v := r.Schema.LookupPath(userPath(parts)); v.Exists() && v.Err() == nil {
		return v
	}
	sels := make([]cue.Selector, len(parts))
	for i, p := range parts {
		if n, err := strconv.Atoi(p); err == nil && n >= 0 {
			sels[i] = cue.AnyIndex // a list element: the list's element constraint
		} else {
			sels[i] = cue.Str(p).Optional()
		}
	}
	v := r.Schema.LookupPath(cue.MakePath(sels...))
	if v.Err() != nil {
		return cue.Value{} // not a schema field: no hint beats a wrong one
	}
	return v
}

// synonyms maps names users bring from Megatron's flags or other tools to
// parc's field names.
var synonyms = map[string]string{
	"tensor_parallel": "tp", "tensor_model_parallel_size": "tp", "tensor_parallel_size": "tp",
	"pipeline_parallel": "pp", "pipeline_model_parallel_size": "pp", "pipeline_parallel_size": "pp",
	"context_parallel": "cp", "context_parallel_size": "cp",
	"expert_parallel": "ep", "expert_model_parallel_size": "ep", "expert_tensor_parallel_size": "etp",
	"data_parallel": "dp", "data_parallel_size": "dp", "sequence_parallel": "sp",
	"virtual_pipeline": "vpp", "num_virtual_stages_per_pipeline_rank": "vpp",
	"num_layers": "layers", "hidden_size": "hidden", "num_attention_heads": "heads",
	"ffn_hidden_size": "ffn_hidden", "num_query_groups": "query_groups", "vocab_size": "vocab",
	"micro_batch_size": "micro_batch", "global_batch_size": "global_batch", "seq_len": "seq_length",
	"num_experts": "experts", "moe_router_topk": "topk", "gpus": "gpus_per_node", "num_nodes": "nodes",
}

// suggest returns the valid name closest to given, if it is close enough.
func suggest(given string, valid []string) string {
	if s, ok := synonyms[strings.ToLower(given)]; ok && slices.Contains(valid, s) {
		return s
	}
	best, bestDist := "", 1<<30
	for _, v := range valid {
		d := levenshtein.Distance(given, v, nil)
		if d < bestDist {
			best, bestDist = v, d
		}
	}
	if best != "" && bestDist <= max(1, len([]rune(given))/3) {
		return best
	}
	return ""
}

// checkLanguageVersion reads the user's cue.mod/module.cue: the language
// version it declares governs the embedded presets too.
func checkLanguageVersion(file string, data []byte, r *Result) (diag.Diagnostic, bool) {
	f, err := parser.ParseFile(file, data)
	if err != nil {
		return diag.Diagnostic{}, true // let the CUE loader report it
	}
	ver, pos := languageVersion(f)
	if ver == "" {
		return diag.Diagnostic{}, true
	}
	if semver.IsValid(ver) && semver.Compare(ver, MinLanguageVersion) < 0 {
		return diag.Diagnostic{
			Severity: diag.Error,
			Code:     "cue-language-version",
			Path:     "language.version",
			Pos:      diag.Pos{File: relDisplay(file), Line: pos.Line(), Column: pos.Column()},
			Message: fmt.Sprintf("cue.mod/module.cue declares language version %s, but parc's presets (parc.dev/stdlib) need %s or newer: the module's language version governs imported packages too",
				ver, MinLanguageVersion),
			Hint: fmt.Sprintf("set language: version: %q (or newer) in %s", MinLanguageVersion, relDisplay(file)),
		}, false
	}
	return diag.Diagnostic{}, true
}

func relDisplay(file string) string {
	if wd, err := filepath.Abs("."); err == nil {
		if rel, err := filepath.Rel(wd, file); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return file
}

// unknownField is the diagnostic for a key the schema does not allow.
func (r *Result) unknownField(path, parent, field string, pos diag.Pos) diag.Diagnostic {
	d := diag.Diagnostic{Severity: diag.Error, Code: "unknown-field", Path: path, Pos: pos,
		Message: fmt.Sprintf("unknown field %q", field)}
	valid := r.schemaFields(parent)
	if s := suggest(field, valid); s != "" {
		d.Message += fmt.Sprintf("; did you mean %q?", s)
	}
	if len(valid) > 0 {
		where := parent
		if where == "" {
			where = "the top level"
		}
		d.Hint = fmt.Sprintf("fields allowed in %s: %s", where, strings.Join(valid, ", "))
	}
	return d
}
