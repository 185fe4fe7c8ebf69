package slurm_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/compiler/diag"
	"parc.dev/parc/compiler/plan"
	"parc.dev/parc/compiler/spec"
)

func ptr[T any](v T) *T { return &v }

// examples loads every spec in examples/ through the real front end.
func examples(t *testing.T) map[string]*plan.Plan {
	t.Helper()
	files, err := filepath.Glob("../../examples/*")
	require.NoError(t, err)
	out := map[string]*plan.Plan{}
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".cue" && ext != ".hcl" {
			continue
		}
		p, diags := compiler.Vet(compiler.Source{Path: f})
		require.False(t, diags.HasErrors(), "%s: %v", f, diags)
		out[filepath.Base(f)] = p
	}
	require.NotEmpty(t, out)
	return out
}

// tiny returns the local test example with edit applied, resolved again
// through every check (so the edited plan is one parc would compile).
func tiny(t *testing.T, edit func(s *spec.Spec)) *plan.Plan {
	t.Helper()
	p, diags := compiler.Vet(compiler.Source{Path: "../../examples/tiny-gpt-local.cue"})
	require.False(t, diags.HasErrors(), "%v", diags)
	s := p.Spec
	if edit != nil {
		edit(&s)
	}
	p, diags = compiler.Resolve(p.Source, &s, diag.NoPos)
	require.False(t, diags.HasErrors(), "%v", diags)
	return p
}
