package megatron

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	mg "parc.dev/parc/internal/targets/megatron"
)

// TestRulesNameMegatronDests: every dest the explicit rules read is a dest
// of Megatron's parser (options.tsv), under every branch the rules take.
func TestRulesNameMegatronDests(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--group-query-attention", "--swiglu", "--normalization", "RMSNorm", "--use-rope-scaling", "--multi-latent-attention",
			"--mtp-num-layers", "1", "--num-experts", "8", "--moe-shared-expert-intermediate-size", "8", "--tensor-model-parallel-size", "2",
			"--use-tp-pp-dp-mapping", "--num-virtual-stages-per-pipeline-rank", "2", "--fp8-format", "hybrid", "--recompute-granularity", "full",
			"--data-path", "x", "--save", "y", "--moe-layer-freq", "([0]*1+[1]*3)"},
		{"--fp16", "--rotary-scaling-factor", "4", "--multi-latent-attention", "--squared-relu"},
	} {
		ns, errs := mg.Parse(args)
		require.Empty(t, errs)
		m := &mapper{ns: ns, claimed: map[string]bool{}, s: theSchema(), unknown: map[string]bool{}}
		m.explicit()
		require.Empty(t, slices.Sorted(maps.Keys(m.unknown)))
		for d := range m.claimed {
			_, ok := mg.Defaults[d]
			require.True(t, ok, "claims %s, not a dest of Megatron's parser", d)
		}
		for _, a := range m.out {
			_, ok := m.s.field(a.path)
			require.True(t, ok, "%s is not a spec field", a.path)
		}
	}
}
