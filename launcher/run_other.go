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
