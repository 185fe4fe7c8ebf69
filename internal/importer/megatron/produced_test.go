package megatron

import (
	"os"
	"parc.dev/parc/internal/testenv"
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
		h := testenv.ArgsHeader(string(b))
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
		"import-program":            "python my_pretrain.py " + strings.ReplaceAll(base, "\n", " ") + "\n",
		"import-program-option":     "python my_pretrain.py " + strings.ReplaceAll(base, "\n", " ") + " --my-option 1\n",
		"import-not-decoder":        "torchrun pretrain_t5.py " + strings.ReplaceAll(base, "\n", " ") + "\n",
		"import-not-training":       "torchrun tools/run_text_generation_server.py " + strings.ReplaceAll(base, "\n", " ") + "\n",
		"import-megatron-rejects":   base + "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 --num-virtual-stages-per-pipeline-rank 2\n",
		"import-no-eval-interval":   base,
		"import-expansion-limit":    "A=x\n" + strings.Repeat("A=$A$A\n", 30) + "python pretrain_gpt.py " + strings.ReplaceAll(base, "\n", " ") + "--data-path $A\n",
		"import-too-many-arguments": "python pretrain_gpt.py " + strings.ReplaceAll(base, "\n", " ") + strings.Repeat(" --data-path x", 5001) + "\n",
		"import-env":                "export PYTHONPATH=/opt/megatron:$PYTHONPATH\npython pretrain_gpt.py " + strings.ReplaceAll(base, "\n", " ") + "\n",
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

// TestNotDecoderRefused: Megatron-LM's T5 example (examples/t5/
// train_t5_220m_distributed.sh at d98e8a64, its torchrun command with the
// positional paths substituted) is refused by name, with no spec, instead
// of being read as a decoder whose model.layers and train.seq_length are
// missing (its --encoder-num-layers and --encoder-seq-length have no
// field); another program still imports with the import-program warning.
func TestNotDecoderRefused(t *testing.T) {
	t5 := "torchrun --nproc_per_node 8 --nnodes 1 pretrain_t5.py --encoder-num-layers 12 --decoder-num-layers 12 " +
		"--hidden-size 768 --num-attention-heads 12 --kv-channels 64 --ffn-hidden-size 3072 --encoder-seq-length 512 " +
		"--decoder-seq-length 128 --max-position-embeddings 512 --micro-batch-size 64 --global-batch-size 512 --lr 0.0001 " +
		"--train-iters 1000000 --lr-decay-iters 1000000 --lr-decay-style linear --min-lr 0.00001 --weight-decay 1e-2 " +
		"--lr-warmup-fraction .01 --clip-grad 1.0 --bf16 --vocab-extra-ids 100 --init-method-std 0.015 " +
		"--transformer-impl transformer_engine --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 " +
		"--attention-backend auto --data-path /data/my-t5_00_text_document --vocab-file /data/bert-large-cased-vocab.txt " +
		"--tokenizer-type BertWordPieceCase --split 99982,9,9 --log-interval 100 --tensorboard-dir /tb --save-interval 500 " +
		"--eval-interval 1000 --eval-iters 10 --distributed-backend nccl --save /ckpt --load /ckpt\n"
	res := Import([]byte(t5), Options{File: "train_t5.sh", Cluster: "dgx_h100"})
	assert.Nil(t, res.Spec)
	assert.Equal(t, []string{"import-not-decoder"}, res.Diags.Codes(), "%v", res.Diags)
	assert.Contains(t, res.Diags[0].Message, "T5, an encoder-decoder model")

	gpt := strings.Replace(strings.Replace(strings.Replace(t5, "pretrain_t5.py", "my_pretrain.py", 1),
		"--encoder-num-layers 12 --decoder-num-layers 12", "--num-layers 12", 1),
		"--encoder-seq-length 512 --decoder-seq-length 128", "--seq-length 512", 1)
	gpt = strings.Replace(strings.Replace(gpt, "--vocab-extra-ids 100 ", "", 1), "--tokenizer-type BertWordPieceCase", "--tokenizer-type NullTokenizer --vocab-size 32000", 1)
	res = Import([]byte(gpt), Options{File: "train.sh", Cluster: "dgx_h100"})
	assert.NotNil(t, res.Spec, "%v", res.Diags)
	assert.Contains(t, res.Diags.Codes(), "import-program")
	assert.NotContains(t, res.Diags.Codes(), "import-not-decoder")
}
