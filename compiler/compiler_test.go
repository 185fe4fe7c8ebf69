package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
)

func TestEveryExampleVetsClean(t *testing.T) {
	files, err := filepath.Glob("../examples/*")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 6)
	for _, f := range files {
		p, diags := Vet(Source{Path: f})
		require.False(t, diags.HasErrors(), "%s: %v", f, diags)
		require.NotNil(t, p, f)
		assert.NotNil(t, p.Layout, "%s: layout", f)
		assert.NotNil(t, p.Estimate, "%s: estimate", f)
		assert.Equal(t, p.Derived.World, p.Layout.World, f)
	}
}

// Five independent mistakes, one run, five diagnostics.
func TestFiveMistakesAtOnce(t *testing.T) {
	src := Source{Path: filepath.Join(t.TempDir(), "plan.cue"), Data: []byte(`
model: {layers: 30, hidden: 4096, heads: 32, vocab: 32000}
cluster: {
	nodes: 2
	gpus_per_node: 8
	gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}
	nvlink_gbps: 450
	network_gbps: 50
	slurm: {time: "4 hours"}
}
parallel: {tp: 3, pp: 4}
train: {seq_length: 4096, max_pos: 1, micro_batch: 1, global_batch: 64, iters: 10}
`)}
	_, diags := Vet(src)
	codes := diags.Codes()
	// A schema mistake (unknown key) does not hide Megatron's rules.
	for _, c := range []string{"unknown-field", "slurm-time", "tp-heads", "world-not-divisible", "pp-layers"} {
		assert.Contains(t, codes, c, "%v", diags)
	}
	for _, d := range diags {
		assert.Equal(t, src.Path, d.File, "%v", d)
		assert.Positive(t, d.Line, "%v", d)
	}
}

// A global batch micro_batch·dp does not divide leaves the grid and the
// layers defined, so it does not hide the other mistakes: DeepSeek-V3 on
// 128 H100 at tp 1, ep 16 with a batch of 64 (dp 128) hears the batch,
// that its weights and optimizer state alone exceed the GPU, and that its
// expert groups span nodes, in one run; mended to 128, the same memory
// error and warning. A plan whose rules break elsewhere gets no estimate.
func TestBatchMistakeDoesNotHideMemory(t *testing.T) {
	const plan = `package plan
import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)
model: models.deepseek_v3
cluster: clusters.dgx_h100 & {nodes: 16}
parallel: {tp: %d, ep: 16, etp: 1}
train: {seq_length: 4096, micro_batch: 1, global_batch: %d, iters: 10, distributed_optimizer: true}
`
	codes := func(tp, batch int) []string {
		_, ds := Vet(Source{Path: filepath.Join(t.TempDir(), "plan.cue"), Data: []byte(fmt.Sprintf(plan, tp, batch))})
		return ds.Codes()
	}
	assert.ElementsMatch(t, []string{"global-batch", "memory-exceeds-gpu", "ep-crosses-node"}, codes(1, 64))
	assert.ElementsMatch(t, []string{"memory-exceeds-gpu", "ep-crosses-node"}, codes(1, 128))
	broken := codes(3, 64)
	assert.Contains(t, broken, "tp-heads")
	assert.NotContains(t, broken, "memory-exceeds-gpu")
}

// A spec whose only open field is parallel.microbatch_group_size vets: the
// solver chooses the group (Megatron's rule: pp ≤ N ≤ M, M mod N = 0 or ≥ pp)
// instead of the schema reporting the field missing.
func TestOnlyGroupSizeOpen(t *testing.T) {
	data, err := os.ReadFile("../examples/llama3-70b-tp8-pp4-vpp.cue")
	require.NoError(t, err)
	const from = "\tvpp: 5\n"
	require.Contains(t, string(data), from)
	src := Source{Path: "plan.cue", Data: []byte(strings.Replace(string(data), from, from+"\tmicrobatch_group_size: int\n", 1))}
	p, diags := Vet(src)
	require.False(t, diags.HasErrors(), "%v", diags)
	require.NotNil(t, p)
	g := p.Spec.Parallel.MicrobatchGroupSize
	require.NotNil(t, g, "the chosen group size is written")
	pp := p.Spec.Parallel.PP
	m := p.Spec.Train.GlobalBatch / (p.Spec.Train.MicroBatch * p.Derived.DP)
	assert.GreaterOrEqual(t, *g, pp)
	assert.LessOrEqual(t, *g, m)
	assert.True(t, m%*g == 0 || m%*g >= pp, "group %d with %d microbatches, pp %d", *g, m, pp)
}

