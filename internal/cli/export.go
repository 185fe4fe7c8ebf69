package cli

import (
	"io"

	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
)

// exportReport is `parc export`: the resolved plan and its warnings.
type exportReport struct {
	compiler.Exported
	Diagnostics diag.List `json:"diagnostics"`
}

func newExportCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "export FILE",
		Short: "Print the resolved plan (every default and derived value) as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// export is always JSON; text is accepted as an alias.
			if _, err := newView(cmd, format); err != nil {
				return err
			}
			v, _ := newView(cmd, "json")
			p, diags := compiler.Vet(compiler.Source{Path: args[0]})
			if err := v.diagnostics(diags, p == nil, ""); err != nil {
				return err
			}
			return v.result(func(io.Writer) error { return nil }, func() (any, error) {
				return exportReport{Exported: compiler.Export(p), Diagnostics: nonNil(relDiags(diags))}, nil
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "output format (export is always JSON; text is accepted as an alias)")
	return cmd
}
