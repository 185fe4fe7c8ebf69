// Package report is a target: report.md, the plan in numbers — parameters,
// memory per GPU on every pipeline stage, the pipeline bubble, bytes per step
// on every parallel axis and the link each crosses, FLOPs, step time, MFU,
// the rank layout — with the two pictures of internal/targets/pictures beside it
// (pipeline.svg, layout.svg). Explain renders the same numbers as plain-text
// tables for `parc explain`.
//
// report.md comes from the embedded template report.md.tmpl, executed by
// internal/targets/template (missingkey=error, sprig's hermetic functions), which a
// file report.md.tmpl in the user's template directory overrides. Every
// number reaches the template already formatted (Data).
package report
