package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/solve"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/targets/report"
)

func newSolveCmd() *cobra.Command {
	var format string
	var top int
	var headroom float64
	cmd := &cobra.Command{
		Use:   "solve FILE",
		Short: "Choose the degrees left open (tp: int, pp: >=2, ...): the best plans by estimated step time",
		Long: `solve fills the fields a spec leaves open (parallel.tp, pp, vpp, cp, ep, etp,
account_for_embedding, account_for_loss, first_stage_layers, last_stage_layers,
train.micro_batch, recompute, distributed_optimizer, fsdp, written as "int",
"bool", a disjunction such as "1 | 2 | 4 | 8", or bounds such as ">=2"); with pp
open and no split written it also chooses the pipeline split. It ranks every
assignment that passes every check (Megatron-Core's rules, the topology, memory
within the headroom) by the estimated step time, lists the best distinct parallel
shapes (shapes within the noise band of the fastest: the simplest first), and
says why the first was chosen and why each other ranks below it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := newView(cmd, format)
			if err != nil {
				return err
			}
			if top < 1 {
				return usageError{fmt.Errorf("--top must be at least 1, got %d", top)}
			}
			// Written so that NaN, which compares false to every bound, fails.
			if cmd.Flags().Changed("memory-headroom") && !(headroom > 0 && headroom <= 1) {
				return usageError{fmt.Errorf("--memory-headroom must be a fraction of the GPU's memory in (0, 1], got %g", headroom)}
			}
			r, diags := compiler.SolveWith(compiler.Source{Path: args[0]}, solve.Options{Top: top, MemoryHeadroom: headroom})
			failed := r == nil || len(r.Candidates) == 0
			// solve's JSON carries the diagnostics with the (possibly empty)
			// ranking, failed or not.
			v.failedResult = true
			derr := v.diagnostics(diags, failed, "")
			if failed && !v.json {
				return derr
			}
			err = v.result(func(w io.Writer) error { return writeSolveText(w, args[0], r) }, func() (any, error) {
				rep := solveReport{Result: r, Diagnostics: nonNil(relDiags(diags))}
				if r == nil {
					rep.Result = &solve.Result{}
				}
				rep.Candidates = []solveCandidate{}
				for _, c := range rep.Result.Candidates {
					sc := solveCandidate{Candidate: c}
					if c.Spec != nil {
						if ps, ok := report.Pipeline(c.Spec); ok {
							sc.Pipeline = &ps
						}
					}
					rep.Candidates = append(rep.Candidates, sc)
				}
				return rep, nil
			})
			if err != nil {
				return err
			}
			return derr
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().IntVar(&top, "top", solve.DefaultTop, "how many parallel shapes to print, best first")
	cmd.Flags().Float64Var(&headroom, "memory-headroom", 0,
		fmt.Sprintf("the largest fraction of GPU memory a plan's estimated peak may use (default: the spec's solve.memory_headroom, else %g)", solve.DefaultMemoryHeadroom))
	return cmd
}

// solveReport is `parc solve --format json`: the result (candidates best
// first, the contract's fields and more) and the diagnostics also printed on
// stderr.
type solveReport struct {
	*solve.Result
	// Candidates replaces Result.Candidates in the JSON, in its place:
	// each candidate with its pipeline split.
	Candidates  []solveCandidate `json:"-"`
	Diagnostics diag.List        `json:"diagnostics"`
}

// MarshalJSON writes the result's fields in their order, the candidates
// (with their pipeline) where Result has them, then the diagnostics.
func (r solveReport) MarshalJSON() ([]byte, error) {
	base, err := json.Marshal(struct {
		*solve.Result
		Diagnostics diag.List `json:"diagnostics"`
	}{r.Result, r.Diagnostics})
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(base))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for first := true; dec.More(); first = false {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if key == "candidates" {
			if raw, err = json.Marshal(r.Candidates); err != nil {
				return nil, err
			}
		}
		k, _ := json.Marshal(key)
		if !first {
			out.WriteByte(',')
		}
		out.Write(k)
		out.WriteByte(':')
		out.Write(raw)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// solveCandidate is a candidate with where its layers run: the layers of
// each pipeline rank and virtual stage, the layout string when there is
// one, and the ranks of the embedding and the loss.
type solveCandidate struct {
	solve.Candidate
	Pipeline *report.PipelineSplit `json:"pipeline,omitempty"`
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
	fmt.Fprintln(tw, "#\ttp\tpp\tvpp\tcp\tep\tetp\tdp\tsplit\tmicro_batch\trecompute\toptimizer\tstep (s)\tvs best\tmemory/GPU\tbubble\tMFU\tvariants\t")
	for _, c := range r.Candidates {
		p, t := c.Parallel, c.Train
		vs := "best"
		if c.Rank > 1 {
			vs = fmt.Sprintf("%+.1f%%", c.VsBestPct)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%.4g\t%s\t%.1f GiB (%.0f%%)\t%.1f%%\t%.1f%%\t%d\t\n",
			c.Rank, p.TP, p.PP, p.VPP, p.CP, p.EP, p.ETP, p.DP, splitText(p), t.MicroBatch, recomputeText(t), optimizerText(t),
			c.StepTimeS, vs, float64(c.Memory.PerGPUPeakBytes)/(1<<30), 100*c.Memory.FractionOfGPU,
			100*c.Breakdown.BubbleFraction, 100*c.MFU, len(c.Variants))
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
	if r.Explanation != "" {
		fmt.Fprintf(&b, "\n%s\n", r.Explanation)
	}
	if r.Run != nil {
		fmt.Fprintf(&b, "\nThe pick's training run: %s.\n", report.RunText(r.Run))
	}
	if r.Accuracy != nil {
		fmt.Fprintf(&b, "\nStep-time accuracy: %s.\n", report.AccuracyText(r.Accuracy))
	}
	if len(r.FasterSettings) > 0 {
		b.WriteString("\nSettings the spec leaves off that would each shorten the pick's step (every check passes):\n")
		for _, f := range r.FasterSettings {
			fmt.Fprintf(&b, "  %s\n", report.FasterSettingText(f))
		}
		if r.FasterTogether != nil {
			fmt.Fprintf(&b, "  %s\n", report.FasterTogetherText(r.FasterTogether))
		}
	}
	if len(r.Candidates) > 0 && r.Candidates[0].Spec != nil {
		if ps, ok := report.Pipeline(r.Candidates[0].Spec); ok {
			fmt.Fprintf(&b, "\nIts pipeline: %s.\n", ps.Text)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// splitText is a candidate's pipeline split in a table cell: "even",
// "+emb+loss" (accounted for), "7|8|7" (first, middle, last stage layers).
func splitText(p solve.Parallel) string {
	switch {
	case p.Layout != nil:
		return "layout " + spec.ShowLayout(*p.Layout) // a layout may spell out every layer
	case p.FirstStageLayers != nil || p.LastStageLayers != nil:
		var parts []string
		if p.FirstStageLayers != nil {
			parts = append(parts, fmt.Sprintf("first %d", *p.FirstStageLayers))
		}
		if p.LastStageLayers != nil {
			parts = append(parts, fmt.Sprintf("last %d", *p.LastStageLayers))
		}
		return strings.Join(parts, " ")
	case p.AccountForEmbedding && p.AccountForLoss:
		return "+emb+loss"
	case p.AccountForEmbedding:
		return "+emb"
	case p.AccountForLoss:
		return "+loss"
	}
	return "even"
}

// recomputeText is the recompute column: the mode, and the modules when
// the plan writes them ("selective[mla_up_proj,mlp]").
func recomputeText(t solve.Train) string {
	if t.RecomputeModules == nil {
		return t.Recompute
	}
	return t.Recompute + "[" + strings.Join(t.RecomputeModules, ",") + "]"
}

func optimizerText(t solve.Train) string {
	switch {
	case t.FSDP:
		return "fsdp"
	case t.DistributedOptimizer:
		return "distributed"
	}
	return "replicated"
}
