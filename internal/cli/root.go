package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"parc.dev/parc/internal/diag"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command.
const (
	ExitOK    = 0
	ExitSpec  = 1 // the spec has errors (or compile --check found stale files)
	ExitUsage = 2 // bad usage or an internal error
)

// exitError carries an exit code out of a command's RunE.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// usageError marks an error as the user's misuse of the command line.
type usageError struct{ error }

// Main runs parc with args and returns the process exit code. It never lets a
// panic trace reach the user.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "parc: internal error: %v\n", r)
			if os.Getenv("PARC_DEBUG") != "" {
				fmt.Fprintf(stderr, "%s\n", debug.Stack())
			} else {
				fmt.Fprintln(stderr, "parc: this is a bug in parc; set PARC_DEBUG=1 for details and report it")
			}
			code = ExitUsage
		}
	}()
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	var ee exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	default:
		lines := strings.Split(err.Error(), "\n")
		for i := range lines {
			lines[i] = diag.Printable(lines[i])
		}
		fmt.Fprintf(stderr, "parc: %s\n", strings.Join(lines, "\n"))
		return ExitUsage
	}
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "parc",
		Short: "parc compiles distributed-training plans for Megatron-Core",
		Long: `parc checks a training plan (model, cluster, parallel degrees) before any GPU is
allocated, lays the ranks out on the cluster and emits Megatron-Core arguments,
a Slurm batch script, a torchrun script and a launch plan.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate(versionText())
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())}
	})
	for _, c := range commands() {
		root.AddCommand(c)
	}
	return root
}
