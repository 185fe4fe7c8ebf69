package check

import (
	"fmt"
	"slices"
	"strings"
)

// attention checks heads, query groups, head dimension, FFN and position
// rules (S1–S3, S6–S8, S10, S11 and the MTP position-embedding rule).
// maxPositions is the schema's bound on model.max_position_embeddings.
const maxPositions = 1 << 26

func (c *checker) attention() {
	m, tp := c.s.Model, c.s.Parallel.TP
	a, g := m.Heads, c.groups()
	tpHint := func(code, what string) string {
		return listHint(fmt.Sprintf("tp must divide %s: valid tp here", what), c.validTP(code),
			fmt.Sprintf("tp must divide %s; %s", what, noValue("parallel.tp")))
	}

	if a%tp != 0 {
		c.report("tp-heads", "parallel.tp", tpHint("tp-heads", c.headsText()),
			"tp=%d does not divide heads=%d", tp, a).
			Related("model.heads", "heads = %d", a)
	}
	if g%tp != 0 && tp%g != 0 && a%tp == 0 { // with tp-heads the same fix applies
		c.report("tp-query-groups", "parallel.tp", tpHint("tp-query-groups", c.headsText()),
			"query_groups=%d is neither a multiple nor a divisor of tp=%d", g, tp).
			Related("model.query_groups", "query_groups = %d", g)
	}
	if a%g != 0 {
		c.report("query-groups-heads", "model.query_groups",
			listHint(fmt.Sprintf("valid query_groups for heads=%d", a), c.near("query-groups-heads", "model.query_groups", g, divisors(a)), noValue("model.query_groups")),
			"query_groups=%d does not divide heads=%d", g, a).
			Related("model.heads", "heads = %d", a)
	}
	if m.KVChannels == nil && m.Hidden%a != 0 {
		// kv_channels is the head dimension, free in Megatron (GPT-OSS:
		// hidden 2880, 64 heads of 64). The values offered keep it next to
		// hidden/heads: that quotient rounded to a multiple of 8 (what
		// fused attention kernels take), and rounded down.
		kv := []int{}
		if r := (m.Hidden/a + 4) / 8 * 8; r >= 8 {
			kv = append(kv, r)
		}
		if f := m.Hidden / a; f >= 1 && !slices.Contains(kv, f) {
			kv = append(kv, f)
		}
		var kvOpts []option
		for _, v := range kv {
			kvOpts = append(kvOpts, setOpt(setting{"model.kv_channels", v}))
		}
		kvHint := "set model.kv_channels (the head dimension)"
		if len(kvOpts) > 0 {
			kvHint = c.anyOf("hidden-heads", "model.heads", kvOpts...) + fmt.Sprintf(" (the head dimension; hidden/heads = %.4g)", float64(m.Hidden)/float64(a))
		}
		c.report("hidden-heads", "model.heads",
			listHint(fmt.Sprintf("heads dividing hidden=%d", m.Hidden), c.near("hidden-heads", "model.heads", a, divisors(m.Hidden)), noValue("model.heads"))+"; or "+kvHint,
			"hidden=%d is not divisible by heads=%d, so the head dimension (kv_channels) cannot be derived", m.Hidden, a).
			Related("model.hidden", "hidden = %d", m.Hidden)
	}
	if c.d.MaxPositions < c.s.Train.SeqLength {
		const path = "model.max_position_embeddings"
		var opts []string
		if c.acceptsRange("max-positions", path, c.s.Train.SeqLength, min(2*c.s.Train.SeqLength, maxPositions)) {
			opts = append(opts, fmt.Sprintf("set max_position_embeddings ≥ %d", c.s.Train.SeqLength))
		}
		// Only a field the user wrote can be removed; a preset's value
		// (models.qwen3_30b_a3b's 40960) is overridden, as the first
		// option says.
		if c.written(path) && c.acceptsAt("max-positions", path, setting{path, nil}) {
			opts = append(opts, "remove "+path+" (it defaults to seq_length)")
		}
		hint := strings.Join(opts, ", or ")
		if len(opts) == 0 {
			hint = noValue(path)
		}
		c.report("max-positions", "model.max_position_embeddings", hint,
			"max_position_embeddings=%d is smaller than seq_length=%d", c.d.MaxPositions, c.s.Train.SeqLength).
			Related("train.seq_length", "seq_length = %d", c.s.Train.SeqLength)
	}
	if m.MLA != nil && m.QueryGroups != nil {
		c.report("mla-query-groups", "model.query_groups", c.anyOf("mla-query-groups", "model.query_groups",
			setOpt(setting{"model.query_groups", nil}).note("multi-latent attention has no query groups")),
			"multi-latent attention (model.mla) and grouped-query attention (query_groups=%d) are mutually exclusive", *m.QueryGroups)
	}
	if f := c.d.FFNHidden; f%tp != 0 {
		hint := tpHint("ffn-tp", fmt.Sprintf("ffn_hidden=%d", f))
		if m.FFNHidden != nil && !c.fieldFails("parallel.tp") {
			b, ab := c.nearest("ffn-tp", "model.ffn_hidden", f, tp, 24, nil)
			if b > 0 || ab > 0 {
				hint += "; or ffn_hidden = " + nearestText(b, ab)
			}
		}
		c.report("ffn-tp", c.ffnPath(), hint,
			"ffn_hidden=%d%s is not divisible by tp=%d", f, c.ffnOrigin(), tp)
	}
	if m.MTPLayers > 0 && m.PositionEmbedding != "rope" && m.PositionEmbedding != "none" {
		c.report("mtp-position-embedding", "model.position_embedding", c.anyOf("mtp-position-embedding", "model.position_embedding",
			setOpt(setting{"model.position_embedding", "rope"}), setOpt(setting{"model.position_embedding", "none"}),
			setOpt(setting{"model.mtp_layers", 0})),
			"multi-token prediction (mtp_layers=%d) does not support position_embedding %q", m.MTPLayers, m.PositionEmbedding)
	}
	c.windowSkipFreq()
	c.gluOptions()
}

