package hf

import (
	"encoding/json"
	"io/fs"
	"os"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/schema"
	"parc.dev/parc/stdlib"
)

// published maps each config.json of testdata (its source in
// testdata/README.md) to the stdlib preset of the same model.
var published = map[string]string{
	"llama3_1_8b.json":     "llama3_8b",
	"llama3_1_70b.json":    "llama3_70b",
	"llama3_1_405b.json":   "llama3_405b",
	"mixtral_8x7b.json":    "mixtral_8x7b",
	"qwen2_5_72b.json":     "qwen2_5_72b",
	"qwen3_8b.json":        "qwen3_8b",
	"qwen3_32b.json":       "qwen3_32b",
	"qwen3_30b_a3b.json":   "qwen3_30b_a3b",
	"qwen3_235b_a22b.json": "qwen3_235b_a22b",
	"deepseek_v3.json":     "deepseek_v3",
}

// decode unifies a model with the schema's #Model (a preset's defaults
// winning over the schema's, as the loader does) and decodes it.
func decode(t *testing.T, v cue.Value) spec.Model {
	t.Helper()
	ctx := v.Context()
	def := ctx.CompileBytes(schema.Source, cue.Filename(schema.Filename)).LookupPath(cue.ParsePath("#Model"))
	require.NoError(t, def.Err())
	u := load.PresetDefaults(v, def).Unify(def)
	require.NoError(t, u.Validate(cue.Concrete(true)))
	var m spec.Model
	require.NoError(t, u.Decode(&m))
	return m
}

// withoutLabels clears what a config.json does not state: the name (a
// label), MLA's kv_channels (Megatron's recipe writes 128; the head
// dimensions come from mla) and the load-balancing loss (a training choice).
func withoutLabels(m spec.Model) spec.Model {
	m.Name = ""
	if m.MLA != nil {
		m.KVChannels = nil
	}
	if m.MoE != nil {
		mo := *m.MoE
		mo.RouterLoadBalancing, mo.AuxLossCoeff = "", 0
		m.MoE = &mo
	}
	return m
}

// TestPresets imports published config.json files and compares the model
// each import describes with the stdlib preset of the same model, field by
// field after the schema's defaults are filled in on both sides: the import
// says no more and no less than the preset, whose values were checked
// against the papers and the same files.
func TestPresets(t *testing.T) {
	ctx := cuecontext.New()
	presets := map[string]cue.Value{}
	entries, err := fs.ReadDir(stdlib.FS, "models")
	require.NoError(t, err)
	for _, e := range entries {
		b, err := stdlib.FS.ReadFile("models/" + e.Name())
		require.NoError(t, err)
		v := ctx.CompileBytes(b)
		it, err := v.Fields()
		require.NoError(t, err)
		for it.Next() {
			presets[it.Selector().Unquoted()] = it.Value()
		}
	}
	for file, preset := range published {
		t.Run(file, func(t *testing.T) {
			src, err := os.ReadFile("testdata/" + file)
			require.NoError(t, err)
			res := Import(src, file)
			require.False(t, res.Diags.HasErrors(), "%v", res.Diags)
			require.Empty(t, res.Diags, "a published model the presets describe imports without warnings")
			got := ctx.CompileBytes(res.Spec).LookupPath(cue.ParsePath("model"))
			require.NoError(t, got.Err(), "%s", res.Spec)
			pv, ok := presets[preset]
			require.True(t, ok, "no preset %s", preset)
			require.Equal(t, withoutLabels(decode(t, pv)), withoutLabels(decode(t, got)), "preset %s (want) vs import (got)\n%s", preset, res.Spec)
		})
	}
}

// TestPresetsDiffer: the comparison above can fail — an import differing
// from the preset in one field is caught.
func TestPresetsDiffer(t *testing.T) {
	ctx := cuecontext.New()
	src, err := os.ReadFile("testdata/deepseek_v3.json")
	require.NoError(t, err)
	changed := strings.Replace(string(src), `"factor": 40`, `"factor": 4`, 1)
	require.NotEqual(t, string(src), changed)
	a := decode(t, ctx.CompileBytes(Import(src, "a").Spec).LookupPath(cue.ParsePath("model")))
	b := decode(t, ctx.CompileBytes(Import([]byte(changed), "b").Spec).LookupPath(cue.ParsePath("model")))
	require.NotEqual(t, withoutLabels(a), withoutLabels(b))
}

