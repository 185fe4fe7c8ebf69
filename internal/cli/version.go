package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
)

// version is parc's version: the module version it was built at (go install
// …@vX), else the VCS revision of the checkout (go build), else "devel".
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}

// versionText is what `parc version` and `parc --version` print.
func versionText() string {
	return fmt.Sprintf("parc %s (%s, %s/%s)\nMegatron-LM %s (the commit whose rules, defaults and flags parc follows)\n",
		version(), runtime.Version(), runtime.GOOS, runtime.GOARCH, compiler.MegatronCommit)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print parc's version and the Megatron-LM commit its rules follow",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprint(cmd.OutOrStdout(), versionText())
			return nil
		},
	}
}