// gluOptions: a gated activation's linear offset and input clamp
// (--glu-linear-offset, --activation-func-clamp-value), as
// TransformerConfig.__post_init__ at d98e8a64 takes them. It raises
// "When bias_activation_fusion is True and glu_linear_offset is non-zero,
// activation function must be quick_gelu", and for a clamped SwiGLU
// "activation_func_clamp_value for SwiGLU must be finite and greater than
// zero", "... is only supported with MoE" and "glu_linear_offset must be
// zero when activation_func_clamp_value is set for SwiGLU"
// (bias_activation_fusion: biasActivationFusion). Only the gated MLPs read either value (mlp.py, moe/experts.py:
// glu and the fused weighted GLU kernels); an ungated activation keeps
// neither, which Megatron accepts.
func (c *checker) gluOptions() {
	m := c.s.Model
	const offPath, clampPath = "model.glu_linear_offset", "model.activation_func_clamp_value"
	fusion, fusionPath := c.biasActivationFusion()
	if m.GLULinearOffset != 0 && fusion && m.Activation != "quick_geglu" {
		c.report("glu-options", offPath, c.anyOf("glu-options", offPath,
			setOpt(setting{offPath, 0.0}), setOpt(setting{fusionPath, false})),
			"glu_linear_offset=%g with the fused bias-activation kernel (%s, on) needs the quick_geglu activation, not %s", m.GLULinearOffset, fusionPath, m.Activation)
	}
	clamp := m.ActivationFuncClampValue
	if clamp != nil && m.Activation == "swiglu" {
		remove := setOpt(setting{clampPath, nil})
		switch {
		case *clamp <= 0:
			c.report("glu-options", clampPath, c.anyOf("glu-options", clampPath, remove),
				"activation_func_clamp_value=%g: a clamped swiglu needs a value greater than zero", *clamp)
		case m.MoE == nil:
			c.report("glu-options", clampPath, c.anyOf("glu-options", clampPath, remove),
				"activation_func_clamp_value=%g: Megatron clamps swiglu only in an MoE, and this model has no experts", *clamp)
		case m.GLULinearOffset != 0:
			c.report("glu-options", offPath, c.anyOf("glu-options", offPath, setOpt(setting{offPath, 0.0}), remove),
				"glu_linear_offset=%g with a clamped swiglu (activation_func_clamp_value=%g): Megatron needs the offset 0", m.GLULinearOffset, *clamp)
		}
	}
	if m.GatedMLP() {
		return
	}
	if m.GLULinearOffset != 0 && !fusion { // fused, the rule above rejects it
		c.report("glu-options-unused", offPath, c.anyOf("glu-options-unused", offPath, setOpt(setting{offPath, 0.0})),
			"glu_linear_offset=%g has no effect: the %s activation is not gated, and only a gated MLP adds the offset", m.GLULinearOffset, m.Activation)
	}
	if clamp != nil {
		c.report("glu-options-unused", clampPath, c.anyOf("glu-options-unused", clampPath, setOpt(setting{clampPath, nil})),
			"activation_func_clamp_value=%g has no effect: the %s activation is not gated, and only a gated MLP clamps its inputs", *clamp, m.Activation)
	}
}

// windowSkipFreq: --window-attn-skip-freq without --window-size. Megatron
// accepts it (no check in validate_args or TransformerConfig at d98e8a64)
// and ignores it: is_layer_window_attention (megatron/core/transformer/
// utils.py) returns False for every layer when window_size is unset, before
// it looks at the skip frequency, so every layer keeps full attention. parc
// emits no --window-attn-skip-freq then (targets/megatron), and says so.
func (c *checker) windowSkipFreq() {
	m := c.s.Model
	if m.WindowAttnSkipFreq == nil || len(m.WindowSize) > 0 {
		return
	}
	const path = "model.window_attn_skip_freq"
	c.report("window-attn-skip-freq-unused", path,
		c.anyOf("window-attn-skip-freq-unused", path, setOpt(setting{path, nil}).note("without model.window_size every layer keeps full attention")),
		"window_attn_skip_freq=%d has no effect without model.window_size: Megatron windows no layer and ignores it", *m.WindowAttnSkipFreq)
}

func (c *checker) headsText() string {
	if c.groups() != c.s.Model.Heads {
		return fmt.Sprintf("heads=%d and divide or be a multiple of query_groups=%d", c.s.Model.Heads, c.groups())
	}
	return fmt.Sprintf("heads=%d", c.s.Model.Heads)
}

// ffnPath blames ffn_hidden when the user gave it, else tp.
func (c *checker) ffnPath() string {
	if c.s.Model.FFNHidden != nil {
		return "model.ffn_hidden"
	}
	return "parallel.tp"
}

func (c *checker) ffnOrigin() string {
	if c.s.Model.FFNHidden != nil {
		return ""
	}
	if c.s.Model.Activation == "swiglu" {
		return fmt.Sprintf(" (the swiglu default int(8·%d/3/64)·64)", c.s.Model.Hidden)
	}
	return fmt.Sprintf(" (the default 4·hidden = 4·%d)", c.s.Model.Hidden)
}
