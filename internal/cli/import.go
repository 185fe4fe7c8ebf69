package cli

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/importer/hf"
	"parc.dev/parc/internal/importer/megatron"
	"parc.dev/parc/internal/load"
)

func newImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Write a spec from an existing launch configuration",
	}
	cmd.AddCommand(newImportMegatronCmd(), newImportHFCmd())
	return cmd
}

func newImportHFCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "hf CONFIG.json",
		Short: "Write a spec's model section from a Hugging Face config.json (- = stdin)",
		Long: `import hf reads a Hugging Face config.json (Llama, Qwen2/Qwen3, Mixtral,
DeepSeek-V3, GPT-OSS) and writes the spec's model section as CUE. A key that
changes the model and has no spec field (sliding windows, attention sinks) is
named in a warning. Exit 1 when the file is not a decoder's config.json.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, name, err := readImportInput(cmd, args[0])
			if err != nil {
				return err
			}
			res := hf.Import(src, name)
			return writeImport(cmd, out, res.Spec, res.Diags)
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the model to OUT.cue (default stdout)")
	return cmd
}

func newImportMegatronCmd() *cobra.Command {
	var cluster, out string
	var gpus, nodes int
	cmd := &cobra.Command{
		Use:   "megatron FILE [-- SCRIPT_ARGS...]",
		Short: "Write a spec from Megatron arguments: one per line, or a command line or launch script (- = stdin)",
		Long: `import megatron reads the arguments of pretrain_gpt.py — one per line (as parc's
own megatron.args), or a shell command line or launch script (continuations,
quoting, arrays, $VAR from the script's own assignments; the environment is
not read) — and writes a CUE spec whose parc compile gives Megatron the same
parsed arguments. Arguments the schema has no field for are kept in
launch.extra_args, each with a warning. Exit 1 when Megatron's parser would
reject the arguments (or parc's checks do), each problem at FILE:LINE.
Words after -- are the launch script's own arguments ($1, $2, …, $@), as in
bash FILE SCRIPT_ARGS...`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var scriptArgs []string
			if len(args) > 1 {
				if cmd.ArgsLenAtDash() != 1 {
					return usageError{fmt.Errorf("give one FILE; the script's own arguments go after --")}
				}
				scriptArgs = args[1:]
			} else if cmd.ArgsLenAtDash() == 1 {
				scriptArgs = []string{} // "--" and nothing after it: no positional parameters
			}
			if cluster != "" && !slices.Contains(megatron.ClusterPresets(), cluster) {
				return usageError{fmt.Errorf("--cluster %q is not a cluster preset (one of %v)", cluster, megatron.ClusterPresets())}
			}
			if cluster != "" && cmd.Flags().Changed("gpus-per-node") {
				return usageError{fmt.Errorf("give --cluster or --gpus-per-node, not both")}
			}
			if gpus < 0 || nodes < 0 {
				return usageError{fmt.Errorf("--gpus-per-node and --nodes take a positive count")}
			}
			src, name, err := readImportInput(cmd, args[0])
			if err != nil {
				return err
			}
			res := megatron.Import(src, megatron.Options{File: name, Cluster: cluster, GPUsPerNode: gpus, Nodes: nodes, ScriptArgs: scriptArgs})
			return writeImport(cmd, out, res.Spec, res.Diags)
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "cluster preset of the stdlib (default "+megatron.DefaultCluster+")")
	cmd.Flags().IntVar(&gpus, "gpus-per-node", 0, "GPUs per node (default: torchrun's --nproc_per_node, else the preset's)")
	cmd.Flags().IntVar(&nodes, "nodes", 0, "nodes in the job (default: torchrun's --nnodes, else the fewest the degrees fit)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the spec to OUT.cue (default stdout)")
	return cmd
}

// readImportInput reads an importer's input file, or standard input for "-":
// at most one byte more than load.MaxInputBytes, so that an endless input
// (/dev/zero) ends, and the importer refuses a larger one (load.TooLarge).
func readImportInput(cmd *cobra.Command, name string) ([]byte, string, error) {
	var in io.Reader = cmd.InOrStdin()
	display := "<stdin>"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, name, err
		}
		defer f.Close()
		in, display = f, name
	}
	src, err := io.ReadAll(io.LimitReader(in, load.MaxInputBytes+1))
	return src, display, err
}

// writeImport prints an import's diagnostics and writes its spec to out
// (stdout for "" or "-"). A spec parc's checks refuse is still written: it
// says what the input says, and the errors point at the lines to change;
// the exit status is then 1, as it is when there is no spec at all.
func writeImport(cmd *cobra.Command, out string, spec []byte, diags diag.List) error {
	printDiags(cmd.ErrOrStderr(), relDiags(diags))
	if spec == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "parc import: %s; nothing written\n", summary(diags))
		return exitError{ExitSpec}
	}
	if out == "" || out == "-" {
		if _, err := cmd.OutOrStdout().Write(spec); err != nil {
			return err
		}
	} else {
		if err := writeFileAtomic(out, spec); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "parc import: wrote %s (%s)\n", diag.QuoteFile(out), summary(diags))
	}
	if diags.HasErrors() {
		return exitError{ExitSpec}
	}
	return nil
}

// writeFileAtomic writes data to a temporary file beside path and renames it.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(dirOf(path), ".parc-import-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if os.IsPathSeparator(path[i]) {
			return path[:i+1]
		}
	}
	return "."
}
