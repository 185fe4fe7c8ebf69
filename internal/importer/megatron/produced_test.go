package megatron

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/importer"
)

// TestEveryCodeIsProduced: every code of importer.Codes comes out of Import
// for at least one input — the corpus of real launch scripts, and the inputs
// below for what the corpus does not show. (compiler's registry test covers
// the compile pipeline's codes the same way.)
func TestEveryCodeIsProduced(t *testing.T) {
	produced := map[string]bool{}
	record := func(res Result) {
		for _, c := range res.Diags.Codes() {
			produced[c] = true
		}
	}
	files, err := filepath.Glob("testdata/corpus/*.args")
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		h := corpusHeader(string(b))
		if first(h["expect"]) == "round-trip" {
			continue // TestCorpusRoundTrip imports those; the codes below come from the rest
		}
		record(Import(b, headerOptions(t, f, h)))
	}
	base := "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256 --micro-batch-size 1 --global-batch-size 8 --train-iters 10 --tensor-model-parallel-size 2\n"
	for code, in := range map[string]string{
		"import-no-command":         "echo hello\n",
		"import-unknown-option":     base + "--no-such-option\n",
		"import-bad-argument":       base + "--log-interval abc\n",
		"import-unresolved":         "python pretrain_gpt.py " + strings.ReplaceAll(base, "\n", " ") + "--tensorboard-dir $UNSET_DIR\n",
		"import-shell":              "if true; then\npython pretrain_gpt.py " + strings.ReplaceAll(base, "\n", " ") + "\nfi\n",
		"import-cluster-assumed":    base,
		"import-nodes-assumed":      base,
		"import-extra-arg":          base + "--profile\n",
		"import-program":            "python pretrain_bert.py " + strings.ReplaceAll(base, "\n", " ") + "\n",
		"import-megatron-rejects":   base + "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 --num-virtual-stages-per-pipeline-rank 2\n",
		"import-no-eval-interval":   base,
		"import-expansion-limit":    "A=x\n" + strings.Repeat("A=$A$A\n", 30) + "python pretrain_gpt.py " + strings.ReplaceAll(base, "\n", " ") + "--data-path $A\n",
		"import-too-many-arguments": "python pretrain_gpt.py " + strings.ReplaceAll(base, "\n", " ") + strings.Repeat(" --data-path x", 5001) + "\n",
	} {
		res := Import([]byte(in), Options{File: "in.sh"})
		assert.Contains(t, res.Diags.Codes(), code, "%q: %v", in, res.Diags)
		record(res)
	}
	for _, c := range importer.Codes {
		if strings.HasPrefix(c.Code, "import-hf-") {
			continue // parc import hf's (importer/hf tests them)
		}
		assert.True(t, produced[c.Code], "no input produces %s", c.Code)
	}
}
