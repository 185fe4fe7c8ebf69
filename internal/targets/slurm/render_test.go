package slurm_test

import (
	exampleplans "parc.dev/parc/internal/examples"
	"testing"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
)

func ptr[T any](v T) *T { return &v }

func examples(t *testing.T) map[string]*plan.Plan { return exampleplans.Plans(t) }

// tiny returns the local test example with edit applied, resolved again
// through every check (so the edited plan is one parc would compile).
func tiny(t *testing.T, edit func(s *spec.Spec)) *plan.Plan {
	t.Helper()
	p, diags := compiler.Vet(compiler.Source{Path: "../../../examples/tiny-gpt-local.cue"})
	require.False(t, diags.HasErrors(), "%v", diags)
	s := p.Spec
	if edit != nil {
		edit(&s)
	}
	p, diags = compiler.Resolve(p.Source, &s, diag.NoPos)
	require.False(t, diags.HasErrors(), "%v", diags)
	return p
}
