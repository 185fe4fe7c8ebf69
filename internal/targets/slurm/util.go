package slurm

import (
	"maps"
	"slices"

	"parc.dev/parc/internal/spec"
)

type specSlurm = spec.Slurm

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func contains(list []string, s string) bool { return slices.Contains(list, s) }