// TestRopeScaling checks the mapping of rope_scaling onto Megatron's options
// for the three kinds published models use, and that values Megatron cannot
// take are named.
func TestRopeScaling(t *testing.T) {
	ctx := cuecontext.New()
	model := func(t *testing.T, file string, edit func(string) string) (spec.Model, []string) {
		src, err := os.ReadFile("testdata/" + file)
		require.NoError(t, err)
		res := Import([]byte(edit(string(src))), file)
		require.False(t, res.Diags.HasErrors(), "%v", res.Diags)
		var msgs []string
		for _, d := range res.Diags {
			msgs = append(msgs, d.Message)
		}
		return decode(t, ctx.CompileBytes(res.Spec).LookupPath(cue.ParsePath("model"))), msgs
	}
	same := func(s string) string { return s }

	// Llama 3.1: --use-rope-scaling --rope-scaling-factor 8.
	m, _ := model(t, "llama3_1_8b.json", same)
	require.Equal(t, 8.0, *m.RopeScalingFactor)
	require.Nil(t, m.RotaryScalingFactor)
	require.Equal(t, "rope", m.PositionEmbedding)
	_, msgs := model(t, "llama3_1_8b.json", func(s string) string {
		return strings.Replace(s, `"high_freq_factor": 4.0`, `"high_freq_factor": 2.0`, 1)
	})
	require.Len(t, msgs, 1)
	require.Contains(t, msgs[0], "high_freq_factor 2")

	// DeepSeek-V3 (MLA): the YaRN factor and both mscales.
	m, _ = model(t, "deepseek_v3.json", same)
	require.Nil(t, m.RopeScalingFactor)
	require.Equal(t, 40.0, *m.RotaryScalingFactor)
	require.Equal(t, 1.0, m.Mscale)
	require.Equal(t, 1.0, m.MscaleAllDim)
	require.Nil(t, m.YarnBetaFast, "MLA's betas are not Megatron arguments")
	_, msgs = model(t, "deepseek_v3.json", func(s string) string {
		return strings.Replace(s, `"beta_fast": 32`, `"beta_fast": 16`, 1)
	})
	require.Len(t, msgs, 1)
	require.Contains(t, msgs[0], "beta_fast 16")

	// GPT-OSS (YaRN without MLA): position_embedding yarn and the --yarn-* options.
	m, msgs = model(t, "gpt_oss_20b.json", same)
	require.Equal(t, "yarn", m.PositionEmbedding)
	require.Equal(t, 32.0, *m.RotaryScalingFactor)
	require.Equal(t, 4096, *m.YarnOriginalMaxPositionEmbeddings)
	require.Equal(t, 32.0, *m.YarnBetaFast)
	require.Equal(t, 1.0, *m.YarnBetaSlow)
	require.Equal(t, 0.0, m.MscaleAllDim)
	require.Len(t, msgs, 1, "the windows, the sinks and the GLU's offset and clamp are spec fields now")
	require.Contains(t, msgs[0], "truncate false")
	require.Equal(t, 1.0, m.GLULinearOffset)
	require.Equal(t, 7.0, *m.ActivationFuncClampValue)
	require.Equal(t, []int{128, 0}, m.WindowSize)
	require.Equal(t, "learnable", m.SoftmaxType)
	require.Equal(t, 32, m.MoE.Experts)
	require.Equal(t, 4, m.MoE.TopK)
	require.Equal(t, 2880, *m.MoE.FFNHidden)

	// A scaling Megatron has no option for.
	_, msgs = model(t, "llama3_1_8b.json", func(s string) string { return strings.Replace(s, `"llama3"`, `"dynamic"`, 1) })
	require.Len(t, msgs, 1)
	require.Contains(t, msgs[0], `"dynamic"`)
}

