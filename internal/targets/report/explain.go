package report

import (
	"strings"
	"unicode/utf8"

	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/targets/template"
)

// Explain renders the plan as plain-text tables for `parc explain`: summary,
// parameters, memory per GPU per stage, pipeline, communication per axis,
// compute and step time, and the rank layout (with a map of the first two
// nodes). The caller prints it.
func Explain(p *plan.Plan) string {
	d := NewData(p, nil)
	var b strings.Builder
	b.WriteString(template.Comment(d.Title) + "\n\n")
	pairs(&b, d.Summary)
	if d.HasEstimate {
		section(&b, "Parameters")
		pairs(&b, d.Params)

		section(&b, "Memory per GPU")
		rows := [][]string{{"stage", "layers", "params", "in flight", "weights", "gradients", "optimizer", "activations", "(layers", "embedding", "logits", "recompute)", "total", "of GPU"}}
		for _, m := range d.Memory {
			stage := m.Stage
			if m.Peak {
				stage += " *"
			}
			rows = append(rows, []string{stage, m.Layers, m.Params, m.InFlight, m.Weights, m.Gradients, m.Optimizer,
				m.Activations, m.ActLayers, m.ActEmbedding, m.ActLogits, m.ActRecompute, m.Total, m.OfGPU})
		}
		table(&b, rows, 0)
		b.WriteString("* most loaded stage\n")
		for _, n := range d.MemoryNotes {
			b.WriteString(n + "\n")
		}

		section(&b, "Pipeline")
		pairs(&b, d.Pipeline)

		section(&b, "Communication per step (per GPU)")
		if len(d.Comms) == 0 {
			b.WriteString("one GPU: nothing to communicate\n")
		} else {
			rows = [][]string{{"axis", "group", "size", "bytes/step", "per layer", "link", "bandwidth", "time", "exposed"}}
			for _, c := range d.Comms {
				rows = append(rows, []string{c.Axis, c.Group, c.Size, c.Bytes, c.PerLayer, c.Link, c.Bandwidth, c.Time, c.Exposed})
			}
			table(&b, rows, 2)
			for _, c := range d.Comms {
				b.WriteString("  " + c.Axis + ": " + c.Pattern + "\n")
			}
		}

		section(&b, "Compute and step time")
		pairs(&b, d.Compute)

		if len(d.Faster) > 0 {
			section(&b, "Faster settings (each on its own, then together; every check passes)")
			pairs(&b, d.Faster)
		}
	}
	if p.Layout != nil {
		section(&b, "Rank layout")
		b.WriteString(LayoutSummary(p.Layout))
		b.WriteString("\n")
		b.WriteString(NodeMap(p.Layout, 2))
	}
	if len(d.Assumptions) > 0 {
		section(&b, "Assumptions")
		for _, a := range d.Assumptions {
			b.WriteString("- " + template.Comment(a) + "\n")
		}
	}
	return b.String()
}

func section(b *strings.Builder, title string) {
	b.WriteString("\n" + title + "\n" + strings.Repeat("-", utf8.RuneCountInString(title)) + "\n")
}

func pairs(b *strings.Builder, rows []Row) {
	w := 0
	for _, r := range rows {
		w = max(w, utf8.RuneCountInString(r.Label))
	}
	for _, r := range rows {
		b.WriteString(r.Label + strings.Repeat(" ", w-utf8.RuneCountInString(r.Label)) + "  " + template.Comment(r.Value) + "\n")
	}
}

// table aligns columns: the first `left` columns to the left, the rest (numbers) to the right.
func table(b *strings.Builder, rows [][]string, left int) {
	if left < 1 {
		left = 1
	}
	for _, r := range rows {
		for i, c := range r {
			r[i] = template.Comment(c) // a name never writes control characters to the terminal
		}
	}
	widths := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < left {
				line.WriteString(c + pad)
			} else {
				line.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}
