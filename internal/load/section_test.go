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
