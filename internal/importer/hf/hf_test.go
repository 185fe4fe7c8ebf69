package hf

import (
	"os"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/stdlib"
)

// TestPresets imports published config.json files (testdata/README.md) and
// compares every model field the import writes with the stdlib preset of
// the same model, whose values were checked against the papers and the same
// files; and every shape field of the preset must be written.
func TestPresets(t *testing.T) {
	ctx := cuecontext.New()
	for file, preset := range map[string]string{
		"llama3_1_8b.json":  "llama3_8b",
		"mixtral_8x7b.json": "mixtral_8x7b",
		"qwen2_5_72b.json":  "qwen2_5_72b",
		"deepseek_v3.json":  "deepseek_v3",
	} {
		t.Run(file, func(t *testing.T) {
			src, err := os.ReadFile("testdata/" + file)
			require.NoError(t, err)
			res := Import(src, file)
			require.False(t, res.Diags.HasErrors(), "%v", res.Diags)
			got := ctx.CompileBytes(res.Spec).LookupPath(cue.ParsePath("model"))
			require.NoError(t, got.Err(), "%s", res.Spec)
			var pv cue.Value
			for _, f := range []string{"models/llama3.cue", "models/mixtral.cue", "models/qwen2_5.cue", "models/deepseek_v3.cue"} {
				b, err := stdlib.FS.ReadFile(f)
				require.NoError(t, err)
				if v := ctx.CompileBytes(b).LookupPath(cue.ParsePath(preset)); v.Exists() {
					pv = v
				}
			}
			require.True(t, pv.Exists())
			var walk func(g, p cue.Value, path string)
			walk = func(g, p cue.Value, path string) {
				it, err := p.Fields()
				require.NoError(t, err)
				for it.Next() {
					name := it.Selector().Unquoted()
					switch name {
					case "name", "kv_channels", "layer_freq", "router_load_balancing", "aux_loss_coeff":
						// a label; MLA's head dim comes from mla; the
						// default; the balancing loss is a training choice
						// (the paper's), not in config.json
						continue
					}
					gv := g.LookupPath(cue.MakePath(cue.Str(name)))
					require.True(t, gv.Exists(), "%s%s: the preset has it, the import does not\n%s", path, name, res.Spec)
					if it.Value().IncompleteKind() == cue.StructKind {
						walk(gv, it.Value(), path+name+".")
						continue
					}
					want, _ := it.Value().MarshalJSON()
					have, _ := gv.MarshalJSON()
					require.JSONEq(t, string(want), string(have), "%s%s\n%s", path, name, res.Spec)
				}
			}
			walk(got, pv, "")
		})
	}
}

func TestNotAConfig(t *testing.T) {
	res := Import([]byte(`{"model_type": "t5"}`), "config.json")
	require.True(t, res.Diags.HasErrors())
	require.Nil(t, res.Spec)
	res = Import([]byte(`[1`), "config.json")
	require.Equal(t, []string{"import-hf-json"}, res.Diags.Codes())
}

// FuzzImport: no config.json makes the importer panic, and what it writes is
// CUE.
func FuzzImport(f *testing.F) {
	for _, n := range []string{"llama3_1_8b.json", "deepseek_v3.json"} {
		b, _ := os.ReadFile("testdata/" + n)
		f.Add(b)
	}
	ctx := cuecontext.New()
	f.Fuzz(func(t *testing.T, b []byte) {
		res := Import(b, "config.json")
		if res.Spec != nil && !strings.Contains(string(b), "\\") {
			if v := ctx.CompileBytes(res.Spec); v.Err() != nil {
				t.Fatalf("not CUE: %v\n%s", v.Err(), res.Spec)
			}
		}
	})
}

func TestUnexpressed(t *testing.T) {
	res := Import([]byte(`{"model_type": "gpt_oss", "num_hidden_layers": 24, "hidden_size": 2880, "num_attention_heads": 64,
		"num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 32, "experts_per_token": 4, "intermediate_size": 2880,
		"sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"], "rope_theta": 150000,
		"rope_scaling": {"rope_type": "yarn", "factor": 32.0}, "swiglu_limit": 7.0, "vocab_size": 201088, "rms_norm_eps": 1e-05,
		"hidden_act": "silu", "tie_word_embeddings": false}`), "config.json")
	require.False(t, res.Diags.HasErrors(), "%v", res.Diags)
	require.Contains(t, res.Diags.Codes(), "import-hf-unexpressed")
	require.Contains(t, string(res.Spec), "experts: 32")
	require.Contains(t, string(res.Spec), "topk:    4")
}
