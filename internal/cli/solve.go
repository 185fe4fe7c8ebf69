package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/solve"
)

func newSolveCmd() *cobra.Command {
	var format string
	var top int
	cmd := &cobra.Command{
		Use:   "solve FILE",
		Short: "Choose the degrees left open (tp: int, pp: >=2, ...): the best plans by estimated step time",
		Long: `solve fills the parallel degrees, micro_batch and recompute a spec leaves open
(parallel.tp, pp, vpp, cp, ep, etp, train.micro_batch, train.recompute written as
"int", a disjunction such as "1 | 2 | 4 | 8", or bounds such as ">=2"). It ranks every
assignment that passes every check (Megatron-Core's rules, the topology, memory
fit) by the estimated step time and prints the best, with why each one ranks
below the first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if top < 1 {
				return usageError{fmt.Errorf("--top must be at least 1, got %d", top)}
			}
			stderr := cmd.ErrOrStderr()
			r, diags := compiler.Solve(compiler.Source{Path: args[0]}, top)
			diags = relDiags(diags)
			printDiags(stderr, diags)
			failed := r == nil || len(r.Candidates) == 0
			if failed {
				fmt.Fprintf(stderr, "parc solve: %s\n", summary(diags))
			}
			switch {
			case format == "json":
				rep := solveReport{Result: r, Diagnostics: diags}
				if r == nil {
					rep.Result = &solve.Result{}
				}
				if rep.Candidates == nil {
					rep.Candidates = []solve.Candidate{}
				}
				if rep.Diagnostics == nil {
					rep.Diagnostics = diag.List{}
				}
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			case !failed:
				if err := writeSolveText(cmd.OutOrStdout(), args[0], r); err != nil {
					return err
				}
			}
			if failed {
				return exitError{ExitSpec}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().IntVar(&top, "top", solve.DefaultTop, "how many plans to print, best first")
	return cmd
}

// solveReport is `parc solve --format json`: the result (candidates best
// first, the contract's fields and more) and the diagnostics also printed on
// stderr.
type solveReport struct {
	*solve.Result
	Diagnostics diag.List `json:"diagnostics"`
}

// writeSolveText prints the ranking as a table, then why each plan ranks
// below the first.
func writeSolveText(w io.Writer, file string, r *solve.Result) error {
	var b strings.Builder
	if len(r.Open) > 0 {
		fmt.Fprintf(&b, "%s: %s\n\n", file, r.Summary())
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n\n", n)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\ttp\tpp\tvpp\tcp\tep\tetp\tdp\tmicro_batch\trecompute\tstep (s)\tvs best\tmemory/GPU\tbubble\tMFU\t")
	for _, c := range r.Candidates {
		p, t := c.Parallel, c.Train
		vs := "best"
		if c.Rank > 1 {
			vs = fmt.Sprintf("%+.1f%%", c.VsBestPct)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%.4g\t%s\t%.1f GiB (%.0f%%)\t%.1f%%\t%.1f%%\t\n",
			c.Rank, p.TP, p.PP, p.VPP, p.CP, p.EP, p.ETP, p.DP, t.MicroBatch, t.Recompute, c.StepTimeS, vs,
			float64(c.Memory.PerGPUPeakBytes)/(1<<30), 100*c.Memory.FractionOfGPU,
			100*c.Breakdown.BubbleFraction, 100*c.MFU)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	for _, c := range r.Candidates {
		line := c.Why
		if len(c.Warnings) > 0 {
			line += " (warnings: " + strings.Join(c.Warnings, ", ") + ")"
		}
		fmt.Fprintf(&b, "%d. %s\n", c.Rank, line)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