// TestTopKNormalisation: norm_topk_prob false with softmax scores is
// Megatron's --moe-router-pre-softmax; true is its default.
func TestTopKNormalisation(t *testing.T) {
	ctx := cuecontext.New()
	src, err := os.ReadFile("testdata/qwen3_30b_a3b.json")
	require.NoError(t, err)
	for _, c := range []struct {
		from, to string
		pre      bool
	}{
		{`"norm_topk_prob": true`, `"norm_topk_prob": true`, false},
		{`"norm_topk_prob": true`, `"norm_topk_prob": false`, true},
		{`"norm_topk_prob": true,`, ``, true}, // Qwen3MoeConfig's default is false
	} {
		res := Import([]byte(strings.Replace(string(src), c.from, c.to, 1)), "config.json")
		m := decode(t, ctx.CompileBytes(res.Spec).LookupPath(cue.ParsePath("model")))
		require.Equal(t, c.pre, m.MoE.RouterPreSoftmax, "%s -> %q", c.from, c.to)
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
		"hidden_act": "silu", "tie_word_embeddings": false, "final_logit_softcapping": 30.0}`), "config.json")
	require.False(t, res.Diags.HasErrors(), "%v", res.Diags)
	require.Equal(t, []string{"import-hf-unexpressed"}, res.Diags.Codes(), "only the soft-capping has no field")
	require.Contains(t, res.Diags[0].Message, "final_logit_softcapping")
	require.Regexp(t, `glu_linear_offset:\s+1\b`, string(res.Spec))
	require.Regexp(t, `activation_func_clamp_value:\s+7\b`, string(res.Spec))
	require.Regexp(t, `experts:\s+32`, string(res.Spec))
	require.Regexp(t, `topk:\s+4`, string(res.Spec))
}

// TestMoELayers: DeepSeek's moe_layer_freq is Megatron's --moe-layer-freq;
// Qwen-MoE's decoder_sparse_step counts from another layer and is named.
func TestMoELayers(t *testing.T) {
	ctx := cuecontext.New()
	src, err := os.ReadFile("testdata/deepseek_v3.json")
	require.NoError(t, err)
	res := Import([]byte(strings.Replace(string(src), `"first_k_dense_replace": 3,`, `"first_k_dense_replace": 3, "moe_layer_freq": 2,`, 1)), "config.json")
	m := decode(t, ctx.CompileBytes(res.Spec).LookupPath(cue.ParsePath("model")))
	require.Equal(t, 2, m.MoE.LayerFreq)
	require.Empty(t, res.Diags)

	src, err = os.ReadFile("testdata/qwen3_30b_a3b.json")
	require.NoError(t, err)
	res = Import([]byte(strings.Replace(string(src), `"decoder_sparse_step": 1`, `"decoder_sparse_step": 2`, 1)), "config.json")
	require.Equal(t, []string{"import-hf-unexpressed"}, res.Diags.Codes())
	require.Contains(t, res.Diags[0].Message, "decoder_sparse_step 2")
}

// TestRopeParameters: transformers 5's rope_parameters (rope_theta and the
// scaling in one object) imports as the older rope_theta + rope_scaling.
func TestRopeParameters(t *testing.T) {
	ctx := cuecontext.New()
	for _, file := range []string{"llama3_1_8b.json", "deepseek_v3.json", "qwen3_8b.json"} {
		src, err := os.ReadFile("testdata/" + file)
		require.NoError(t, err)
		var c map[string]any
		require.NoError(t, json.Unmarshal(src, &c))
		rp := map[string]any{"rope_type": "default"}
		if rs, ok := c["rope_scaling"].(map[string]any); ok {
			rp = rs
		}
		rp["rope_theta"] = c["rope_theta"]
		delete(c, "rope_scaling")
		delete(c, "rope_theta")
		c["rope_parameters"] = rp
		v5, err := json.Marshal(c)
		require.NoError(t, err)
		old, now := Import(src, file), Import(v5, file)
		require.Empty(t, now.Diags, file)
		a := decode(t, ctx.CompileBytes(old.Spec).LookupPath(cue.ParsePath("model")))
		b := decode(t, ctx.CompileBytes(now.Spec).LookupPath(cue.ParsePath("model")))
		require.Equal(t, a, b, "%s\n%s", file, now.Spec)
	}
}

// TestSquaredReLU: transformers' Nemotron models (NemotronMLP, ungated)
// name ReLU squared "relu2", Megatron's --squared-relu; their
// NemotronLayerNorm1P is --apply-layernorm-1p and partial_rotary_factor
// --rotary-percent. Nemotron-4 15B's shape in transformers' NemotronConfig
// keys (arXiv:2402.16819 Table 1; NVIDIA publishes the model in NeMo's
// format, not as a config.json) imports as the nemotron4_15b preset.
func TestSquaredReLU(t *testing.T) {
	ctx := cuecontext.New()
	res := Import([]byte(`{"model_type": "nemotron", "num_hidden_layers": 32, "hidden_size": 6144, "intermediate_size": 24576,
		"num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 256000, "max_position_embeddings": 4096,
		"hidden_act": "relu2", "tie_word_embeddings": false, "norm_eps": 1e-05, "partial_rotary_factor": 0.5, "rope_theta": 10000,
		"attention_bias": false, "mlp_bias": false}`), "config.json")
	require.Empty(t, res.Diags)
	m := decode(t, ctx.CompileBytes(res.Spec).LookupPath(cue.ParsePath("model")))
	require.Equal(t, "squared_relu", m.Activation)
	b, err := stdlib.FS.ReadFile("models/nemotron4.cue")
	require.NoError(t, err)
	preset := ctx.CompileBytes(b).LookupPath(cue.ParsePath("nemotron4_15b"))
	require.Equal(t, withoutLabels(decode(t, preset)), withoutLabels(m), "%s", res.Spec)
}

// TestGPTOSS: openai/gpt-oss-120b's config.json imports as the stdlib
// preset (learnable softmax offsets for its sinks, quick GEGLU, windows on
// every second layer, the GLU's offset 1 and its clamp at swiglu_limit),
// with a warning for what Megatron-LM has no flag for: YaRN's unrounded
// correction range.
// importWarned imports testdata/name, which must import without errors and
// with import-hf-unexpressed warnings only: its source, the result and the
// warnings' messages.
func importWarned(t *testing.T, name string) ([]byte, Result, []string) {
	t.Helper()
	src, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	res := Import(src, name)
	require.False(t, res.Diags.HasErrors(), "%v", res.Diags)
	var msgs []string
	for _, d := range res.Diags {
		require.Equal(t, "import-hf-unexpressed", d.Code)
		msgs = append(msgs, d.Message)
	}
	return src, res, msgs
}

func TestGPTOSS(t *testing.T) {
	ctx := cuecontext.New()
	src, res, msgs := importWarned(t, "gpt_oss_120b.json")
	require.Len(t, msgs, 1, "%v", msgs)
	require.Contains(t, msgs[0], "truncate false")
	b, err := stdlib.FS.ReadFile("models/gpt_oss.cue")
	require.NoError(t, err)
	preset := ctx.CompileBytes(b).LookupPath(cue.ParsePath("gpt_oss_120b"))
	got := ctx.CompileBytes(res.Spec).LookupPath(cue.ParsePath("model"))
	require.Equal(t, withoutLabels(decode(t, preset)), withoutLabels(decode(t, got)), "%s", res.Spec)
	// The 20B model's config.json gives the gpt_oss_20b preset.
	_, res20, _ := importWarned(t, "gpt_oss_20b.json")
	preset20 := ctx.CompileBytes(b).LookupPath(cue.ParsePath("gpt_oss_20b"))
	got20 := ctx.CompileBytes(res20.Spec).LookupPath(cue.ParsePath("model"))
	require.Equal(t, withoutLabels(decode(t, preset20)), withoutLabels(decode(t, got20)), "%s", res20.Spec)
	// A window pattern Megatron's skip frequency cannot say is not written.
	odd := strings.Replace(string(src), `"full_attention",`, `"sliding_attention",`, 1)
	require.NotContains(t, string(Import([]byte(odd), "x").Spec), "window_attn_skip_freq")
	// Every layer windowed: the window without a skip frequency.
	all := string(Import([]byte(strings.ReplaceAll(string(src), `"full_attention"`, `"sliding_attention"`)), "x").Spec)
	require.Contains(t, all, "window_size: [128, 0]")
	require.NotContains(t, all, "window_attn_skip_freq")
}

// TestImportTooLarge: a config.json larger than load.MaxInputBytes is
// refused before it is decoded, as a spec or a launch script is.
func TestImportTooLarge(t *testing.T) {
	res := Import(append([]byte(`{"x": "`), make([]byte, load.MaxInputBytes)...), "big.json")
	require.Len(t, res.Diags, 1)
	assert.Equal(t, "input-too-large", res.Diags[0].Code)
	assert.Nil(t, res.Spec)
}

// TestHybridNotImported: a config.json of a model whose layers are not all
// transformer layers is refused, with nothing written, instead of becoming
// a spec of a transformer with its sizes. The inputs carry the keys that
// say so: NemotronHConfig's defaults (transformers'
// configuration_nemotron_h.py, "similar to NemotronH-v0.1": 52 layers of
// hybrid_override_pattern, Mamba2 heads and state size), Qwen3-Next's
// per-layer "linear_attention" (gated DeltaNet), and Jamba's mamba_d_state.
func TestHybridNotImported(t *testing.T) {
	for name, src := range map[string]string{
		"nemotron_h": `{"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 4096, "num_hidden_layers": 52,
			"num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 21504, "vocab_size": 131072,
			"hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-", "mamba_num_heads": 128,
			"mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "mlp_hidden_act": "relu2"}`,
		"qwen3_next": `{"model_type": "qwen3_next", "hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16,
			"layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"]}`,
		"jamba": `{"model_type": "jamba", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
			"attn_layer_period": 8, "mamba_d_state": 16, "mamba_d_conv": 4}`,
	} {
		res := Import([]byte(src), "config.json")
		require.Equal(t, []string{"import-hf-json"}, res.Diags.Codes(), name)
		require.Nil(t, res.Spec, name)
	}
	// Sliding and full attention layers are a transformer's (GPT-OSS).
	b, err := os.ReadFile("testdata/gpt_oss_20b.json")
	require.NoError(t, err)
	require.False(t, Import(b, "config.json").Diags.HasErrors())
}

// TestLlama4: a multimodal config.json (Llama4ForConditionalGeneration) is
// planned by its language model, text_config, with the vision encoder named
// in a warning; Llama 4's MoE maps as NeMo's Llama4Config has it (routed and
// shared experts of intermediate_size, dense MLP of intermediate_size_mlp,
// sigmoid router), and what the spec cannot say is named.
func TestLlama4(t *testing.T) {
	src, res, msgs := importWarned(t, "llama4_scout.json")
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"vision_config", "--moe-apply-probs-on-input", "no_rope_layers", "use_qk_norm", "attention_chunk_size 8192", "attn_temperature_tuning"} {
		assert.Contains(t, all, want)
	}
	require.Len(t, msgs, 6, all)
	m := decode(t, cuecontext.New().CompileBytes(res.Spec).LookupPath(cue.ParsePath("model")))
	assert.Equal(t, 48, m.Layers)
	assert.Equal(t, 5120, m.Hidden)
	assert.Equal(t, 40, m.Heads)
	require.NotNil(t, m.FFNHidden)
	assert.Equal(t, 16384, *m.FFNHidden)
	require.NotNil(t, m.QueryGroups)
	assert.Equal(t, 8, *m.QueryGroups)
	assert.Equal(t, 202048, m.Vocab)
	assert.False(t, m.TieEmbeddings)
	assert.False(t, m.Bias)
	assert.Equal(t, "swiglu", m.Activation)
	require.NotNil(t, m.MoE)
	assert.Equal(t, 16, m.MoE.Experts)
	assert.Equal(t, 1, m.MoE.TopK)
	require.NotNil(t, m.MoE.FFNHidden)
	assert.Equal(t, 8192, *m.MoE.FFNHidden)
	assert.Equal(t, 8192, m.MoE.SharedFFNHidden)
	assert.Equal(t, "sigmoid", m.MoE.ScoreFunction)
	assert.Equal(t, 1, m.MoE.LayerFreq)
	// Maverick's layout: experts on every other layer from layer 1, and no
	// query/key norm.
	mav := strings.Replace(strings.Replace(string(src), `"interleave_moe_layer_step": 1`, `"interleave_moe_layer_step": 2`, 1), `"use_qk_norm": true`, `"use_qk_norm": false`, 1)
	res = Import([]byte(mav), "x")
	msgs = msgs[:0]
	for _, d := range res.Diags {
		msgs = append(msgs, d.Message)
	}
	all = strings.Join(msgs, "\n")
	assert.Contains(t, all, "interleave_moe_layer_step 2")
	assert.NotContains(t, all, "use_qk_norm")
}
