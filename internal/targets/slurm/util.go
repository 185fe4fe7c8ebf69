package slurm

import "parc.dev/parc/internal/spec"

type specSlurm = spec.Slurm
