package load

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

const goodCUE = `
model: {layers: 32, hidden: 4096, heads: 32, vocab: 32000}
cluster: {
	nodes: 1
	gpus_per_node: 8
	gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}
	nvlink_gbps: 450
	network_gbps: 50
}
parallel: {tp: 2}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64}
`

const goodHCL = `
model {
  layers = 32
  hidden = 4096
  heads  = 32
  vocab  = 32000
}
cluster {
  nodes         = 1
  gpus_per_node = 8
  gpu {
    name        = "H100"
    memory_gib  = 80
    bf16_tflops = 989
  }
  nvlink_gbps  = 450
  network_gbps = 50
  env = { NCCL_DEBUG = "WARN" }
}
parallel {
  tp = 2
}
train {
  seq_length   = 4096
  micro_batch  = 1
  global_batch = 64
}
`

func mem(name, text string) Source {
	return Source{Path: filepath.Join(os.TempDir(), "parc-load-test", name), Data: []byte(text)}
}

func TestLoadCUEAndHCLAgree(t *testing.T) {
	for _, src := range []Source{mem("plan.cue", goodCUE), mem("plan.hcl", goodHCL)} {
		res, diags := Load(src)
		require.Empty(t, diags, "%s", src.Path)
		require.NotNil(t, res)
		s, diags := res.Decode()
		require.Empty(t, diags, "%s", src.Path)
		assert.Equal(t, 2, s.Parallel.TP)
		assert.Equal(t, 1, s.Parallel.PP, "schema default")
		assert.Equal(t, "tp-cp-ep-dp-pp", s.Parallel.Order)
		assert.Equal(t, 8, s.Cluster.NVLinkDomain, "nvlink_domain defaults to gpus_per_node")
		assert.Equal(t, 64, s.Train.GlobalBatch)
	}
}

// diagsFor loads and decodes, returning every diagnostic.
func diagsFor(t testing.TB, src Source) diag.List {
	t.Helper()
	res, diags := Load(src)
	if res == nil {
		return diags
	}
	_, ds := res.Decode()
	return append(diags, ds...)
}

func find(l diag.List, code string) *diag.Diagnostic {
	for i := range l {
		if l[i].Code == code {
			return &l[i]
		}
	}
	return nil
}

func TestSameMistakeSameDiagnosticInBothLanguages(t *testing.T) {
	cue := strings.Replace(goodCUE, "parallel: {tp: 2}", "parallel: {tp: 2, ppp: 2}", 1)
	hcl := strings.Replace(goodHCL, "  tp = 2\n", "  tp = 2\n  ppp = 2\n", 1)
	for _, tc := range []struct {
		src       Source
		line, col int
	}{
		{mem("plan.cue", cue), 10, 19},
		{mem("plan.hcl", hcl), 22, 3},
	} {
		l := diagsFor(t, tc.src)
		d := find(l, "unknown-field")
		require.NotNil(t, d, "%s: %v", tc.src.Path, l)
		assert.Equal(t, "parallel.ppp", d.Path)
		assert.Contains(t, d.Message, `did you mean "pp"?`)
		assert.Equal(t, tc.src.Path, d.File)
		assert.Equal(t, tc.line, d.Line, "%s: %v", tc.src.Path, d)
		assert.Equal(t, tc.col, d.Column, "%s: %v", tc.src.Path, d)
	}
}

func TestEveryMistakeAtOnce(t *testing.T) {
	bad := strings.NewReplacer(
		"nodes: 1", "nodes: 0",
		"global_batch: 64", `global_batch: "64"`,
		"parallel: {tp: 2}", `parallel: {tp: 2, zz: 1}`,
		"vocab: 32000", "vocab: 32000, activation: \"relu\"",
	).Replace(goodCUE)
	bad = strings.Replace(bad, "heads: 32, ", "", 1)
	l := diagsFor(t, mem("plan.cue", bad))
	codes := map[string]string{}
	for _, d := range l {
		codes[d.Path] = d.Code
		assert.True(t, d.IsValid(), "every diagnostic has a position: %v", d)
		assert.Equal(t, mem("plan.cue", "").Path, d.File, "never the schema's position: %v", d)
	}
	assert.Equal(t, "out-of-range", codes["cluster.nodes"], "%v", l)
	assert.Equal(t, "type-mismatch", codes["train.global_batch"], "%v", l)
	assert.Equal(t, "unknown-field", codes["parallel.zz"], "%v", l)
	assert.Equal(t, "invalid-value", codes["model.activation"], "%v", l)
	assert.Equal(t, "missing-field", codes["model.heads"], "%v", l)
}

