package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
)

func newVetCmd() *cobra.Command {
	var (
		format string
		quiet  bool
	)
	cmd := &cobra.Command{
		Use:   "vet FILE...",
		Short: "Check specs: every mistake at once, at its file:line:col",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := newView(cmd, format)
			if err != nil {
				return err
			}
			v.jsonOnly = true
			var all diag.List
			for _, f := range args {
				_, diags := compiler.Vet(compiler.Source{Path: f})
				all = append(all, diags...)
				if !diags.HasErrors() && !quiet {
					// "ok  FILE (N warnings)" for each file without errors
					ok := "ok  " + diag.QuoteFile(relPath(f))
					if n := len(diags); n > 0 {
						ok += fmt.Sprintf(" (%d warning%s)", n, plural(n))
					}
					v.notes = append(v.notes, ok)
				}
			}
			if err := v.diagnostics(all, all.HasErrors(), ""); err != nil {
				return err
			}
			return v.result(func(io.Writer) error { return nil }, func() (any, error) {
				return diagReport{Valid: true, Diagnostics: nonNil(relDiags(all))}, nil
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the diagnostics, not the ok line of a valid file")
	return cmd
}
