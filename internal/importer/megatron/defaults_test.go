package megatron

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	mg "parc.dev/parc/internal/targets/megatron"
)

// TestDefaultDifferences: for every schema default that differs from
// Megatron's (the megatron target's DefaultDifferences table), an argument
// list that leaves the option out imports to a spec whose compiled arguments
// give Megatron its own default back — the import writes the difference
// explicitly. Dests Megatron leaves None are the exceptions the table
// states (no default to give back; --lr and --eval-interval are written by
// every real script, the tokenizer is pretrain_gpt.py's).
func TestDefaultDifferences(t *testing.T) {
	dense := "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256 " +
		"--micro-batch-size 1 --global-batch-size 8 --train-iters 10 --lr 1e-4 --eval-interval 100 --tensor-model-parallel-size 2 --mock-data --tokenizer-type NullTokenizer --vocab-size 1024"
	// Without linear biases, as every MoE configuration of Megatron-LM's
	// examples and tests (gelu experts cannot fuse them: bias-activation-fusion).
	moe := strings.Replace(dense, "--tensor-model-parallel-size 2", "--num-experts 4 --expert-model-parallel-size 4 --disable-bias-linear", 1)
	for _, d := range mg.DefaultDifferences {
		if d.Megatron() == nil {
			continue
		}
		in := dense
		if strings.HasPrefix(d.Field, "model.moe.") {
			in = moe
		}
		if d.Field == "train.overlap_param_gather" {
			// Its default is on only with sharded parameters and
			// overlap_grad_reduce (schema/plan.cue).
			in += " --use-distributed-optimizer --overlap-grad-reduce"
		}
		res := Import([]byte(in), Options{File: "in", Nodes: 1})
		require.False(t, res.Diags.HasErrors(), "%s: %v\n%s", d.Field, res.Diags, res.Spec)
		require.NotNil(t, res.Compiled, "%s", d.Field)
		out, errs := mg.Parse(res.Compiled)
		require.Empty(t, errs)
		in2, _ := mg.Parse(res.Args)
		for _, diff := range Compare(in2, out, res.World) {
			require.NotEqual(t, d.Dest, diff.Dest, "%s: compiled %s, Megatron's default %s\n%s", d.Field, mg.Repr(diff.Got), mg.Repr(diff.Want), res.Spec)
		}
	}
}

// TestDerivedDefault: the defaults that depend on other fields come from
// their one definition (the schema's expression, spec.Derive), evaluated on
// the imported values; a value they need but do not have gives no default.
// experts is the imported values of a 4-layer MoE model.
func experts(bias bool, activation string, grouped bool, freq, dense int64) map[string]any {
	return map[string]any{"model.bias": bias, "model.activation": activation, "model.layers": int64(4), "model.moe.experts": int64(8),
		"model.moe.grouped_gemm": grouped, "model.moe.layer_freq": freq, "model.moe.dense_layers": dense}
}

func TestDerivedDefault(t *testing.T) {
	for _, c := range []struct {
		path string
		vals map[string]any
		want any // nil: no default
	}{
		{"train.overlap_param_gather", map[string]any{}, false},
		{"train.overlap_param_gather", map[string]any{"train.distributed_optimizer": true}, true},
		{"train.overlap_param_gather", map[string]any{"train.fsdp": true}, true},
		{"train.overlap_param_gather", map[string]any{"train.distributed_optimizer": true, "train.overlap_grad_reduce": false}, false},
		{"train.grad_reduce_in_bf16", map[string]any{}, true},
		{"train.grad_reduce_in_bf16", map[string]any{"train.precision": "fp8"}, true},
		{"train.grad_reduce_in_bf16", map[string]any{"train.precision": "fp8", "train.fp8_base": "fp16"}, false},
		{"train.grad_reduce_in_bf16", map[string]any{"train.precision": "fp16"}, false},
		{"train.grad_reduce_in_bf16", map[string]any{"train.precision": "fp32"}, false},
		{"model.ffn_hidden", map[string]any{"model.hidden": int64(4096)}, int64(16384)},
		{"model.ffn_hidden", map[string]any{"model.hidden": int64(4096), "model.activation": "swiglu", "model.ffn_hidden": int64(14336)}, int64(10880)},
		{"model.ffn_hidden", map[string]any{}, nil},
		{"model.moe.ffn_hidden", map[string]any{"model.hidden": int64(4096), "model.ffn_hidden": int64(14336)}, int64(14336)},
		{"model.kv_channels", map[string]any{"model.hidden": int64(4096), "model.heads": int64(32)}, int64(128)},
		{"model.kv_channels", map[string]any{"model.hidden": int64(4096), "model.heads": int64(24)}, nil},
		{"model.query_groups", map[string]any{"model.heads": int64(32)}, int64(32)},
		{"model.max_position_embeddings", map[string]any{"train.seq_length": int64(8192)}, int64(8192)},
		{"parallel.etp", map[string]any{"parallel.tp": int64(4)}, int64(4)},
		{"parallel.etp", map[string]any{}, int64(1)},
		{"parallel.tp_comm_overlap", map[string]any{"parallel.tp": int64(4)}, true},
		{"parallel.tp_comm_overlap", map[string]any{"parallel.tp": int64(4), "parallel.sp": false}, false},
		// GPT-OSS-like experts: grouped GEMM with linear biases.
		{"kernels.bias_dropout_fusion", experts(true, "swiglu", true, 1, 0), false},
		{"kernels.bias_dropout_fusion", experts(true, "swiglu", false, 1, 0), true},
		{"kernels.bias_dropout_fusion", experts(false, "swiglu", true, 1, 0), true},
		{"kernels.bias_dropout_fusion", map[string]any{"model.bias": true, "model.activation": "gelu", "model.layers": int64(4)}, true},
		{"kernels.bias_dropout_fusion", map[string]any{"model.activation": "gelu", "model.layers": int64(4)}, nil},
		{"kernels.bias_gelu_fusion", map[string]any{"model.bias": true, "model.activation": "gelu", "model.layers": int64(4)}, true},
		{"kernels.bias_gelu_fusion", experts(true, "gelu", false, 2, 0), false},
		{"kernels.bias_gelu_fusion", experts(true, "quick_geglu", true, 1, 0), true},
		{"kernels.bias_gelu_fusion", experts(true, "quick_geglu", true, 1, 1), false},
		{"kernels.bias_gelu_fusion", map[string]any{"model.bias": true, "model.activation": "squared_relu", "model.layers": int64(4)}, true},
	} {
		got, ok := derivedDefault(c.path, c.vals)
		if c.want == nil {
			require.False(t, ok, "%s %v: %v", c.path, c.vals, got)
			continue
		}
		require.True(t, ok, "%s %v", c.path, c.vals)
		require.True(t, mg.Equal(c.want, got), "%s %v: %v, want %v", c.path, c.vals, got, c.want)
	}
}
