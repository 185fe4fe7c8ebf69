// Package hf imports the model section of a spec from a Hugging Face
// config.json (parc import hf): Llama (3 and 4), Qwen2/Qwen3 (dense and MoE),
// Mixtral, DeepSeek-V3 and GPT-OSS, as far as the schema can express them;
// of a multimodal model, its language model (text_config). Keys that change
// the model and have no spec field are named in a warning.
package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cuelang.org/go/cue/format"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/importer"
	"parc.dev/parc/internal/load"
)

// Result of an import.
type Result struct {
	Spec  []byte // nil when the file is not a config.json parc understands
	Diags diag.List
}

// field is one model field written, with the config.json key it came from.
type field struct {
	path, key string
	value     any
}

// Import reads a config.json and writes a CUE file with its model section.
func Import(src []byte, file string) Result {
	var r Result
	if d := load.TooLarge(file, src, "a config.json"); d != nil {
		r.Diags.Add(*d)
		return r
	}
	pos := diag.Pos{File: file, Line: 1, Column: 1}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var c map[string]any
	if err := dec.Decode(&c); err != nil {
		r.Diags.Errorf(pos, "", "import-hf-json", "give the model's config.json", "%s is not a JSON object: %v", file, err)
		return r
	}
	arch := ""
	if a, ok := c["architectures"].([]any); ok && len(a) > 0 {
		arch, _ = a[0].(string)
	}
	// A multimodal model (Llama 4, Gemma 3, Mistral 3, Qwen2.5-VL's later
	// configs) nests its language model in text_config beside its other
	// encoders: parc plans the language model; the encoders are named.
	if tc, ok := c["text_config"].(map[string]any); ok && c["num_hidden_layers"] == nil && tc["num_hidden_layers"] != nil {
		var others []string
		for _, k := range slices.Sorted(maps.Keys(c)) {
			if strings.HasSuffix(k, "_config") && k != "text_config" && c[k] != nil {
				others = append(others, k)
			}
		}
		if len(others) > 0 {
			r.Diags.Warnf(pos, "model", "import-hf-unexpressed", "plan the other encoders with their own tools",
				"%s describes a multimodal model: the spec is its language model (text_config), without what %s describes (parc plans a decoder transformer)",
				file, strings.Join(others, " and "))
		}
		if t, ok := c["tie_word_embeddings"]; ok && tc["tie_word_embeddings"] == nil {
			tc["tie_word_embeddings"] = t // Llama4Config keeps it outside text_config
		}
		c = tc
	}
	get := func(k string) (any, bool) { v, ok := c[k]; return v, ok && v != nil }
	num := func(k string) (json.Number, bool) {
		v, ok := get(k)
		n, isNum := v.(json.Number)
		return n, ok && isNum
	}
	var out []field
	used := map[string]bool{}
	put := func(path, key string, v any) {
		out = append(out, field{path, key, v})
		used[key] = true
	}
	putInt := func(path, key string) bool {
		n, ok := num(key)
		if !ok {
			return false
		}
		i, err := n.Int64()
		if err != nil {
			return false
		}
		put(path, key, i)
		return true
	}
	putNum := func(path, key string) {
		if n, ok := num(key); ok {
			f, _ := n.Float64()
			put(path, key, f)
		}
	}
	mt, _ := c["model_type"].(string)
	used["architectures"], used["model_type"] = true, true

	if what, key := nonTransformerLayers(c); what != "" {
		r.Diags.Errorf(pos, "", "import-hf-json", "parc plans transformer decoders only: plan this model with its own tools",
			"%s describes a model with %s (config.json's %s): parc's spec describes transformer decoders whose every layer is attention with an MLP or MoE, so a spec of it would check, lay out and estimate another model; nothing is written",
			file, what, key)
		return r
	}
	if !putInt("model.layers", "num_hidden_layers") || !putInt("model.hidden", "hidden_size") || !putInt("model.heads", "num_attention_heads") {
		r.Diags.Errorf(pos, "", "import-hf-json", "give a decoder model's config.json (num_hidden_layers, hidden_size, num_attention_heads)",
			"%s does not describe a decoder transformer parc knows (model_type %q)", file, mt)
		return r
	}
	heads, _ := num("num_attention_heads")
	hidden, _ := num("hidden_size")
	h, _ := hidden.Int64()
	a, _ := heads.Int64()
	moeLayersOnly := mt == "deepseek_v3" || mt == "deepseek_v2"
	putInt("model.ffn_hidden", "intermediate_size")
	if kv, ok := num("num_key_value_heads"); ok && kv.String() != heads.String() && !moeLayersOnly {
		putInt("model.query_groups", "num_key_value_heads")
	} else {
		used["num_key_value_heads"] = true
	}
	if hd, ok := num("head_dim"); ok {
		if d, _ := hd.Int64(); a > 0 && d != h/a {
			putInt("model.kv_channels", "head_dim")
		} else {
			used["head_dim"] = true
		}
	}
	putInt("model.vocab", "vocab_size")
	putInt("model.max_position_embeddings", "max_position_embeddings")
	switch act, _ := c["hidden_act"].(string); act {
	case "silu", "swiglu":
		put("model.activation", "hidden_act", "swiglu") // gated SiLU MLP (LlamaMLP: down(act(gate)·up))
	case "gelu", "gelu_new", "gelu_pytorch_tanh":
		put("model.activation", "hidden_act", "gelu")
	case "relu2":
		put("model.activation", "hidden_act", "squared_relu") // ReLU squared, ungated (NemotronMLP: down(act(up)))
	}
	if _, ok := num("norm_eps"); ok && mt == "nemotron" {
		// transformers' NemotronLayerNorm1P: LayerNorm with weight 1 + γ
		// (Megatron's --apply-layernorm-1p; NeMo's NemotronConfig
		// layernorm_zero_centered_gamma).
		put("model.normalization", "norm_eps", "layernorm")
		put("model.apply_layernorm_1p", "norm_eps", true)
		putNum("model.norm_epsilon", "norm_eps")
	}
	if f, ok := num("partial_rotary_factor"); ok {
		// RoPE on that fraction of each head (--rotary-percent; NeMo's
		// Nemotron importer maps rotary_percent from it).
		if v, err := f.Float64(); err == nil && v > 0 && v <= 1 {
			put("model.rotary_percent", "partial_rotary_factor", v)
		}
	}
	if _, ok := num("rms_norm_eps"); ok {
		put("model.normalization", "rms_norm_eps", "rmsnorm")
		putNum("model.norm_epsilon", "rms_norm_eps")
	}
	// transformers 5 writes RoPE as one rope_parameters object (rope_theta
	// and the scaling keys together, rope_type "default" for none).
	if rp, ok := c["rope_parameters"].(map[string]any); ok {
		used["rope_parameters"] = true
		if _, has := get("rope_theta"); !has && rp["rope_theta"] != nil {
			c["rope_theta"] = rp["rope_theta"]
		}
		kind, _ := rp["rope_type"].(string)
		if kind == "" {
			kind, _ = rp["type"].(string)
		}
		if _, has := get("rope_scaling"); !has && kind != "" && kind != "default" {
			c["rope_scaling"] = rp
		}
	}
	if n, ok := num("rope_theta"); ok {
		put("model.position_embedding", "rope_theta", "rope")
		if f, _ := n.Float64(); f == float64(int64(f)) && f >= 1 {
			put("model.rotary_base", "rope_theta", int64(f))
		} else {
			r.Diags.Warnf(pos, "model.rotary_base", "import-hf-unexpressed", "check the RoPE base",
				"rope_theta %s is not a whole number: model.rotary_base (Megatron's --rotary-base is an int) cannot hold it", n)
		}
	}
	mla := false
	if _, ok := num("kv_lora_rank"); ok {
		mla = true
	}
	if rs, ok := c["rope_scaling"].(map[string]any); ok {
		used["rope_scaling"] = true
		importRopeScaling(&r, pos, rs, mla, put)
	}
	if t, ok := c["tie_word_embeddings"].(bool); ok {
		put("model.tie_embeddings", "tie_word_embeddings", t)
	} else {
		// PretrainedConfig's default is True; Llama-family configs write it.
		used["tie_word_embeddings"] = true
	}
	bias := false
	if b, ok := c["attention_bias"].(bool); ok {
		bias = b
		used["attention_bias"] = true
	}
	if b, ok := c["mlp_bias"].(bool); ok {
		bias = bias && b
		used["mlp_bias"] = true
	}
	switch mt {
	case "qwen2", "qwen2_moe":
		// Qwen2Attention: q/k/v projections with bias, o_proj and MLP without.
		put("model.qkv_bias", "model_type", true)
	case "qwen3", "qwen3_moe":
		// Qwen3Attention: RMSNorm on each head's query and key (q_norm, k_norm).
		put("model.qk_layernorm", "model_type", true)
	case "deepseek_v3", "deepseek_v2":
		put("model.qk_layernorm", "model_type", true) // q_a_layernorm, kv_a_layernorm
	}
	put("model.bias", "attention_bias", bias)

	// Mixture of experts.
	experts := ""
	for _, k := range []string{"num_local_experts", "num_experts", "n_routed_experts"} {
		if _, ok := num(k); ok {
			experts = k
		}
	}
	if experts != "" {
		putInt("model.moe.experts", experts)
		for _, k := range []string{"num_experts_per_tok", "experts_per_token"} {
			putInt("model.moe.topk", k)
		}
		if !putInt("model.moe.ffn_hidden", "moe_intermediate_size") && (mt == "mixtral" || mt == "gpt_oss" || mt == "llama4_text") {
			putInt("model.moe.ffn_hidden", "intermediate_size")
		}
		if mt == "llama4_text" {
			// Llama4TextMoe (transformers): one shared expert of the routed
			// experts' size beside them, and the router's top-k logits
			// through a sigmoid; Llama4TextMLP of the dense layers takes
			// intermediate_size_mlp. NeMo's Llama4Config: moe_ffn_hidden_size
			// and moe_shared_expert_intermediate_size 8192, ffn_hidden_size
			// 16384, moe_router_score_function "sigmoid".
			putInt("model.moe.shared_ffn_hidden", "intermediate_size")
			putInt("model.ffn_hidden", "intermediate_size_mlp")
			put("model.moe.score_function", "model_type", "sigmoid")
			// Its router weight scales the expert's input, not its output
			// (Megatron's --moe-apply-probs-on-input, which NeMo's
			// Llama4Config sets): no spec field.
			r.Diags.Warnf(pos, "model.moe", "import-hf-unexpressed", "check the routing against the model",
				"Llama 4 applies the router weight to the expert's input (Megatron's --moe-apply-probs-on-input), which the spec cannot say: Megatron's default scales the expert's output")
			if n, ok := num("interleave_moe_layer_step"); ok && n.String() != "1" {
				// Llama4TextConfig: moe_layers k-1, 2k-1, … (NeMo's
				// Maverick: moe_layer_freq [0, 1]*24), which no layer_freq
				// (layers 0, k, 2k, …) reproduces.
				r.Diags.Warnf(pos, "model.moe", "import-hf-unexpressed", "check which layers are MoE against the model",
					"interleave_moe_layer_step %s puts the experts on layers %s-1, 2·%s-1, …; model.moe.layer_freq (Megatron's --moe-layer-freq) counts from layer 0: the spec makes every layer MoE", n, n, n)
			}
		}
		if n, ok := num("n_shared_experts"); ok {
			s, _ := n.Int64()
			if m, ok := num("moe_intermediate_size"); ok {
				mi, _ := m.Int64()
				put("model.moe.shared_ffn_hidden", "n_shared_experts", s*mi)
			}
		}
		putInt("model.moe.dense_layers", "first_k_dense_replace")
		if sf, _ := c["scoring_func"].(string); sf == "sigmoid" {
			put("model.moe.score_function", "scoring_func", "sigmoid")
		}
		if tm, _ := c["topk_method"].(string); tm == "noaux_tc" {
			put("model.moe.expert_bias", "topk_method", true)
		}
		// Top-k weight normalisation (norm_topk_prob; the config classes of
		// Qwen2-MoE, Qwen3-MoE and DeepSeek-V2 default to false, Mixtral,
		// GPT-OSS and DeepSeek-V3 always normalise). Megatron's router
		// (moe_utils.topk_routing_with_score_function at d98e8a64): softmax
		// after top-k, its default, normalises; --moe-router-pre-softmax
		// takes top-k of the full softmax, unnormalised; sigmoid scores
		// are always normalised when topk > 1.
		norm, present := c["norm_topk_prob"].(bool)
		used["norm_topk_prob"] = true
		if !present {
			norm = mt != "qwen2_moe" && mt != "qwen3_moe" && mt != "deepseek_v2"
		}
		topk := int64(0)
		for _, k := range []string{"num_experts_per_tok", "experts_per_token"} {
			if n, ok := num(k); ok {
				topk, _ = n.Int64()
			}
		}
		scoring, _ := c["scoring_func"].(string)
		switch {
		case scoring == "sigmoid" && !norm && topk > 1:
			r.Diags.Warnf(pos, "model.moe", "import-hf-unexpressed", "check the routing weights against the model",
				"norm_topk_prob false with sigmoid scores: Megatron's router always normalises the top-%d sigmoid scores, the spec cannot say otherwise", topk)
		case scoring != "sigmoid" && !norm:
			put("model.moe.router_pre_softmax", "norm_topk_prob", true)
		}
		putInt("model.moe.router_num_groups", "n_group")
		putInt("model.moe.router_group_topk", "topk_group")
		putNum("model.moe.router_topk_scaling_factor", "routed_scaling_factor")
		// DeepSeek-V2/V3's moe_layer_freq k: layer i ≥ first_k_dense_replace
		// is MoE when i % k == 0, Megatron's --moe-layer-freq k exactly.
		// Qwen-MoE's decoder_sparse_step k makes layer i MoE when
		// (i+1) % k == 0 (layers k-1, 2k-1, …), which no moe_layer_freq
		// reproduces for k > 1.
		if s, ok := num("moe_layer_freq"); ok && s.String() != "1" {
			putInt("model.moe.layer_freq", "moe_layer_freq")
		}
		used["moe_layer_freq"] = true
		if s, ok := num("decoder_sparse_step"); ok && s.String() != "1" {
			r.Diags.Warnf(pos, "model.moe", "import-hf-unexpressed", "check which layers are MoE against the model",
				"decoder_sparse_step %s puts the experts on layers %s-1, 2·%s-1, …; model.moe.layer_freq (Megatron's --moe-layer-freq) counts from layer 0: the spec makes every layer MoE", s, s, s)
		}
		used["decoder_sparse_step"] = true
	}
	// Multi-latent attention.
	if mla {
		putInt("model.mla.q_lora_rank", "q_lora_rank")
		putInt("model.mla.kv_lora_rank", "kv_lora_rank")
		putInt("model.mla.qk_head_dim", "qk_nope_head_dim")
		putInt("model.mla.qk_pos_emb_head_dim", "qk_rope_head_dim")
		putInt("model.mla.v_head_dim", "v_head_dim")
	}
	putInt("model.mtp_layers", "num_nextn_predict_layers")
	if n, ok := c["_name_or_path"].(string); ok && n != "" {
		put("model.name", "_name_or_path", n)
	} else if mt != "" {
		put("model.name", "model_type", mt)
	}

	if mt == "gpt_oss" {
		// GptOssAttention: a learned sink logit per head (Megatron's
		// softmax_type "learnable"); GptOssExperts: a gated quick GELU,
		// glu = gate·σ(1.702·gate), out = (up + 1)·glu (--quick-geglu), as
		// Megatron-Bridge's GPTOSSProvider builds it
		// (src/megatron/bridge/models/gpt_oss/gpt_oss_provider.py).
		put("model.softmax_type", "model_type", "learnable")
		put("model.activation", "model_type", "quick_geglu")
		// GptOssExperts adds 1 to the linear half and clamps both halves
		// at swiglu_limit: Megatron's glu_linear_offset and
		// activation_func_clamp_value, as Megatron-Bridge's
		// gpt_oss_bridge.py sets them (1.0 and 7.0).
		put("model.glu_linear_offset", "model_type", 1.0)
		putNum("model.activation_func_clamp_value", "swiglu_limit")
		w, _ := num("sliding_window")
		types, _ := c["layer_types"].([]any)
		if win, err := w.Int64(); err == nil && win >= 1 {
			if skip, ok := windowSkipFreq(types); ok {
				// GPTOSSProvider: window_size (W, 0).
				put("model.window_size", "sliding_window", []any{win, int64(0)})
				used["layer_types"] = true
				if skip > 0 {
					put("model.window_attn_skip_freq", "layer_types", int64(skip))
				}
			}
		}
	}

	if mt == "llama4_text" {
		// Llama4TextAttention: no RoPE on the layers no_rope_layers marks 0
		// (every fourth, nope_layer_interval; Megatron's --no-rope-freq),
		// where attn_temperature_tuning scales the queries by position; an
		// L2 norm of each head's query and key on the RoPE layers
		// (use_qk_norm; Megatron's --qk-l2-norm); attention in chunks of
		// attention_chunk_size on the RoPE layers (no Megatron option).
		if l, _ := c["no_rope_layers"].([]any); len(l) > 0 && slices.ContainsFunc(l, func(v any) bool { n, _ := v.(json.Number); return n.String() == "0" }) {
			r.Diags.Warnf(pos, "model", "import-hf-unexpressed", "check the spec against the model's architecture",
				"config.json's no_rope_layers leave RoPE out of some layers (Megatron's --no-rope-freq), which the spec cannot say: every layer of the spec rotates")
		}
		if b, _ := c["use_qk_norm"].(bool); b {
			r.Diags.Warnf(pos, "model", "import-hf-unexpressed", "check the spec against the model's architecture",
				"config.json's use_qk_norm (an L2 norm of each head's query and key, Megatron's --qk-l2-norm) has no spec field")
		}
		if n, ok := num("attention_chunk_size"); ok {
			r.Diags.Warnf(pos, "model", "import-hf-unexpressed", "keep train.seq_length at most the chunk, where chunked attention is causal attention",
				"config.json's attention_chunk_size %s (attention within chunks of that many tokens on the RoPE layers) has no spec field: the spec attends causally over the whole sequence, the same for sequences of at most %s tokens", n, n)
		}
	}

	// What changes the model and has no field.
	for _, k := range []string{"sliding_window", "use_sliding_window", "layer_types", "attention_sinks",
		"mlp_only_layers", "partial_rotary_factor", "attn_logit_softcapping", "final_logit_softcapping", "attn_temperature_tuning"} {
		v, ok := get(k)
		if !ok || used[k] {
			continue
		}
		if b, isBool := v.(bool); isBool && !b {
			continue
		}
		if l, isList := v.([]any); isList && len(l) == 0 {
			continue
		}
		if u, set := c["use_sliding_window"].(bool); k == "sliding_window" && set && !u {
			continue // Qwen2/Qwen3 write a window and switch it off
		}
		if l, isList := v.([]any); isList && len(l) > 4 {
			v = fmt.Sprintf("%v … %d entries", l[:2], len(l))
		}
		r.Diags.Warnf(pos, "model", "import-hf-unexpressed", "check the spec against the model's architecture",
			"config.json's %s (%v) has no spec field: the spec does not describe it", k, v)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "// The model of %s", sanitize(file))
	if arch != "" {
		fmt.Fprintf(&b, " (%s)", sanitize(arch))
	}
	b.WriteString(", imported by `parc import hf`.\n// Add cluster, parallel and train (or unify it with a spec that has them).\npackage plan\n\nmodel: {\n")
	blocks := map[string][]field{}
	var order []string
	for _, f := range out {
		p := strings.TrimPrefix(f.path, "model.")
		blk, name, nested := strings.Cut(p, ".")
		if !nested {
			blk, name = "", p
		}
		if _, seen := blocks[blk]; !seen {
			order = append(order, blk)
		}
		f.path = name
		blocks[blk] = append(blocks[blk], f)
	}
	slices.SortStableFunc(order, func(x, y string) int {
		if x == "" {
			return -1
		}
		if y == "" {
			return 1
		}
		return 0
	})
	for _, blk := range order {
		ind := "\t"
		if blk != "" {
			fmt.Fprintf(&b, "\t%s: {\n", blk)
			ind = "\t\t"
		}
		// A field written twice keeps its first place and its last value
		// (rope_scaling of type yarn turns rope_theta's "rope" into "yarn").
		last := map[string]field{}
		for _, f := range blocks[blk] {
			last[f.path] = f
		}
		for _, f := range blocks[blk] {
			if _, todo := last[f.path]; !todo {
				continue
			}
			f = last[f.path]
			delete(last, f.path)
			fmt.Fprintf(&b, "%s%s: %s // %s\n", ind, f.path, importer.CUELiteral(f.value), sanitize(f.key))
		}
		if blk != "" {
			b.WriteString("\t}\n")
		}
	}
	b.WriteString("}\n")
	spec := []byte(b.String())
	if f, err := format.Source(spec); err == nil {
		spec = f
	}
	r.Spec = spec
	return r
}

