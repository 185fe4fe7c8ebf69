package report

import (
	_ "embed"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/targets/pictures"
	"parc.dev/parc/internal/targets/template"
)

// The files this target writes.
const (
	FileName     = "report.md"
	TemplateName = FileName
	PipelineSVG  = "pipeline.svg"
	LayoutSVG    = "layout.svg"
)

//go:embed report.md.tmpl
var builtin string

// Render executes report.md's template (the user's override in set, or the
// built-in one) on the plan; warnings are listed in the report.
func Render(p *plan.Plan, warnings diag.List, set *template.Set) ([]byte, error) {
	return set.Render(TemplateName, builtin, NewData(p, warnings))
}

// Pictures draws the SVGs the report links: the pipeline schedule, and the
// rank layout when the plan has one.
func Pictures(p *plan.Plan) map[string][]byte {
	out := map[string][]byte{}
	pp, vpp := max(p.Spec.Parallel.PP, 1), max(p.Derived.VPP, 1)
	m, g := max(p.Derived.Microbatches, 1), p.Derived.MicrobatchGroup
	bubble := 0.0
	if p.Estimate != nil {
		bubble = p.Estimate.Pipeline.BubbleFraction
	}
	out[PipelineSVG] = pictures.PipelineSchedule(pp, vpp, m, g, bubble)
	if p.Layout != nil {
		out[LayoutSVG] = pictures.RankLayout(p.Layout)
	}
	return out
}

// Files is everything this target writes: report.md and its pictures.
func Files(p *plan.Plan, warnings diag.List, set *template.Set) (map[string][]byte, error) {
	md, err := Render(p, warnings, set)
	if err != nil {
		return nil, err
	}
	out := Pictures(p)
	out[FileName] = md
	return out, nil
}
