package cli

import (
	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
)

func newExportCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "export FILE",
		Short: "Print the resolved plan (every default and derived value) as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "json" && format != "text" {
				return checkFormat(format)
			}
			p, err := vetPlan(cmd, args[0])
			if err != nil {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), compiler.Export(p))
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "output format (export is always JSON; text is accepted as an alias)")
	return cmd
}
