package slurm_test

import (
	exampleplans "parc.dev/parc/internal/examples"
	"testing"

	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
)

func ptr[T any](v T) *T { return &v }

func examples(t *testing.T) map[string]*plan.Plan { return exampleplans.Plans(t) }

func tiny(t *testing.T, edit func(s *spec.Spec)) *plan.Plan { return exampleplans.Tiny(t, edit) }
