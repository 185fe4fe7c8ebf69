package report

import (
	"slices"
	"testing"

	"parc.dev/parc/internal/spec"
)

func pipelineSpec(layers, pp, vpp int, edit func(*spec.Parallel)) *spec.Spec {
	s := &spec.Spec{Model: spec.Model{Layers: layers}, Parallel: spec.Parallel{PP: pp, VPP: vpp}}
	if edit != nil {
		edit(&s.Parallel)
	}
	return s
}

func TestPipelineText(t *testing.T) {
	ptr := func(n int) *int { return &n }
	for _, c := range []struct {
		name   string
		s      *spec.Spec
		layers [][]int
		text   string
	}{
		{"no pipeline", pipelineSpec(32, 1, 1, nil), [][]int{{32}},
			"all 32 layers, the embedding and the loss on every GPU (pp 1, no pipeline)"},
		{"even", pipelineSpec(80, 4, 1, nil), [][]int{{20}, {20}, {20}, {20}},
			"80 layers over 4 pipeline stages: stage 0 20 + the embedding; stages 1–2 20 each; stage 3 20 + the loss"},
		// Llama 3.1 405B with --account-for-embedding/loss-in-pipeline-split:
		// 126 + 2 = 128 over 16 × 2 chunks of 4; the first chunk of rank 0
		// and the last of rank 15 give one layer each to the embedding and
		// the loss (get_num_layers_to_build).
		{"account for both", pipelineSpec(126, 16, 2, func(p *spec.Parallel) { p.AccountForEmbedding, p.AccountForLoss = true, true }),
			append(append([][]int{{3, 4}}, slices.Repeat([][]int{{4, 4}}, 14)...), []int{4, 3}),
			"126 layers over 16 pipeline stages × 2 virtual stages, the embedding and the loss each counted as a layer (account_for_embedding, account_for_loss): stage 0 7 (3+4) + the embedding; stages 1–14 8 (4+4) each; stage 15 7 (4+3) + the loss"},
		{"uneven", pipelineSpec(80, 4, 1, func(p *spec.Parallel) { p.FirstStageLayers, p.LastStageLayers = ptr(17), ptr(19) }),
			[][]int{{17}, {22}, {22}, {19}},
			"80 layers over 4 pipeline stages, uneven (first_stage_layers 17, last_stage_layers 19; the middle stages share the rest): stage 0 17 + the embedding; stages 1–2 22 each; stage 3 19 + the loss"},
		// The layout of issue 13 §3 over pp 4 × vpp 10: layout stage i is
		// virtual stage i/4 of rank i%4; stage 35 ("t*3") is rank 3's ninth
		// chunk, stage 39 ("tL") its tenth.
		{"layout", pipelineSpec(80, 4, 10, func(p *spec.Parallel) { l := "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"; p.Layout = &l }),
			[][]int{slices.Repeat([]int{2}, 10), slices.Repeat([]int{2}, 10), slices.Repeat([]int{2}, 10), append(slices.Repeat([]int{2}, 8), 3, 1)},
			"80 layers over 4 pipeline stages × 10 virtual stages, placed by the layout Et*2|(t*2|)*34,t*3|(t*2|)*3,tL (--pipeline-model-parallel-layout): stage 0 20 (2+2+2+2+2+2+2+2+2+2) + the embedding; stages 1–2 20 (2+2+2+2+2+2+2+2+2+2) each; stage 3 20 (2+2+2+2+2+2+2+2+3+1) + the loss"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps, ok := Pipeline(c.s)
			if !ok {
				t.Fatal("no split")
			}
			if !slices.EqualFunc(ps.Layers, c.layers, slices.Equal) {
				t.Errorf("layers %v, want %v", ps.Layers, c.layers)
			}
			if ps.Text != c.text {
				t.Errorf("text\n%s\nwant\n%s", ps.Text, c.text)
			}
		})
	}
	// A split Megatron cannot build has no description.
	if _, ok := Pipeline(pipelineSpec(82, 4, 5, nil)); ok {
		t.Error("82 layers over 4 × 5 described")
	}
}