func TestSyntaxErrors(t *testing.T) {
	for _, src := range []Source{mem("plan.cue", "model: {layers: 32\n"), mem("plan.hcl", "model {\n layers = \n}\n")} {
		res, l := Load(src)
		assert.Nil(t, res)
		require.NotEmpty(t, l, "%s", src.Path)
		assert.Equal(t, "syntax", l[0].Code, "%v", l)
		assert.True(t, l[0].IsValid(), "%v", l)
	}
}

func TestMissingFile(t *testing.T) {
	res, l := Load(Source{Path: "does/not/exist.cue"})
	assert.Nil(t, res)
	require.Len(t, l, 1)
	assert.Equal(t, "file-not-found", l[0].Code)
}

func TestUnknownPreset(t *testing.T) {
	src := mem("plan.cue", "import \"parc.dev/stdlib/models\"\n"+strings.Replace(goodCUE,
		"model: {layers: 32, hidden: 4096, heads: 32, vocab: 32000}", "model: models.llama3_8bb", 1))
	l := diagsFor(t, src)
	require.NotEmpty(t, l)
	assert.Equal(t, "unknown-reference", l[0].Code, "%v", l)
	assert.Contains(t, l[0].Hint, "models.llama3_8b", "%v", l)
	assert.Equal(t, 3, l[0].Line, "%v", l)
}

func TestPresetImport(t *testing.T) {
	src := mem("plan.cue", `
import (
	"parc.dev/stdlib/models"
	"parc.dev/stdlib/clusters"
)
model:   models.llama3_8b
cluster: clusters.dgx_h100 & {nodes: 1}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64}
`)
	res, l := Load(src)
	require.Empty(t, l)
	s, l := res.Decode()
	require.Empty(t, l)
	assert.Equal(t, 32, s.Model.Layers)
	assert.Equal(t, 8, s.Cluster.GPUsPerNode)
	// A field that came from a preset is blamed on the user's own line.
	pos := res.Locate("model.heads")
	assert.Equal(t, 6, pos.Line)
}

func TestOldLanguageVersion(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"),
		[]byte("module: \"example.com/x\"\nlanguage: version: \"v0.8.0\"\n"), 0o644))
	file := filepath.Join(dir, "plan.cue")
	require.NoError(t, os.WriteFile(file, []byte(goodCUE), 0o644))
	_, l := Load(Source{Path: file})
	require.Len(t, l, 1, "%v", l)
	assert.Equal(t, "cue-language-version", l[0].Code)
	assert.Equal(t, 2, l[0].Line)
	assert.Contains(t, l[0].Message, "v0.8.0")
}

func TestOpenDegrees(t *testing.T) {
	src := mem("plan.cue", strings.Replace(goodCUE, "parallel: {tp: 2}", "parallel: {tp: 1 | 2 | 4 | 8, pp: >=2, cp: *1 | 2}", 1))
	res, l := Load(src)
	require.Empty(t, l)
	assert.Equal(t, []string{"parallel.tp", "parallel.pp"}, res.Open())
}

// TestUnknownPresetUnified: a misspelt preset unified with the user's own
// fields (`clusters.dgx_a100 & {nodes: 1}`, how specs write a cluster) is
// one unknown-reference error at the name, not one missing-field per field
// the preset would have set, and the hint names the preset the name begins.
func TestUnknownPresetUnified(t *testing.T) {
	src := mem("plan.cue", `import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)
model:   models.llama3_8b
cluster: clusters.dgx_a100 & {nodes: 1}
parallel: {tp: 1}
train: {seq_length: 4096, micro_batch: 1, global_batch: 8, iters: 10}
`)
	l := diagsFor(t, src)
	require.Len(t, l, 1, "%v", l)
	assert.Equal(t, "unknown-reference", l[0].Code)
	assert.Equal(t, 6, l[0].Line)
	assert.Equal(t, 19, l[0].Column)
	assert.Contains(t, l[0].Hint, "did you mean clusters.dgx_a100_80g?")
}

