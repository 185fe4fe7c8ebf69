package load

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueload "cuelang.org/go/cue/load"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/schema"
	"parc.dev/parc/stdlib"
)

// StdlibImportPath is the import path prefix of the embedded preset library.
const StdlibImportPath = "parc.dev/stdlib"

// MinLanguageVersion is the oldest CUE language version the embedded preset
// library is written for. A user module that declares an older one is reported.
const MinLanguageVersion = "v0.9.0"

// Source is one spec file. Data may be nil, in which case the file is read
// from Path; tests build sources in memory by setting Data.
type Source struct {
	Path string
	Data []byte
}

// Result is a loaded spec.
type Result struct {
	// Plan is the user's value unified with #Plan (defaults applied).
	Plan cue.Value
	// User is the user's own value, before the schema: it tells which fields
	// the user left open (a degree written as `int`) and where each field is.
	User cue.Value
	// Schema is #Plan.
	Schema cue.Value
	// Files are the user's own files (positions in them are the user's).
	Files []string
	// Display maps an absolute file name to the name the user gave.
	Display map[string]string

	source Source
	// fieldsOf caches schemaFields (one spec can name thousands of
	// unknown fields in one struct).
	fieldsOf map[string][]string
	// hclAt places the attributes and blocks of an HCL spec by path.
	hclAt map[string]diag.Pos
	// skipMissing are the sections reported missing as a whole.
	skipMissing []string
}

// text returns the source of the file a diagnostic names (nil for another).
func (s Source) text(file string) []byte {
	if file == s.Path {
		return s.Data
	}
	return nil
}

// Ranges sets the source range of diagnostics found after loading (see
// diag.List.WithRanges).
func (r *Result) Ranges(l diag.List) diag.List { return l.WithRanges(r.source.text) }

// Load reads and unifies one spec. It never panics on bad input: every
// problem becomes a diagnostic. It reads at most MaxInputBytes, and only
// UTF-8 text. The returned Result is nil when the spec could
// not be built at all (a syntax error, a missing file, a bad import).
func Load(src Source) (res *Result, diags diag.List) {
	defer func() { diags = diags.WithRanges(src.text) }()
	if src.Data == nil {
		data, d := readSpec(src.Path)
		if d != nil {
			diags.Add(*d)
			return nil, diags
		}
		src.Data = data
	} else if d := checkInput(src.Path, src.Data); d != nil {
		diags.Add(*d)
		return nil, diags
	}
	abs, err := filepath.Abs(src.Path)
	if err != nil {
		abs = src.Path
	}
	ext := strings.ToLower(filepath.Ext(src.Path))
	if ext != ".hcl" && ext != ".cue" {
		// /dev/stdin, a pipe, a file without the extension: read as CUE.
		// The CUE loader takes a name without .cue for a package directory,
		// so the text is loaded under NAME.cue in the current directory
		// (messages still name the path the user gave).
		if wd, err := os.Getwd(); err == nil {
			abs = filepath.Join(wd, filepath.Base(abs)+".cue")
		} else {
			abs += ".cue"
		}
	}
	if ext != ".hcl" && strings.Contains(filepath.Base(abs), ":") {
		// The CUE loader reads "json:b.cue" as the file b.cue qualified
		// with the type json ("cannot find package ./json"): a spec
		// named plan-10:30.cue is loaded under a name without the colon
		// (messages still name the path the user gave).
		abs = filepath.Join(filepath.Dir(abs), strings.ReplaceAll(filepath.Base(abs), ":", "_"))
	}
	ctx := cuecontext.New()
	schemaVal := ctx.CompileBytes(schema.Source, cue.Filename(schema.Filename))
	if err := schemaVal.Err(); err != nil {
		// The embedded schema is ours; this is an internal error.
		panic(fmt.Sprintf("parc: embedded schema does not compile: %v", err))
	}
	plan := schemaVal.LookupPath(cue.ParsePath("#Plan"))
	res = &Result{Schema: plan, Files: []string{abs}, Display: map[string]string{abs: src.Path}, source: src}

	switch ext {
	case ".hcl":
		user, at, ds := fromHCL(ctx, src.Path, abs, src.Data, res)
		res.hclAt = at
		diags = append(diags, ds...)
		if user == nil {
			return nil, diags
		}
		res.User = *user
	default:
		user, ds := fromCUE(ctx, abs, src.Data, res)
		diags = append(diags, ds...)
		if user == nil {
			return nil, diags
		}
		res.User = *user
	}
	res.User = presetDefaults(res.User, plan)
	res.Plan = res.User.Unify(plan)
	return res, diags
}

// fromCUE builds the user's CUE file with the stdlib in an overlay.
func fromCUE(ctx *cue.Context, abs string, data []byte, res *Result) (*cue.Value, diag.List) {
	var diags diag.List
	dir := filepath.Dir(abs)
	root := moduleRoot(dir)
	data, pre, ok := res.dropUnknown(abs, data)
	diags = append(diags, pre...)
	if !ok {
		return nil, diags
	}
	overlay := map[string]cueload.Source{abs: cueload.FromBytes(data)}
	modFile := filepath.Join(root, "cue.mod", "module.cue")
	if modData, err := os.ReadFile(modFile); err == nil {
		if d, ok := checkLanguageVersion(modFile, modData, res); !ok {
			diags.Add(d)
			return nil, diags
		}
	} else {
		overlay[modFile] = cueload.FromString("module: \"parc.local/spec\"\nlanguage: version: \"" + MinLanguageVersion + "\"\n")
	}
	if err := fs.WalkDir(stdlib.FS, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || path.Ext(p) != ".cue" {
			return err
		}
		b, err := stdlib.FS.ReadFile(p)
		if err != nil {
			return err
		}
		overlay[filepath.Join(root, "cue.mod", "pkg", StdlibImportPath, filepath.FromSlash(p))] = cueload.FromBytes(b)
		return nil
	}); err != nil {
		panic(fmt.Sprintf("parc: embedded stdlib: %v", err))
	}
	insts := cueload.Instances([]string{abs}, &cueload.Config{
		Dir:     dir,
		Overlay: overlay,
		Env:     []string{"CUE_REGISTRY=none"},
	})
	if len(insts) != 1 {
		// One file argument is one instance; anything else is a bug.
		panic(fmt.Sprintf("parc: the CUE loader made %d instances of one file", len(insts)))
	}
	if err := insts[0].Err; err != nil {
		diags = append(diags, fromCUEError(err, res)...)
		return nil, diags
	}
	v := ctx.BuildInstance(insts[0])
	if err := v.Err(); err != nil {
		// The broken value still places the fields an error names (a
		// structural cycle comes without a position of its own).
		res.User = v
		diags = append(diags, fromCUEError(err, res)...)
		return nil, diags
	}
	return &v, diags
}

// moduleRoot is the nearest parent of dir holding a cue.mod, else dir.
func moduleRoot(dir string) string {
	for d := dir; ; {
		if st, err := os.Stat(filepath.Join(d, "cue.mod")); err == nil && st.IsDir() {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}
