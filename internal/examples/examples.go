// Package examples gives tests the plans of examples/, loaded through the
// real front end (parc vet), so every target is tested on the specs users
// start from.
package examples

import (
	"path/filepath"
	"runtime"
	"testing"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/plan"
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
