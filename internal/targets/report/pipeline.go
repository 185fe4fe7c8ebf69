package report

import (
	"fmt"
	"strconv"
	"strings"

	"parc.dev/parc/internal/spec"
)

// PipelineSplit is where a plan's decoder layers run: Layers[r][v] is the
// number of decoder layers of virtual stage v on pipeline rank r, as
// Megatron-Core builds them (spec.StageLayers), and Text says it in words,
// naming the option that makes the split uneven.
type PipelineSplit struct {
	Layers [][]int `json:"layers"`
	// Layout is parallel.layout (--pipeline-model-parallel-layout), when set.
	Layout string `json:"layout,omitempty"`
	// EmbeddingRank and LossRank are the pipeline ranks that hold the input
	// embedding and the output layer with the loss.
	EmbeddingRank int    `json:"embedding_rank"`
	LossRank      int    `json:"loss_rank"`
	Text          string `json:"text"`
}

// Pipeline describes the pipeline split of s. It returns false when the
// split is not possible (the checks report why).
func Pipeline(s *spec.Spec) (PipelineSplit, bool) {
	p := s.Parallel
	stages := spec.StageLayers(s.Model.Layers, p)
	if stages == nil {
		return PipelineSplit{}, false
	}
	out := PipelineSplit{Layers: make([][]int, len(stages)), LossRank: p.PP - 1}
	for r, vs := range stages {
		out.Layers[r] = make([]int, len(vs))
		for v, lr := range vs {
			out.Layers[r][v] = lr.Count
		}
	}
	if p.Layout != nil {
		out.Layout = *p.Layout
		if l, err := spec.ParsePipelineLayout(*p.Layout); err == nil {
			// Stage i of the layout is virtual stage i/pp of rank i%pp.
			for i, st := range l.Stages {
				if st.Count('E') > 0 {
					out.EmbeddingRank = i % p.PP
				}
				if st.Count('L') > 0 {
					out.LossRank = i % p.PP
				}
			}
		}
	}
	out.Text = pipelineText(s, out)
	return out, true
}

func pipelineText(s *spec.Spec, ps PipelineSplit) string {
	p := s.Parallel
	n := s.Model.Layers
	if p.PP == 1 && p.VPP == 1 {
		return fmt.Sprintf("all %d layers, the embedding and the loss on every GPU (pp 1, no pipeline)", n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d layers over %d pipeline stages", n, p.PP)
	if p.VPP > 1 {
		fmt.Fprintf(&b, " × %d virtual stages", p.VPP)
	}
	switch {
	case p.Layout != nil:
		fmt.Fprintf(&b, ", placed by the layout %s (--pipeline-model-parallel-layout)", *p.Layout)
	case p.FirstStageLayers != nil || p.LastStageLayers != nil:
		var parts []string
		if p.FirstStageLayers != nil {
			parts = append(parts, fmt.Sprintf("first_stage_layers %d", *p.FirstStageLayers))
		}
		if p.LastStageLayers != nil {
			parts = append(parts, fmt.Sprintf("last_stage_layers %d", *p.LastStageLayers))
		}
		fmt.Fprintf(&b, ", uneven (%s; the middle stages share the rest)", strings.Join(parts, ", "))
	case p.AccountForEmbedding && p.AccountForLoss:
		b.WriteString(", the embedding and the loss each counted as a layer (account_for_embedding, account_for_loss)")
	case p.AccountForEmbedding:
		b.WriteString(", the embedding counted as a layer (account_for_embedding)")
	case p.AccountForLoss:
		b.WriteString(", the loss counted as a layer (account_for_loss)")
	}
	b.WriteString(": ")
	// Consecutive ranks with the same layers are one group.
	var groups []string
	for r := 0; r < len(ps.Layers); {
		end := r
		for end+1 < len(ps.Layers) && same(ps.Layers[end+1], ps.Layers[r]) &&
			end+1 != ps.EmbeddingRank && end+1 != ps.LossRank && r != ps.EmbeddingRank && r != ps.LossRank {
			end++
		}
		who := fmt.Sprintf("stage %d", r)
		if end > r {
			who = fmt.Sprintf("stages %d–%d", r, end)
		}
		g := who + " " + layersText(ps.Layers[r])
		if end > r {
			g += " each"
		}
		var with []string
		if r == ps.EmbeddingRank {
			with = append(with, "the embedding")
		}
		if end == ps.LossRank {
			with = append(with, "the loss")
		}
		if len(with) > 0 {
			g += " + " + strings.Join(with, " and ")
		}
		groups = append(groups, g)
		r = end + 1
	}
	b.WriteString(strings.Join(groups, "; "))
	return b.String()
}

// layersText is one rank's layers: "20", or with virtual stages "19 (3+4+4+4+4)".
func layersText(vs []int) string {
	total := 0
	parts := make([]string, len(vs))
	for i, v := range vs {
		total += v
		parts[i] = strconv.Itoa(v)
	}
	if len(vs) == 1 {
		return strconv.Itoa(total)
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, "+"))
}

func same(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
