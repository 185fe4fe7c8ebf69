package estimate

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
)

// simulateRouting runs Megatron's router on the random logits of
// moe_router_force_load_balancing (moe_utils.py RandomSTE at d98e8a64: one
// standard normal per token and expert) through group_limited_topk when
// G > 0 (select the g of G consecutive-expert groups whose top k/g logits
// sum highest, then the top k experts of the selected groups; plain top k
// when G is 0), and counts, per token, the places of L consecutive experts
// its experts reach, other than the token's own (place 0): the mean over
// places other than the own of the chance one is reached.
func simulateRouting(E, k, G, g, L int, tokens int) float64 {
	r := rand.New(rand.NewSource(14))
	logits := make([]float64, E)
	places := E / L
	reached := 0
	idx := make([]int, 0, E)
	for range tokens {
		for i := range logits {
			logits[i] = r.NormFloat64()
		}
		idx = idx[:0]
		if G == 0 {
			for i := range E {
				idx = append(idx, i)
			}
		} else {
			type groupScore struct {
				g int
				v float64
			}
			scores := make([]groupScore, G)
			for gi := range G {
				x := append([]float64(nil), logits[gi*E/G:(gi+1)*E/G]...)
				sort.Sort(sort.Reverse(sort.Float64Slice(x)))
				for _, v := range x[:k/g] {
					scores[gi].v += v
				}
				scores[gi].g = gi
			}
			sort.Slice(scores, func(a, b int) bool { return scores[a].v > scores[b].v })
			for _, s := range scores[:g] {
				for i := s.g * E / G; i < (s.g+1)*E/G; i++ {
					idx = append(idx, i)
				}
			}
		}
		sort.Slice(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
		hit := map[int]bool{}
		for _, e := range idx[:k] {
			if p := e / L; p != 0 {
				hit[p] = true
			}
		}
		reached += len(hit)
	}
	return float64(reached) / float64(tokens) / float64(places-1)
}

// TestNodeLimitedRouting: the chance that a token's experts reach a rank or
// NVLink domain (routeHit, which sets the flex dispatcher's copies) agrees
// with Megatron's router run on the random logits the benchmark recipes
// force, with and without group-limited routing; and DeepSeek-V3's
// node-limited routing (256 experts, top 8, 8 groups, 4 selected, EP 64
// over 8 nodes) sends a token over the network to at most 4 nodes, as the
// DeepSeek-V3 report says (arXiv:2412.19437 §3.2.2) — counted without the
// groups, the flex dispatch would send it to 4.6.
func TestNodeLimitedRouting(t *testing.T) {
	const tokens = 5000
	for _, c := range []struct{ E, k, G, g, L int }{
		{256, 8, 8, 4, 32}, // DeepSeek-V3, EP 64 over 8 nodes: a node
		{256, 8, 8, 4, 4},  // the same: a rank
		{256, 8, 8, 4, 64}, // EP 32 over 4 nodes: a node holds two groups
		{256, 8, 8, 4, 8},  // the same: a rank
		{256, 8, 0, 0, 32}, // no groups
		{128, 8, 0, 0, 16}, // Qwen3-style: 128 experts, top 8
	} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			sim := simulateRouting(c.E, c.k, c.G, c.g, c.L, tokens)
			got := routeHit(float64(c.E), float64(c.k), float64(c.G), float64(c.g), float64(c.L))
			// routeHit puts exactly k/g experts in each selected group;
			// the router's split varies around it, which reaches a little
			// fewer places within a group (3.6% fewer ranks of 8 experts).
			assert.InEpsilon(t, sim, got, 0.05, "simulated %.4f, routeHit %.4f", sim, got)
		})
	}
	nodes := 7 * routeHit(256, 8, 8, 4, 32)
	assert.LessOrEqual(t, nodes, 4.0, "remote nodes a DeepSeek-V3 token reaches")
	assert.Greater(t, 7*routeHit(256, 8, 0, 0, 32), 4.0, "without the groups")
}
