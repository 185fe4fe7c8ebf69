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
		"mixtral_8x7b", "mixtral_8x22b", "qwen2_5_72b", "qwen3_8b", "qwen3_32b", "qwen3_30b_a3b", "qwen3_235b_a22b", "deepseek_v3"} {
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

// A preset is a starting point: each of its fields can be overridden, and a
// field left alone keeps the preset's value even where the schema's default
// differs (rotary_base 500000, not the schema's 10000).
func TestPresetFieldsAreDefaults(t *testing.T) {
	load := func(override string) (*Result, error) {
		res, diags := Load(mem("p.cue", `
import (
	"parc.dev/stdlib/models"
	"parc.dev/stdlib/clusters"
)
model:   models.llama3_8b & {`+override+`}
cluster: clusters.dgx_h100 & {nodes: 1}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64}
`))
		if diags.HasErrors() {
			return nil, fmt.Errorf("%v", diags)
		}
		return res, nil
	}
	res, err := load("")
	require.NoError(t, err)
	s, diags := res.Decode()
	require.Empty(t, diags)
	assert.Equal(t, 500000, s.Model.RotaryBase)
	assert.Equal(t, 131072, *s.Model.MaxPositionEmbeddings)
	assert.Equal(t, "swiglu", s.Model.Activation)
	assert.False(t, s.Model.TieEmbeddings)

	res, err = load(`max_position_embeddings: 8192, rotary_base: 10000, activation: "gelu", tie_embeddings: true, rope_scaling_factor: 4`)
	require.NoError(t, err)
	s, diags = res.Decode()
	require.Empty(t, diags)
	assert.Equal(t, 10000, s.Model.RotaryBase)
	assert.Equal(t, 8192, *s.Model.MaxPositionEmbeddings)
	assert.Equal(t, "gelu", s.Model.Activation)
	assert.True(t, s.Model.TieEmbeddings)
	assert.Equal(t, 4.0, *s.Model.RopeScalingFactor)
	assert.Equal(t, 32, s.Model.Layers, "the fields not overridden stay the preset's")

	// The schema still applies to an override.
	res, err = load(`activation: "relu"`)
	if err == nil {
		_, diags = res.Decode()
		require.True(t, diags.HasErrors(), "relu is not an activation of the schema")
	}
}

// Cluster presets are starting points too: an H100 NVL-class 94 GiB part, a
// different link or a node count of the user's own replace the datasheet
// figures without a conflict, and the fields left alone keep them.
func TestClusterPresetFieldsAreDefaults(t *testing.T) {
	res, diags := Load(mem("p.cue", `
import (
	"parc.dev/stdlib/models"
	"parc.dev/stdlib/clusters"
)
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 4, gpu: {memory_gib: 94, name: "H100-94GB"}, network_gbps: 25, nvlink_domain: 4}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64}
`))
	require.False(t, diags.HasErrors(), "%v", diags)
	s, diags := res.Decode()
	require.Empty(t, diags)
	assert.Equal(t, 94.0, s.Cluster.GPU.MemoryGiB)
	assert.Equal(t, "H100-94GB", s.Cluster.GPU.Name)
	assert.Equal(t, 25.0, s.Cluster.NetworkGBps)
	assert.Equal(t, 4, s.Cluster.NVLinkDomain)
	assert.Equal(t, 4, s.Cluster.Nodes)
	assert.Equal(t, 989.0, s.Cluster.GPU.BF16TFLOPs, "the fields not overridden stay the preset's")
	assert.Equal(t, 450.0, s.Cluster.NVLinkGBps)
	assert.Equal(t, 8, s.Cluster.GPUsPerNode)

	// The schema still applies to an override.
	bad, diags := Load(mem("p.cue", `
import (
	"parc.dev/stdlib/models"
	"parc.dev/stdlib/clusters"
)
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 1, gpu: {memory_gib: 0}}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64}
`))
	if !diags.HasErrors() {
		_, diags = bad.Decode()
	}
	require.True(t, diags.HasErrors(), "memory_gib 0 is below the schema's bound")
}
