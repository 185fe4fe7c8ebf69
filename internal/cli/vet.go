package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
)

// vetReport is the contract JSON of `parc vet --format json`.
type vetReport struct {
	Valid       bool              `json:"valid"`
	Diagnostics []diag.Diagnostic `json:"diagnostics"`
}

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
			if err := checkFormat(format); err != nil {
				return err
			}
			var (
				all diag.List
				oks []string // "ok  FILE (N warnings)" for each file without errors
			)
			for _, f := range args {
				_, diags := compiler.Vet(compiler.Source{Path: f})
				all = append(all, relDiags(diags)...)
				if !diags.HasErrors() {
					ok := "ok  " + relPath(f)
					if n := len(diags); n > 0 {
						ok += fmt.Sprintf(" (%d warning%s)", n, plural(n))
					}
					oks = append(oks, ok)
				}
			}
			if format == "json" {
				rep := vetReport{Valid: !all.HasErrors(), Diagnostics: all}
				if rep.Diagnostics == nil {
					rep.Diagnostics = []diag.Diagnostic{}
				}
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				printDiags(cmd.ErrOrStderr(), all)
				if !quiet {
					for _, ok := range oks {
						fmt.Fprintln(cmd.ErrOrStderr(), ok)
					}
				}
				if all.HasErrors() {
					fmt.Fprintf(cmd.ErrOrStderr(), "parc vet: %s\n", summary(all))
				}
			}
			if all.HasErrors() {
				return exitError{ExitSpec}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the diagnostics, not the ok line of a valid file")
	return cmd
}