// TestTwoDefaults: a default written on a field the schema also defaults
// (tp: *4 | int against #Count | *1) leaves CUE no default; the error says
// why, not only that the field is not concrete.
func TestTwoDefaults(t *testing.T) {
	src := mem("plan.cue", strings.Replace(goodCUE, "parallel: {tp: 2}", "parallel: {tp: *4 | int}", 1))
	l := diagsFor(t, src)
	require.Len(t, l, 1, "%v", l)
	assert.Equal(t, "missing-field", l[0].Code)
	assert.Equal(t, "parallel.tp has two defaults, the 4 written here and parc's 1, and CUE keeps neither when they disagree, so the field has no value", l[0].Message)
	assert.Equal(t, "write parallel.tp: 4 for that value, or write it without a default (parallel.tp: int) to let parc solve choose it", l[0].Hint)
	// Both ways out of the hint load.
	for _, fix := range []string{"parallel: {tp: 4}", "parallel: {tp: int}", "parallel: {tp: *4 | 8}", "parallel: {tp: *1 | int}"} {
		_, l := Load(mem("plan.cue", strings.Replace(goodCUE, "parallel: {tp: 2}", fix, 1)))
		assert.Empty(t, l, fix)
	}
}

// TestTwoDefaultsString: the hint writes the field's own type.
func TestTwoDefaultsString(t *testing.T) {
	src := mem("plan.cue", strings.Replace(goodCUE, "parallel: {tp: 2}", "parallel: {tp: 2}\ntrain: recompute: *\"full\" | string", 1))
	l := diagsFor(t, src)
	require.Len(t, l, 1, "%v", l)
	assert.Equal(t, `write train.recompute: "full" for that value, or write it without a default (train.recompute: string) to let parc solve choose it`, l[0].Hint)
}

// TestMaxGlobalBatchIsTheSchemas: spec.MaxGlobalBatch, the bound the
// solver's hints keep a global batch within, is the schema's: it loads, one
// more is out of range.
func TestMaxGlobalBatchIsTheSchemas(t *testing.T) {
	for _, gbs := range []int{spec.MaxGlobalBatch, spec.MaxGlobalBatch + 1} {
		text := strings.Replace(goodCUE, "global_batch: 64", fmt.Sprintf("global_batch: %d", gbs), 1)
		l := diagsFor(t, mem("plan.cue", text))
		d := find(l, "out-of-range")
		if gbs == spec.MaxGlobalBatch {
			assert.Nil(t, d, "%d: %v", gbs, l)
			continue
		}
		require.NotNil(t, d, "%d: %v", gbs, l)
		assert.Equal(t, "train.global_batch", d.Path)
	}
}

// TestInvalidValueNoDefaultCascade: a field whose default is computed from
// an invalid one (train.grad_reduce_in_bf16 from train.precision) is not
// reported missing: one error, the invalid value.
func TestInvalidValueNoDefaultCascade(t *testing.T) {
	src := mem("plan.cue", strings.Replace(goodCUE, "global_batch: 64}", `global_batch: 64, precision: "int8"}`, 1))
	l := diagsFor(t, src)
	require.Len(t, l, 1, "%v", l)
	assert.Equal(t, "invalid-value", l[0].Code)
	assert.Equal(t, "train.precision", l[0].Path)
	// A field the user leaves open is still reported, beside the other error.
	src = mem("plan.cue", strings.Replace(goodCUE, "global_batch: 64}", `global_batch: 64, precision: "int8", grad_reduce_in_bf16: bool}`, 1))
	l = diagsFor(t, src)
	require.Len(t, l, 2, "%v", l)
}

// TestBiasDefaultFollowsSharedExperts: model.bias left out is Megatron's
// default (on) but off for an MoE with shared experts, which Megatron builds
// only without linear biases; written, it holds. In CUE and HCL alike.
func TestBiasDefaultFollowsSharedExperts(t *testing.T) {
	bias := func(name, text string) bool {
		t.Helper()
		res, l := Load(mem(name, text))
		require.False(t, l.HasErrors(), "%s: %v", name, l)
		s, l := res.Decode()
		require.False(t, l.HasErrors(), "%s: %v", name, l)
		return s.Model.Bias
	}
	model := "model: {layers: 32, hidden: 4096, heads: 32, vocab: 32000}"
	for _, c := range []struct {
		model string
		want  bool
	}{
		{model, true},
		{model + "\nmodel: moe: {experts: 8}", true},
		{model + "\nmodel: moe: {experts: 8, shared_ffn_hidden: 4096}", false},
		{model + "\nmodel: {bias: true, moe: {experts: 8, shared_ffn_hidden: 4096}}", true},
		{model + "\nmodel: {bias: false, moe: {experts: 8}}", false},
	} {
		assert.Equal(t, c.want, bias("plan.cue", strings.Replace(goodCUE, model, c.model, 1)), c.model)
	}
	hcl := strings.Replace(goodHCL, "  vocab  = 32000\n", "  vocab  = 32000\n  moe {\n    experts = 8\n    shared_ffn_hidden = 4096\n  }\n", 1)
	assert.False(t, bias("plan.hcl", hcl))
}
