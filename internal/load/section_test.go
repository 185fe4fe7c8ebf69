package load

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMissingSection: a spec without cluster gets one error at the top naming
// the section and the presets, whether or not it still imports the cluster
// presets (issue 12 item 16: CUE's "imported and not used", or 8 errors at 1:1).
func TestMissingSection(t *testing.T) {
	noCluster := "model: {layers: 32, hidden: 4096, heads: 32, vocab: 32000}\ntrain: {seq_length: 4096, micro_batch: 1, global_batch: 64}\n"
	for name, text := range map[string]string{
		"no import":     noCluster,
		"unused import": "import \"parc.dev/stdlib/clusters\"\n\n" + noCluster,
		"both imports":  "import (\n\t\"parc.dev/stdlib/models\"\n\t\"parc.dev/stdlib/clusters\"\n)\n\n" + strings.Replace(noCluster, "model: {layers: 32, hidden: 4096, heads: 32, vocab: 32000}", "model: models.llama3_8b", 1),
	} {
		t.Run(name, func(t *testing.T) {
			l := diagsFor(t, mem("plan.cue", text))
			require.Len(t, l, 1, "%v", l)
			d := l[0]
			assert.Equal(t, "missing-section", d.Code)
			assert.Equal(t, "cluster", d.Path)
			assert.Equal(t, [2]int{1, 1}, [2]int{d.Line, d.Column})
			assert.Contains(t, d.Message, "no cluster section")
			for _, p := range Presets("clusters") {
				assert.Contains(t, d.Hint, p)
			}
			assert.NotContains(t, d.Hint, "_|_")
		})
	}
	// Every section missing: one error each.
	l := diagsFor(t, mem("plan.cue", "parallel: tp: 2\n"))
	assert.Equal(t, []string{"missing-section", "missing-section", "missing-section"}, l.Codes(), "%v", l)
}

// TestHCLPositionsAtAttribute: a rule's diagnostic on an HCL spec points at
// the attribute, also when it is the first of its block (CUE places that
// field at the block's brace), exactly as in the CUE spec.
func TestHCLPositionsAtAttribute(t *testing.T) {
	res, diags := Load(mem("plan.hcl", goodHCL))
	require.Empty(t, diags)
	lines := strings.Split(goodHCL, "\n")
	for _, path := range []string{"parallel.tp", "cluster.gpu.name", "model.layers", "train.seq_length", "cluster.nodes"} {
		p := res.Locate(path)
		name := path[strings.LastIndex(path, ".")+1:]
		line := lines[p.Line-1]
		assert.Equal(t, name, strings.TrimSpace(line[p.Column-1:])[:len(name)], "%s at %v: %q", path, p, line)
	}
}

// TestHCLSyntaxHints: every HCL syntax error comes with a hint.
func TestHCLSyntaxHints(t *testing.T) {
	for _, text := range []string{"model {\n  layers = \n}\n", "model {\n  layers: 3\n}\n", "model {\n  layers = 3\n", "model {\n  name = \"x\n}\n", "model {\n  la yers = 3\n}\n"} {
		l := diagsFor(t, mem("plan.hcl", text))
		require.NotEmpty(t, l, text)
		for _, d := range l {
			assert.Equal(t, "syntax", d.Code)
			assert.NotEmpty(t, d.Hint, "%q: %v", text, d)
			assert.True(t, d.IsValid(), "%v", d)
		}
	}
}

// TestMissingSectionHintPasses: what the hint tells the user to add, added,
// gives a spec the loader accepts (for each section in turn).
func TestMissingSectionHintPasses(t *testing.T) {
	const imports = "import (\n\t\"parc.dev/stdlib/models\"\n\t\"parc.dev/stdlib/clusters\"\n)\n\n"
	sections := map[string]string{
		"model":   "model: models.llama3_8b\n",
		"cluster": "cluster: clusters.dgx_h100 & {nodes: 1}\n",
		"train":   "train: {seq_length: 4096, micro_batch: 1, global_batch: 64}\n",
	}
	for missing := range sections {
		t.Run(missing, func(t *testing.T) {
			text := imports
			for name, s := range sections {
				if name != missing {
					text += s
				}
			}
			l := diagsFor(t, mem("plan.cue", text))
			require.Len(t, l, 1, "%v", l)
			hint := l[0].Hint
			add, ok := strings.CutPrefix(hint, "add ")
			require.True(t, ok, hint)
			if i := strings.Index(add, " (import"); i >= 0 {
				add = add[:i]
			}
			add = strings.SplitN(add, " (the hint", 2)[0]
			res, diags := Load(mem("plan.cue", text+add+"\n"))
			require.Empty(t, diags, "adding %q", add)
			_, diags = res.Decode()
			require.Empty(t, diags, "adding %q", add)
		})
	}
}

