// Package hf imports the model section of a spec from a Hugging Face
// config.json (parc import hf): Llama, Qwen2/Qwen3 (dense and MoE), Mixtral,
// DeepSeek-V3 and GPT-OSS, as far as the schema can express them. Keys that
// change the model and have no spec field are named in a warning.
package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"parc.dev/parc/internal/importer"
	"slices"
	"strings"

	"cuelang.org/go/cue/format"

	"parc.dev/parc/internal/diag"
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
	pos := diag.Pos{File: file, Line: 1, Column: 1}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var c map[string]any
	if err := dec.Decode(&c); err != nil {
		r.Diags.Errorf(pos, "", "import-hf-json", "give the model's config.json", "%s is not a JSON object: %v", file, err)
		return r
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
	arch := ""
	if a, ok := c["architectures"].([]any); ok && len(a) > 0 {
		arch, _ = a[0].(string)
	}
	mt, _ := c["model_type"].(string)
	used["architectures"], used["model_type"] = true, true

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
	}
	if _, ok := num("rms_norm_eps"); ok {
		put("model.normalization", "rms_norm_eps", "rmsnorm")
		putNum("model.norm_epsilon", "rms_norm_eps")
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
	if rs, ok := c["rope_scaling"].(map[string]any); ok {
		kind, _ := rs["rope_type"].(string)
		if kind == "" {
			kind, _ = rs["type"].(string)
		}
		if f, ok := rs["factor"].(json.Number); ok && (kind == "llama3" || kind == "yarn") {
			v, _ := f.Float64()
			put("model.rope_scaling_factor", "rope_scaling", v)
		} else {
			r.Diags.Warnf(pos, "model", "import-hf-unexpressed", "check the model's RoPE against the spec",
				"rope_scaling %q has no spec field; the spec has no RoPE scaling", kind)
			used["rope_scaling"] = true
		}
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
		if !putInt("model.moe.ffn_hidden", "moe_intermediate_size") && mt == "mixtral" {
			putInt("model.moe.ffn_hidden", "intermediate_size")
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
		putInt("model.moe.router_num_groups", "n_group")
		putInt("model.moe.router_group_topk", "topk_group")
		putNum("model.moe.router_topk_scaling_factor", "routed_scaling_factor")
		if s, ok := num("decoder_sparse_step"); ok && s.String() != "1" {
			putInt("model.moe.layer_freq", "decoder_sparse_step")
		}
		used["decoder_sparse_step"] = true
	}
	// Multi-latent attention.
	if _, ok := num("kv_lora_rank"); ok {
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

	// What changes the model and has no field.
	for _, k := range []string{"sliding_window", "use_sliding_window", "layer_types", "attention_sinks", "swiglu_limit",
		"mlp_only_layers", "partial_rotary_factor", "attn_logit_softcapping", "final_logit_softcapping", "norm_topk_prob"} {
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
		seen := map[string]bool{}
		for _, f := range blocks[blk] {
			if seen[f.path] {
				continue
			}
			seen[f.path] = true
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

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r == 0x85 {
			return ' '
		}
		return r
	}, s)
}
