package compiler

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/targets/launchjson"
	"parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/targets/report"
	"parc.dev/parc/internal/targets/slurm"
	"parc.dev/parc/internal/targets/template"
	"parc.dev/parc/internal/targets/torchrun"
	"parc.dev/parc/launchplan"
)

// Artifact names in the output directory (docs/architecture.md, "Contracts").
const (
	ArgsFile    = megatron.ArgsFile
	SbatchFile  = slurm.ScriptName
	TorchrunSh  = torchrun.ScriptName
	LaunchJSON  = slurm.LaunchFile
	ReportFile  = report.FileName
	PipelineSVG = report.PipelineSVG
	LayoutSVG   = report.LayoutSVG
)

// Files maps an artifact's name to its bytes.
type Files map[string][]byte

// Names lists the artifacts in a stable order.
func (f Files) Names() []string { return slices.Sorted(maps.Keys(f)) }

// Executable reports whether an artifact is a script.
func Executable(name string) bool { return name == SbatchFile || name == TorchrunSh }

// Options tune Compile.
type Options struct {
	// Templates is a directory of NAME.tmpl files that override the built-in
	// templates; empty means launch.templates of the spec (relative to the
	// spec's folder), or none.
	Templates string
}

// Compile vets a spec and renders every artifact. On any error it returns no
// files, so the CLI writes nothing.
func Compile(src Source, o Options) (*plan.Plan, Files, diag.List) {
	p, res, diags := vet(src)
	if p == nil || diags.HasErrors() {
		return nil, nil, diags.Sort()
	}
	at := res.Locator()
	diags = append(diags, res.Ranges(relativePaths(&p.Spec, at))...)
	set, ds := templateSet(src, p, o, at)
	diags = append(diags, res.Ranges(ds)...)
	if set == nil {
		return nil, nil, diags.Sort()
	}
	files, ds := render(p, set, diags, at)
	diags = append(diags, res.Ranges(ds)...)
	if diags.HasErrors() {
		return nil, nil, diags.Sort()
	}
	return p, files, diags.Sort()
}

// render runs every target on a vetted plan.
func render(p *plan.Plan, set *template.Set, warnings diag.List, at diag.Locator) (Files, diag.List) {
	var diags diag.List
	files := Files{}
	fail := func(name string, err error) {
		diags.Add(diag.Diagnostic{Severity: diag.Error, Code: "template", Path: "launch.templates",
			Pos: at("launch.templates"), Message: err.Error(),
			Hint: "fix the template named in the message (text/template syntax, missingkey=error)"})
	}
	// The argument list was built once, by the megatron target's check
	// when the plan was resolved.
	args := p.MegatronArgs
	if b, err := megatron.Render(p, args, set); err != nil {
		fail(ArgsFile, err)
	} else {
		files[ArgsFile] = b
	}
	if b, err := slurm.Render(p, set); err != nil {
		fail(SbatchFile, err)
	} else {
		files[SbatchFile] = b
	}
	if b, err := torchrun.Render(p, set); err != nil {
		fail(TorchrunSh, err)
	} else {
		files[TorchrunSh] = b
	}
	lf := launchjson.Build(p.Layout, megatron.Env(p), megatron.Command(p, args), p.Spec.Launch.MasterPort)
	grace := p.Spec.GraceSeconds()
	lf.GraceSeconds = &grace
	files[LaunchJSON] = launchplan.Encode(lf)
	rep, err := report.Files(p, warnings, set)
	if err != nil {
		fail(ReportFile, err)
	}
	maps.Copy(files, rep)
	return files, diags
}

// templateSet is the built-in templates, overridden from a directory.
func templateSet(src Source, p *plan.Plan, o Options, at diag.Locator) (*template.Set, diag.List) {
	var diags diag.List
	dir, path := o.Templates, ""
	if dir == "" && p.Spec.Launch.Templates != nil {
		dir, path = *p.Spec.Launch.Templates, "launch.templates"
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(src.Path), dir)
		}
	}
	if dir == "" {
		return template.Builtin(), nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		pos := diag.Pos{File: dir}
		if path != "" {
			pos = at(path)
		}
		diags.Add(diag.Diagnostic{Severity: diag.Error, Code: "templates-dir", Path: path, Pos: pos,
			Message: "template directory " + dir + " does not exist",
			Hint:    "give a directory of NAME.tmpl files (megatron.args.tmpl, submit.sbatch.tmpl, torchrun.sh.tmpl, report.md.tmpl)"})
		return nil, diags
	}
	if path != "" {
		if d, ok := insideSpecDir(src, dir, at(path)); !ok {
			diags.Add(d)
			return nil, diags
		}
	}
	set, err := template.NewDir(dir)
	if err != nil {
		pos := diag.Pos{File: dir}
		if path != "" {
			pos = at(path)
		}
		diags.Add(diag.Diagnostic{Severity: diag.Error, Code: "template", Path: path, Pos: pos, Message: err.Error(),
			Hint: "keep the templates as files inside the template directory"})
		return nil, diags
	}
	if err := set.CheckOverrides(megatron.TemplateName, slurm.TemplateName, torchrun.TemplateName, report.TemplateName); err != nil {
		diags.Add(diag.Diagnostic{Severity: diag.Error, Code: "template", Path: path, Pos: diag.Pos{File: dir}, Message: err.Error()})
		return nil, diags
	}
	return set, nil
}

// insideSpecDir checks that launch.templates, which the spec names, stays in
// the spec's own directory once links are resolved: a spec from a repository
// parc does not own must not pull templates (which write the scripts) from
// elsewhere on the machine. --templates, the user's own flag, may name any
// directory.
func insideSpecDir(src Source, dir string, pos diag.Pos) (diag.Diagnostic, bool) {
	base, err1 := filepath.EvalSymlinks(filepath.Dir(src.Path))
	real, err2 := filepath.EvalSymlinks(dir)
	if err1 == nil && err2 == nil {
		base, _ = filepath.Abs(base)
		real, _ = filepath.Abs(real)
		if rel, err := filepath.Rel(base, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return diag.Diagnostic{}, true
		}
	}
	return diag.Diagnostic{Severity: diag.Error, Code: "templates-outside", Path: "launch.templates", Pos: pos,
		Message: fmt.Sprintf("launch.templates %s leads outside the spec's directory %s", dir, filepath.Dir(src.Path)),
		Hint:    "keep the templates in a directory beside the spec, or pass --templates DIR on the command line"}, false
}