// A spec for parc solve that leaves out train.micro_batch (required: it has
// no default) is told, beside what the field must be, how to leave it open;
// written so, the search runs and picks a micro batch.
func TestSolveMissingMicroBatchHint(t *testing.T) {
	spec := func(micro string) Source {
		return Source{Path: filepath.Join(t.TempDir(), "plan.cue"), Data: []byte(`package plan

import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)

model:    models.llama3_8b
cluster:  clusters.dgx_h100 & {nodes: 1}
parallel: {tp: int}
train: {seq_length: 4096, global_batch: 64, precision: "bf16", iters: 10` + micro + `}
`)}
	}
	_, diags := Solve(spec(""), 3)
	require.True(t, diags.HasErrors())
	hint := missingFieldHint(t, diags, "train.micro_batch")
	assert.Contains(t, hint, "or leave it open for parc solve to choose: train: {micro_batch: int}")
	r, diags := Solve(spec(", micro_batch: int"), 3)
	require.False(t, diags.HasErrors(), "%v", diags)
	require.NotEmpty(t, r.Candidates)
	_, diags = Vet(spec(""))
	for _, d := range diags {
		assert.NotContains(t, d.Hint, "parc solve", "vet's hint is the field's own")
	}
}

// TestMaxPositionsHintOffersOnlyWhatTheUserCanDo: a sequence longer than the
// model's positions is offered "remove model.max_position_embeddings" only
// where the user wrote the field; a preset's value (Qwen3's 40960) cannot be
// removed, only overridden.
func TestMaxPositionsHintOffersOnlyWhatTheUserCanDo(t *testing.T) {
	const plan = `package plan

import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)

model:   models.qwen3_8b%s
cluster: clusters.dgx_h100 & {nodes: 1}
parallel: {tp: 1}
train: {seq_length: 65536, micro_batch: 1, global_batch: 8, iters: 10, recompute: "full"}
`
	for _, tc := range []struct {
		model  string
		remove bool
	}{{"", false}, {" & {max_position_embeddings: 32768}", true}} {
		_, ds := Vet(Source{Path: filepath.Join(t.TempDir(), "plan.cue"), Data: []byte(fmt.Sprintf(plan, tc.model))})
		var hint string
		for _, d := range ds {
			if d.Code == "max-positions" {
				hint = d.Hint
			}
		}
		require.NotEmpty(t, hint, "%v", ds)
		assert.Contains(t, hint, "set max_position_embeddings ≥ 65536")
		assert.Equal(t, tc.remove, strings.Contains(hint, "remove model.max_position_embeddings"), "%q: %s", tc.model, hint)
	}
}

// A field parc solve does not choose, written open (`seq_length: int`), is
// told which fields it does choose; vet's hint stays the field's own.
func TestSolveFieldItDoesNotChoose(t *testing.T) {
	src := Source{Path: filepath.Join(t.TempDir(), "plan.cue"), Data: []byte(`package plan

import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)

model:    models.llama3_8b
cluster:  clusters.dgx_h100 & {nodes: 1}
parallel: {tp: int}
train: {seq_length: int, micro_batch: 1, global_batch: 64, precision: "bf16", iters: 10}
`)}
	_, diags := Solve(src, 3)
	hint := missingFieldHint(t, diags, "train.seq_length")
	assert.Contains(t, hint, "parc solve does not choose train.seq_length: it chooses parallel.tp, parallel.pp")
	assert.Contains(t, hint, "train.micro_batch")
	_, diags = Vet(src)
	for _, d := range diags {
		assert.NotContains(t, d.Hint, "parc solve", "vet's hint is the field's own")
	}
}

// missingFieldHint is the hint of the missing-field error at path.
func missingFieldHint(t *testing.T, diags diag.List, path string) string {
	t.Helper()
	for _, d := range diags {
		if d.Code == "missing-field" && d.Path == path {
			require.NotEmpty(t, d.Hint, "%v", d)
			return d.Hint
		}
	}
	t.Fatalf("no missing-field error at %s: %v", path, diags)
	return ""
}
