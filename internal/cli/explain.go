package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/targets/report"
)

func newExplainCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "explain FILE",
		Short: "Explain a plan: memory per GPU, pipeline bubble, comms per axis and link, rank layout",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			p, err := vetPlan(cmd, args[0])
			if err != nil {
				return err
			}
			if format == "json" {
				b, err := explainJSON(p)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), report.Explain(p))
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

// explainJSON merges the estimate's fields with the layout and the derived
// values into one object.
func explainJSON(p *plan.Plan) ([]byte, error) {
	est, err := json.Marshal(p.Estimate)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(est, &obj); err != nil {
		return nil, err
	}
	for k, v := range map[string]any{"layout": p.Layout, "derived": p.Derived, "source": p.Source} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		obj[k] = b
	}
	out, err := json.MarshalIndent(obj, "", "  ")
	return append(out, '\n'), err
}