// importRopeScaling maps a config.json rope_scaling onto Megatron's RoPE
// options (Megatron-LM d98e8a64):
//   - "llama3": --use-rope-scaling --rope-scaling-factor (model.rope_scaling_factor);
//     Megatron's RotaryEmbedding._apply_scaling fixes low_freq_factor 1,
//     high_freq_factor 4 and original_max_position_embeddings 8192.
//   - "yarn" with MLA (DeepSeek-V3): --rotary-scaling-factor, --mscale,
//     --mscale-all-dim, which core_transformer_config_from_args copies into
//     MLATransformerConfig; its original_max_position_embeddings, beta_fast and
//     beta_slow are not arguments and stay 4096, 32 and 1.
//   - "yarn" without MLA (GPT-OSS): --position-embedding-type yarn with
//     --rotary-scaling-factor, --yarn-original-max-position-embeddings,
//     --yarn-beta-fast, --yarn-beta-slow, --mscale, --mscale-all-dim
//     (argument_utils._apply_yarn_config_from_args).
//
// This is the mapping Megatron-Bridge's model_bridge uses too
// (MLA_ROPE_SCALING_MAPPING, YARN_ROPE_SCALING_MAPPING; LlamaBridge for
// llama3). Anything else is named in a warning.
func importRopeScaling(r *Result, pos diag.Pos, rs map[string]any, mla bool, put func(path, key string, v any)) {
	kind, _ := rs["rope_type"].(string)
	if kind == "" {
		kind, _ = rs["type"].(string)
	}
	number := func(k string) (float64, bool) {
		n, ok := rs[k].(json.Number)
		if !ok {
			return 0, false
		}
		f, err := n.Float64()
		return f, err == nil
	}
	unexpressed := func(format string, args ...any) {
		r.Diags.Warnf(pos, "model", "import-hf-unexpressed", "check the model's RoPE against the spec", format, args...)
	}
	// fixed warns when config.json gives k a value Megatron cannot take
	// (it uses want, with no argument to change it).
	fixed := func(k string, want float64, why string) {
		if v, ok := number(k); ok && v != want {
			unexpressed("rope_scaling %s %v: %s uses %v and has no argument for it", k, v, why, want)
		}
	}
	factor, hasFactor := number("factor")
	switch {
	case kind == "llama3" && hasFactor:
		put("model.rope_scaling_factor", "rope_scaling.factor", factor)
		fixed("low_freq_factor", 1, "Megatron's llama3 RoPE scaling")
		fixed("high_freq_factor", 4, "Megatron's llama3 RoPE scaling")
		fixed("original_max_position_embeddings", 8192, "Megatron's llama3 RoPE scaling")
	case kind == "yarn" && hasFactor:
		put("model.rotary_scaling_factor", "rope_scaling.factor", factor)
		if v, ok := number("mscale"); ok {
			put("model.mscale", "rope_scaling.mscale", v)
		}
		if v, ok := number("mscale_all_dim"); ok {
			put("model.mscale_all_dim", "rope_scaling.mscale_all_dim", v)
		}
		if mla {
			fixed("original_max_position_embeddings", 4096, "Megatron's multi-latent attention")
			fixed("beta_fast", 32, "Megatron's multi-latent attention")
			fixed("beta_slow", 1, "Megatron's multi-latent attention")
		} else {
			put("model.position_embedding", "rope_scaling.rope_type", "yarn")
			if v, ok := number("original_max_position_embeddings"); ok && v == float64(int64(v)) && v >= 1 {
				put("model.yarn_original_max_position_embeddings", "rope_scaling.original_max_position_embeddings", int64(v))
			}
			if v, ok := number("beta_fast"); ok {
				put("model.yarn_beta_fast", "rope_scaling.beta_fast", v)
			}
			if v, ok := number("beta_slow"); ok {
				put("model.yarn_beta_slow", "rope_scaling.beta_slow", v)
			}
		}
		if t, ok := rs["truncate"].(bool); ok && !t {
			// --no-yarn-correction-range-round-to-int has no spec field.
			unexpressed("rope_scaling truncate false (--no-yarn-correction-range-round-to-int) has no spec field: Megatron rounds the YaRN correction range")
		}
	default:
		unexpressed("rope_scaling %q has no spec field; the spec has no RoPE scaling", kind)
	}
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r == 0x85 {
			return ' '
		}
		return r
	}, s)
}

