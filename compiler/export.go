package compiler

import (
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
)

// Exported is the resolved plan as `parc export` prints it: the spec with
// every default applied and every value Megatron derives written into its
// field (dp, etp, sp, tp_comm_overlap, ffn_hidden, kv_channels, query_groups, ...), plus the
// derived quantities that have no spec field (microbatches, padded vocabulary,
// expert dp, the layers of each pipeline stage).
type Exported struct {
	Source string `json:"source"`
	spec.Spec
	Derived spec.Derived `json:"derived"`
}

// Export resolves p for printing. It does not modify p.
func Export(p *plan.Plan) Exported {
	s := p.Spec
	d := p.Derived
	m := s.Model
	m.FFNHidden = ptr(d.FFNHidden)
	m.KVChannels = ptr(d.KVChannels)
	m.QueryGroups = ptr(d.QueryGroups)
	m.MaxPositionEmbeddings = ptr(d.MaxPositions)
	if m.MoE != nil {
		moe := *m.MoE
		moe.FFNHidden = ptr(d.MoEFFNHidden)
		m.MoE = &moe
	}
	s.Model = m
	par := s.Parallel
	par.ETP = ptr(d.ETP)
	par.DP = ptr(d.DP)
	par.SP = ptr(d.SP)
	par.MicrobatchGroupSize = ptr(d.MicrobatchGroup)
	par.TPCommOverlap = ptr(spec.TPCommOverlapOn(&s))
	s.Parallel = par
	return Exported{Source: p.Source, Spec: s, Derived: d}
}

func ptr[T any](v T) *T { return &v }
