package launcher

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"parc.dev/parc/launchplan"
)

// LoadPlan reads launch.json and checks that it describes a consistent
// world (launchplan.Check). The returned File has no Groups: the launcher
// does not need them, and at 131,072 ranks they are most of the file (their
// members are still checked). Use launchplan.Decode to read them.
func LoadPlan(path string) (*launchplan.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the launch plan: %w", err)
	}
	f, err := launchplan.DecodeWithoutGroups(data)
	var invalid *launchplan.Invalid
	switch {
	case errors.As(err, &invalid):
		return nil, fmt.Errorf("%s is not a consistent launch plan:\n  %s", path,
			strings.Join(invalid.Problems, "\n  "))
	case err != nil:
		return nil, fmt.Errorf("%s is not a valid launch plan: %w", path, err)
	}
	return f, nil
}