// TestMissingSectionHCLHintPasses: in an HCL spec the hint names the block
// and a preset's figures (HCL cannot import presets); written out as HCL, they
// load, and equal the preset's.
func TestMissingSectionHCLHintPasses(t *testing.T) {
	blocks := map[string]string{
		"model": "model {\n  layers = 32\n  hidden = 4096\n  ffn_hidden = 14336\n  heads = 32\n  query_groups = 8\n  vocab = 128256\n" +
			"  activation = \"swiglu\"\n  normalization = \"rmsnorm\"\n  position_embedding = \"rope\"\n  rotary_base = 500000\n  tie_embeddings = false\n  bias = false\n}\n",
		"cluster": "cluster {\n  nodes = 1\n  gpus_per_node = 8\n  nvlink_gbps = 450\n  network_gbps = 50\n" +
			"  gpu {\n    name = \"H100-SXM5-80GB\"\n    memory_gib = 80\n    bf16_tflops = 989\n  }\n}\n",
		"train": "train {\n  seq_length = 4096\n  micro_batch = 1\n  global_batch = 64\n  iters = 1000\n}\n",
	}
	for missing := range blocks {
		t.Run(missing, func(t *testing.T) {
			text := ""
			for name, b := range blocks {
				if name != missing {
					text += b
				}
			}
			l := diagsFor(t, mem("plan.hcl", text))
			require.Len(t, l, 1, "%v", l)
			assert.Equal(t, "missing-section", l[0].Code)
			// Every attribute the block writes is named in the hint.
			for _, line := range strings.Split(blocks[missing], "\n") {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), " = "); ok {
					assert.Contains(t, l[0].Hint, k+" = "+v, "the hint names %s", k)
				}
			}
		})
	}
	// Written out, the blocks load; the model and cluster are the presets'.
	res, diags := Load(mem("plan.hcl", blocks["model"]+blocks["cluster"]+blocks["train"]))
	require.Empty(t, diags)
	h, diags := res.Decode()
	require.Empty(t, diags)
	res, diags = Load(mem("plan.cue", "import (\n\t\"parc.dev/stdlib/models\"\n\t\"parc.dev/stdlib/clusters\"\n)\n\n"+
		"model: models.llama3_8b\ncluster: clusters.dgx_h100 & {nodes: 1}\ntrain: {seq_length: 4096, micro_batch: 1, global_batch: 64, iters: 1000}\n"))
	require.Empty(t, diags)
	c, diags := res.Decode()
	require.Empty(t, diags)
	h.Model.Name, c.Model.Name = "", ""
	h.Model.MaxPositionEmbeddings, c.Model.MaxPositionEmbeddings = nil, nil
	h.Model.RopeScalingFactor, c.Model.RopeScalingFactor = nil, nil
	assert.Equal(t, c.Model, h.Model, "llama3_8b's shape (max_position_embeddings and RoPE scaling aside)")
	assert.Equal(t, c.Cluster.GPUsPerNode, h.Cluster.GPUsPerNode)
	assert.Equal(t, c.Cluster.NVLinkGBps, h.Cluster.NVLinkGBps)
	assert.Equal(t, c.Cluster.NetworkGBps, h.Cluster.NetworkGBps)
	assert.Equal(t, c.Cluster.GPU.MemoryGiB, h.Cluster.GPU.MemoryGiB)
	assert.Equal(t, c.Cluster.GPU.BF16TFLOPs, h.Cluster.GPU.BF16TFLOPs)
	assert.Equal(t, c.Cluster.GPU.Name, h.Cluster.GPU.Name)
}