// windowSkipFreq reads a layer_types list (sliding_attention or
// full_attention per layer) as the layers Megatron's
// is_layer_window_attention windows: every layer (skip 0), or all but each
// skip-th, counting from 1 (window_attn_skip_freq). ok is false for any
// other pattern, which the unexpressed-keys warning then names.
func windowSkipFreq(types []any) (skip int, ok bool) {
	if len(types) == 0 {
		return 0, false
	}
	sliding := make([]bool, len(types))
	for i, t := range types {
		switch t {
		case "sliding_attention":
			sliding[i] = true
		case "full_attention":
		default:
			return 0, false
		}
	}
	if i := slices.Index(sliding, false); i >= 0 {
		skip = i + 1
	}
	for i, sl := range sliding {
		if sl != (skip == 0 || (i+1)%skip != 0) {
			return 0, false
		}
	}
	return skip, true
}

// nonTransformerLayers names the layers of a config.json that are not a
// transformer's (attention with an MLP or MoE), and the key that says so;
// "" when it names none: state-space (Mamba) layers, as in Nemotron-H's
// hybrid_override_pattern (the pattern Megatron's --hybrid-layer-pattern
// takes) and the mamba_*/ssm_* sizes of Jamba, Zamba, Falcon-H1 and
// Granite's hybrids, or per-layer types that are neither full nor sliding
// attention (Qwen3-Next's linear_attention, LFM2's conv, Granite's mamba).
func nonTransformerLayers(c map[string]any) (what, key string) {
	if p, ok := c["hybrid_override_pattern"].(string); ok && p != "" {
		return "Mamba (state-space) layers", "hybrid_override_pattern"
	}
	for _, k := range []string{"layers_block_type", "layer_types"} {
		l, _ := c[k].([]any)
		for _, v := range l {
			t, _ := v.(string)
			switch t {
			case "", "attention", "full_attention", "sliding_attention":
				continue
			}
			return fmt.Sprintf("%q layers", t), k
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if strings.HasPrefix(k, "mamba_") || strings.HasPrefix(k, "ssm_") {
			return "Mamba (state-space) layers", k
		}
	}
	return "", ""
}
