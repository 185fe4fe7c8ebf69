package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
)

func newCompileCmd() *cobra.Command {
	var outDir, templates string
	var check bool
	cmd := &cobra.Command{
		Use:   "compile FILE",
		Short: "Vet a spec, then write megatron.args, submit.sbatch, torchrun.sh, launch.json and report.md",
		Long: `compile vets the spec and writes every artifact to DIR (default ./out). Nothing is
written when the spec has errors. With --check it writes nothing and exits 1,
naming the stale files, when DIR differs from what would be written.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, files, diags := compiler.Compile(compiler.Source{Path: args[0]}, compiler.Options{Templates: templates})
			v := &view{cmd: cmd} // compile writes files; its report is text
			if err := v.diagnostics(diags, p == nil, "; nothing written"); err != nil {
				return err
			}
			if check {
				stale := staleFiles(outDir, files)
				for _, s := range stale {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: stale\n", relPath(filepath.Join(outDir, s)))
				}
				if len(stale) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "parc compile --check: %d of %d files differ from what %s compiles to; run parc compile %s -o %s\n",
						len(stale), len(files), args[0], args[0], outDir)
					return exitError{ExitSpec}
				}
				return nil
			}
			if err := writeFiles(outDir, files); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "parc compile: wrote %d files to %s\n", len(files), diag.QuoteFile(outDir))
			return nil
		},
	}
	cmd.Flags().StringVarP(&outDir, "out", "o", "out", "output directory")
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; exit 1 naming the files in DIR that differ from what would be written")
	cmd.Flags().StringVar(&templates, "templates", "", "directory of NAME.tmpl files overriding the built-in templates (default: the spec's launch.templates)")
	return cmd
}

// staleFiles lists the artifacts whose bytes (or mode) in dir differ from files.
func staleFiles(dir string, files compiler.Files) []string {
	var out []string
	for _, name := range files.Names() {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, files[name]) {
			out = append(out, name)
			continue
		}
		if st, err := os.Stat(path); err == nil && compiler.Executable(name) && st.Mode()&0o111 == 0 {
			out = append(out, name)
		}
	}
	return out
}
