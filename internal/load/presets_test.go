package load

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every preset unifies with the closed schema and decodes, combined with
// every other preset of the other kind.
func TestEveryPresetVets(t *testing.T) {
	models, clusters := Presets("models"), Presets("clusters")
	require.NotEmpty(t, models)
	require.NotEmpty(t, clusters)
	for _, m := range []string{"gpt3_175b", "llama2_7b", "llama2_70b", "llama3_8b", "llama3_70b", "llama3_405b",
		"mixtral_8x7b", "mixtral_8x22b", "qwen2_5_72b", "deepseek_v3"} {
		assert.Contains(t, models, m, "the issue asks for this model preset")
	}
	for _, c := range []string{"dgx_a100_80g", "dgx_h100", "hgx_h200", "dgx_b200", "gb200_nvl72", "gb300_nvl72", "dgx_b300"} {
		assert.Contains(t, clusters, c, "the issue asks for this cluster preset")
	}
	for _, m := range models {
		for _, c := range clusters {
			src := mem(m+"-"+c+".cue", fmt.Sprintf(`
import (
	"parc.dev/stdlib/models"
	"parc.dev/stdlib/clusters"
)
model:   models.%s
cluster: clusters.%s & {nodes: 2}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64}
`, m, c))
			res, diags := Load(src)
			require.Empty(t, diags, "%s × %s", m, c)
			s, diags := res.Decode()
			require.Empty(t, diags, "%s × %s", m, c)
			assert.Positive(t, s.Model.Layers)
			assert.Positive(t, s.Cluster.GPU.BF16TFLOPs)
		}
	}
}
