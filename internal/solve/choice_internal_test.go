package solve

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/spec"
)

// TestSplitLayoutPlacesAsTheSplit: on random splits (even, accounted,
// uneven; with and without interleaving and MTP layers) the layout
// splitLayout writes gives every pipeline rank and virtual stage the layers
// the split gives it, with the embedding on the first stage and the MTP
// layers and the loss on the last, as Megatron's layout rules require
// (pipeline_parallel_layer_layout.py validate_layer_layout at d98e8a64).
func TestSplitLayoutPlacesAsTheSplit(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	tried := 0
	for range 20000 {
		L, pp, vpp, mtp := 1+rng.Intn(130), 1+rng.Intn(16), 1+rng.Intn(6), rng.Intn(2)
		p := spec.Parallel{PP: pp, VPP: vpp, AccountForEmbedding: rng.Intn(2) == 0, AccountForLoss: rng.Intn(2) == 0}
		if rng.Intn(3) == 0 {
			f, l := 1+rng.Intn(max(L/pp+2, 1)), 1+rng.Intn(max(L/pp+2, 1))
			p.AccountForEmbedding, p.AccountForLoss = false, false
			if rng.Intn(2) == 0 {
				p.FirstStageLayers = &f
			}
			if rng.Intn(2) == 0 {
				p.LastStageLayers = &l
			}
		}
		want := spec.StageLayers(L, p)
		l, ok := splitLayout(L, mtp, p)
		require.Equal(t, want != nil, ok, "%d layers %+v", L, p)
		if !ok {
			continue
		}
		tried++
		pl, err := spec.ParsePipelineLayout(l)
		require.NoError(t, err, l)
		require.Len(t, pl.Stages, pp*vpp, l)
		q := spec.Parallel{PP: pp, VPP: vpp, Layout: &l}
		assert.Equal(t, want, spec.StageLayers(L, q), "%d layers %+v: %s", L, p, l)
		flat := pl.Flat()
		assert.Equal(t, byte('E'), flat[0], l)
		assert.Equal(t, byte('L'), flat[len(flat)-1], l)
		assert.Equal(t, mtp, pl.Stages[len(pl.Stages)-1].Count('m'), l)
		assert.Equal(t, mtp, pl.Count('m'), l)
	}
	assert.Greater(t, tried, 1000)
}
