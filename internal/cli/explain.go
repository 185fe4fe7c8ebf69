package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/diag"
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
			v, err := newView(cmd, format)
			if err != nil {
				return err
			}
			p, diags := compiler.Vet(compiler.Source{Path: args[0]})
			if err := v.diagnostics(diags, p == nil, ""); err != nil {
				return err
			}
			return v.result(func(w io.Writer) error {
				_, err := fmt.Fprint(w, report.Explain(p))
				return err
			}, func() (any, error) { return explainJSON(p, diags) })
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

// explainJSON merges the estimate's fields with the layout, the derived
// values and the warnings into one object.
func explainJSON(p *plan.Plan, warnings diag.List) (json.RawMessage, error) {
	est, err := json.Marshal(p.Estimate)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(est, &obj); err != nil {
		return nil, err
	}
	for k, v := range map[string]any{"layout": p.Layout, "derived": p.Derived, "source": p.Source, "diagnostics": nonNil(relDiags(warnings))} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		obj[k] = b
	}
	return json.Marshal(obj)
}
