//go:build !linux

package launcher

import (
	"context"
	"errors"
)

// Run is only implemented on Linux: it relies on process groups and the
// parent-death signal.
func Run(ctx context.Context, opts Options) (int, error) {
	return ExitUsage, errors.New("parc launch runs on Linux only")
}

func nvidiaSMICount(ctx context.Context, smi string, spawn chan<- spawnRequest) (int, error) {
	return 0, errors.New("parc launch runs on Linux only")
}
