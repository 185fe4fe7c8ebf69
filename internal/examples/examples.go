// Package examples gives tests the plans of examples/, loaded through the
// real front end (parc vet), so every target is tested on the specs users
// start from.
package examples

import (
	"path/filepath"
	"runtime"
	"testing"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
)

// Dir is the examples/ folder of the repository.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples")
}

// Plans vets every spec in examples/ and returns the plans by file name. A
// spec with errors fails the test.
func Plans(t testing.TB) map[string]*plan.Plan {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(Dir(), "*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*plan.Plan{}
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".cue" && ext != ".hcl" {
			continue
		}
		p, diags := compiler.Vet(compiler.Source{Path: f})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", f, diags)
		}
		out[filepath.Base(f)] = p
	}
	if len(out) == 0 {
		t.Fatal("no examples")
	}
	return out
}

// Tiny returns the plan of examples/tiny-gpt-local.cue (the one that runs on
// the local test cluster) with edit applied to its spec, resolved again
// through every check, so the edited plan is one parc would compile. A spec
// with errors, before or after the edit, fails the test.
func Tiny(t testing.TB, edit func(s *spec.Spec)) *plan.Plan {
	t.Helper()
	p, diags := compiler.Vet(compiler.Source{Path: filepath.Join(Dir(), "tiny-gpt-local.cue")})
	if diags.HasErrors() {
		t.Fatalf("tiny-gpt-local.cue: %v", diags)
	}
	s := p.Spec
	if edit != nil {
		edit(&s)
	}
	p, diags = compiler.Resolve(p.Source, &s, diag.NoPos)
	if diags.HasErrors() {
		t.Fatalf("tiny-gpt-local.cue after the edit: %v", diags)
	}
	return p
}
