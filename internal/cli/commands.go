package cli

import "github.com/spf13/cobra"

// commands lists parc's subcommands.
func commands() []*cobra.Command {
	return []*cobra.Command{
		newVetCmd(),
		newExportCmd(),
		newExplainCmd(),
		newCompileCmd(),
		newLaunchCmd(),
		newSolveCmd(),
		newImportCmd(),
		newVersionCmd(),
	}
}
