package megatron

import (
	"slices"
	"strings"

	"parc.dev/parc/internal/spec"
	mg "parc.dev/parc/internal/targets/megatron"
)

// assignment is one spec field the import writes, and the argparse dests of
// the input it stands for.
type assignment struct {
	path  string
	value any // bool, int64, float64, string, []any
	dests []string
	note  string // the comment when no argument says it
	// line, col: where the input says it when no argument does (an
	// exported variable); 0 = no such place.
	line, col int
}

// mapper turns a Megatron namespace into spec assignments.
type mapper struct {
	ns      *mg.Namespace
	out     []assignment
	claimed map[string]bool
	s       *schemaView
	unknown map[string]bool // dests the rules name that Megatron's parser lacks (tests)
}

// get is dest's value as validate_args leaves it: a legacy flag that is on
// (legacyFlags) gives its dest the flag's value.
func (m *mapper) get(dest string) any {
	if _, ok := mg.Defaults[dest]; !ok && m.unknown != nil {
		m.unknown[dest] = true
	}
	for _, l := range legacyFlags {
		if l.dest == dest && m.flag(l.flag) {
			return l.value
		}
	}
	return m.ns.Values[dest]
}

func (m *mapper) isSet(dest string) bool { _, ok := m.ns.Set[dest]; return ok }

func (m *mapper) flag(dest string) bool { b, _ := m.get(dest).(bool); return b }

// claim marks dests as said by the spec, and with each the legacy flags
// validate_args turns into it.
func (m *mapper) claim(dests ...string) {
	for _, d := range dests {
		m.claimed[d] = true
		for _, l := range legacyFlags {
			if l.dest == d {
				m.claimed[l.flag] = true
			}
		}
	}
}

// withLegacy is dests and the legacy flags the input sets for them (the
// arguments an assignment stands for).
func (m *mapper) withLegacy(dests []string) []string {
	out := dests
	for _, d := range dests {
		for _, l := range legacyFlags {
			if l.dest == d && m.isSet(l.flag) && m.flag(l.flag) {
				out = append(slices.Clip(out), l.flag)
			}
		}
	}
	return out
}

// assign writes value at path for dests, if the schema has the field and
// takes the value; it reports whether it did. The dests are claimed either
// way when the schema has the field (a value it refuses is then the
// verification's business).
func (m *mapper) assign(path string, value any, dests ...string) bool {
	if value == nil {
		m.claim(dests...)
		return false
	}
	if !m.s.accepts(path, value) {
		return false
	}
	m.claim(dests...)
	if f, ok := m.s.field(path); ok {
		value = cueValue(f, value)
	}
	m.out = append(m.out, assignment{path: path, value: value, dests: m.withLegacy(dests)})
	return true
}

// simple maps dest to path when the value is not None.
func (m *mapper) simple(path, dest string) {
	m.assign(path, m.get(dest), dest)
}

// single unwraps a one-element list (Megatron options with nargs '+' whose
// spec field holds one value).
func single(v any) any {
	if l, ok := v.([]any); ok && len(l) == 1 {
		return l[0]
	}
	return v
}

// explicit maps the dests whose spec field is not simply named after them,
// or whose meaning depends on other dests (issue 13's naming rule covers
// the rest: see generic).
func (m *mapper) explicit() {
	// Model shape.
	m.simple("model.layers", "num_layers")
	if m.get("num_layers") == nil {
		// A hybrid layer pattern gives Megatron the layer count
		// (validate_args at d98e8a64: num_layers is the main pattern's
		// length without its "|" stage separators, whatever --num-layers
		// says). The pattern itself stays in launch.extra_args, where the
		// Megatron target reports the model it builds (extra-arg-conflict).
		if p := mg.HybridLayerPattern(m.ns.Values); p != "" {
			m.out = append(m.out, assignment{path: "model.layers", value: mg.HybridLayerCount(p),
				note: "not in the arguments: the length of the hybrid layer pattern, which Megatron takes as the layer count"})
		}
	}
	m.simple("model.hidden", "hidden_size")
	m.simple("model.ffn_hidden", "ffn_hidden_size")
	m.simple("model.heads", "num_attention_heads")
	if m.flag("group_query_attention") {
		m.assign("model.query_groups", m.get("num_query_groups"), "group_query_attention", "num_query_groups")
	} else {
		m.claim("group_query_attention")
	}
	m.simple("model.kv_channels", "kv_channels")
	m.simple("model.vocab", "vocab_size")
	m.simple("model.make_vocab_divisible_by", "make_vocab_size_divisible_by")
	m.simple("model.max_position_embeddings", "max_position_embeddings")
	m.activation()
	switch m.get("normalization") {
	case "RMSNorm":
		m.assign("model.normalization", "rmsnorm", "normalization")
	case "LayerNorm":
		m.assign("model.normalization", "layernorm", "normalization")
	}
	m.simple("model.norm_epsilon", "layernorm_epsilon")
	m.simple("model.position_embedding", "position_embedding_type")
	m.simple("model.rotary_base", "rotary_base")
	m.simple("model.rotary_percent", "rotary_percent")
	mla := m.flag("multi_latent_attention")
	if m.flag("use_rope_scaling") {
		m.assign("model.rope_scaling_factor", m.get("rope_scaling_factor"), "use_rope_scaling", "rope_scaling_factor")
	} // --rotary-scaling-factor (YaRN, MLA's too) is model.rotary_scaling_factor: see generic
	if !m.isSet("rope_scaling_factor") {
		m.claim("rope_scaling_factor") // Megatron reads it only with --use-rope-scaling
	}
	m.assign("model.tie_embeddings", !m.flag("untie_embeddings_and_output_weights"), "untie_embeddings_and_output_weights")
	m.simple("model.bias", "add_bias_linear")
	m.simple("model.qkv_bias", "add_qkv_bias")
	m.simple("model.qk_layernorm", "qk_layernorm")
	if mla {
		m.claim("multi_latent_attention")
		m.simple("model.mla.q_lora_rank", "q_lora_rank")
		m.simple("model.mla.kv_lora_rank", "kv_lora_rank")
		m.simple("model.mla.qk_head_dim", "qk_head_dim")
		m.simple("model.mla.qk_pos_emb_head_dim", "qk_pos_emb_head_dim")
		m.simple("model.mla.v_head_dim", "v_head_dim")
	}
	if m.get("mtp_num_layers") != nil {
		m.simple("model.mtp_layers", "mtp_num_layers")
	} else {
		m.claim("mtp_num_layers")
	}
	if m.get("num_experts") != nil {
		m.simple("model.moe.experts", "num_experts")
		m.simple("model.moe.topk", "moe_router_topk")
		m.simple("model.moe.ffn_hidden", "moe_ffn_hidden_size")
		if v := m.get("moe_shared_expert_intermediate_size"); v != nil {
			m.assign("model.moe.shared_ffn_hidden", v, "moe_shared_expert_intermediate_size")
		}
		m.moeLayerFreq()
		m.simple("model.moe.grouped_gemm", "moe_grouped_gemm")
		m.simple("model.moe.dispatcher", "moe_token_dispatcher_type")
		m.assign("model.moe.router_load_balancing", single(m.get("moe_router_load_balancing_type")), "moe_router_load_balancing_type")
		m.assign("model.moe.aux_loss_coeff", single(m.get("moe_aux_loss_coeff")), "moe_aux_loss_coeff")
		m.simple("model.moe.score_function", "moe_router_score_function")
		m.simple("model.moe.router_pre_softmax", "moe_router_pre_softmax")
		m.simple("model.moe.expert_bias", "moe_router_enable_expert_bias")
		m.simple("model.moe.capacity_factor", "moe_expert_capacity_factor")
		m.simple("model.moe.pad_expert_input_to_capacity", "moe_pad_expert_input_to_capacity")
		m.simple("model.moe.router_padding_for_quantization", "moe_router_padding_for_quantization")
		m.simple("model.moe.router_dtype", "moe_router_dtype")
	}

	// Parallelism.
	m.simple("parallel.tp", "tensor_model_parallel_size")
	m.simple("parallel.pp", "pipeline_model_parallel_size")
	if v := m.get("num_virtual_stages_per_pipeline_rank"); v != nil {
		m.assign("parallel.vpp", v, "num_virtual_stages_per_pipeline_rank")
	} else if vpp, ok := virtualStages(m.ns.Values); ok {
		m.assign("parallel.vpp", vpp, "num_layers_per_virtual_pipeline_stage")
	}
	m.simple("parallel.cp", "context_parallel_size")
	m.simple("parallel.ep", "expert_model_parallel_size")
	m.simple("parallel.etp", "expert_tensor_parallel_size")
	if tp, _ := m.get("tensor_model_parallel_size").(int64); tp > 1 && !m.flag("sequence_parallel") {
		// parc turns sequence parallelism on with tp > 1; Megatron does not.
		m.assign("parallel.sp", false, "sequence_parallel")
	} else {
		m.claim("sequence_parallel")
	}
	if m.flag("use_tp_pp_dp_mapping") {
		m.assign("parallel.order", spec.OrderPPDP, "use_tp_pp_dp_mapping")
	} else {
		m.claim("use_tp_pp_dp_mapping")
	}
	m.simple("parallel.first_stage_layers", "decoder_first_pipeline_num_layers")
	m.simple("parallel.last_stage_layers", "decoder_last_pipeline_num_layers")
	m.simple("parallel.account_for_embedding", "account_for_embedding_in_pipeline_split")
	m.simple("parallel.account_for_loss", "account_for_loss_in_pipeline_split")
	m.simple("parallel.microbatch_group_size", "microbatch_group_size_per_vp_stage")
	m.simple("parallel.overlap_p2p", "overlap_p2p_comm")
	m.assign("parallel.cp_comm_type", single(m.get("cp_comm_type")), "cp_comm_type")
	m.simple("parallel.hierarchical_cp", "hierarchical_context_parallel_sizes")
	m.simple("parallel.distributed_optimizer_instances", "num_distributed_optimizer_instances")
	m.simple("parallel.layout", "pipeline_model_parallel_layout")

	// Training.
	m.simple("train.seq_length", "seq_length")
	m.simple("train.micro_batch", "micro_batch_size")
	m.simple("train.global_batch", "global_batch_size")
	switch {
	case m.get("fp8") != nil:
		m.assign("train.precision", "fp8", "fp8")
		m.simple("train.fp8_format", "fp8")
		switch {
		case m.flag("bf16"):
			m.assign("train.fp8_base", "bf16", "bf16", "fp16")
		case m.flag("fp16"):
			m.assign("train.fp8_base", "fp16", "bf16", "fp16")
		default:
			m.assign("train.fp8_base", "fp32", "bf16", "fp16")
		}
	case m.get("fp4") != nil && m.flag("bf16"):
		// NVFP4 GEMMs in a bf16 model: precision "fp4" (e2m1, the only
		// --fp4-format); fp4_recipe and fp4_param_gather map by name.
		m.assign("train.precision", "fp4", "fp4", "bf16", "fp16")
	case m.flag("bf16"):
		m.assign("train.precision", "bf16", "bf16", "fp16")
	case m.flag("fp16"):
		m.assign("train.precision", "fp16", "bf16", "fp16")
	default:
		m.assign("train.precision", "fp32", "bf16", "fp16")
	}
	switch g := m.get("recompute_granularity"); g {
	case nil:
		m.assign("train.recompute", "none", "recompute_granularity")
	default:
		m.simple("train.recompute", "recompute_granularity")
	}
	m.simple("train.recompute_layers", "recompute_num_layers")
	name, _ := m.get("optimizer").(string)
	if o, layerWise := spec.MegatronOptimizer(name); layerWise {
		// dist_muon: muon with the layer-wise distributed optimizer, which
		// parc compiles from muon and the distributed optimizer.
		m.assign("train.optimizer", o, "optimizer")
		m.assign("train.distributed_optimizer", true, "optimizer", "use_distributed_optimizer")
	} else {
		m.simple("train.optimizer", "optimizer")
		m.simple("train.distributed_optimizer", "use_distributed_optimizer")
	}
	if name != "adam" && name != "sgd" {
		// Only an emerging optimizer reads it (the layer-wise optimizer's
		// layout); beside adam or sgd it stays an extra argument.
		m.simple("train.layer_wise_param_layout", "use_layer_wise_param_layout")
	}
	m.simple("train.precision_aware_optimizer", "use_precision_aware_optimizer")
	m.simple("train.fsdp", "use_megatron_fsdp")
	m.simple("train.iters", "train_iters")
	m.simple("train.samples", "train_samples")

	// Data.
	if paths := m.get("data_path"); paths != nil {
		m.assign("data.paths", paths, "data_path")
		m.simple("data.split", "split")
		m.claim("mock_data")
	} else {
		m.claim("split")
	}
	m.simple("data.cache_path", "data_cache_path")
	if m.get("tokenizer_type") == nil {
		// pretrain_gpt.py passes args_defaults={'tokenizer_type': 'GPT2BPETokenizer'}
		m.out = append(m.out, assignment{path: "data.tokenizer.type", value: "GPT2BPETokenizer", dests: []string{"tokenizer_type"},
			note: "not in the arguments: pretrain_gpt.py's default"})
		m.claim("tokenizer_type")
	} else {
		m.simple("data.tokenizer.type", "tokenizer_type")
	}

	// CUDA graphs: --cuda-graph-scope is Megatron's deprecated spelling of
	// --cuda-graph-modules (dest cuda_graph_scope_deprecated at d98e8a64),
	// which Megatron-Bridge's performance recipes still write; the spec
	// keeps it as kernels.cuda_graph_scope, which compiles back to it.
	m.simple("kernels.cuda_graph_scope", "cuda_graph_scope_deprecated")

	// Checkpoints and logging.
	if m.get("save") != nil || m.get("load") != nil {
		m.simple("checkpoint.save", "save")
		m.simple("checkpoint.load", "load")
		m.simple("checkpoint.interval", "save_interval")
		m.simple("checkpoint.format", "ckpt_format")
	}
	m.simple("logging.interval", "log_interval")
	if m.get("eval_interval") == nil {
		// Megatron's None: parc's default is 1000, null leaves it out.
		m.out = append(m.out, assignment{path: "logging.eval_interval", value: cueNull{}, dests: []string{"eval_interval"},
			note: "not in the arguments: Megatron's default (None)"})
		m.claim("eval_interval")
	} else {
		m.simple("logging.eval_interval", "eval_interval")
	}
}

// cueNull is CUE's null: a field the spec leaves to Megatron's None.
type cueNull struct{}

// activation maps the activation flags (mg.ActivationFlags: the first one
// set, in Megatron's precedence; either of the others with --swiglu is
// rejected, megatronRejects) to model.activation, or gelu when none is set
// and no activation parc has no name for is either.
func (m *mapper) activation() {
	value, dests := "gelu", make([]string, 0, len(mg.ActivationFlags))
	for _, f := range mg.ActivationFlags {
		if value == "gelu" && m.flag(f.Dest) {
			value = f.Dest
			dests = append([]string{f.Dest}, dests...) // the set flag first: the spec's comment cites it
			continue
		}
		dests = append(dests, f.Dest)
	}
	if value != "gelu" || !m.otherActivation() {
		m.assign("model.activation", value, dests...)
	}
}

// otherActivation reports whether the input picks an activation parc has no
// name for (it is carried as an extra argument).
func (m *mapper) otherActivation() bool {
	for _, d := range []string{"openai_gelu", "onnx_safe"} {
		if b, ok := m.get(d).(bool); ok && b {
			return true
		}
	}
	return false
}

// moeLayerFreq maps --moe-layer-freq: an integer k is layer_freq k; a
// pattern of d dense layers followed by MoE layers is dense_layers d.
func (m *mapper) moeLayerFreq() {
	switch v := m.get("moe_layer_freq").(type) {
	case int64:
		m.assign("model.moe.layer_freq", v, "moe_layer_freq")
	case []any:
		d := 0
		for d < len(v) && mg.Equal(v[d], int64(0)) {
			d++
		}
		for _, x := range v[d:] {
			if !mg.Equal(x, int64(1)) {
				return
			}
		}
		if d < len(v) {
			m.assign("model.moe.dense_layers", int64(d), "moe_layer_freq")
		}
	}
}

// blocks are where issue 13's naming rule puts a dest: the block, and the
// prefix of the dest the block's name already says.
var blocks = []struct{ block, prefix string }{
	{"train", ""},
	{"parallel", ""},
	{"model", ""},
	{"model.moe", "moe_"},
	{"model.mla", ""},
	{"kernels", ""},
	{"data", ""},
	{"data.tokenizer", "tokenizer_"},
	{"checkpoint", ""},
	{"logging", ""},
}

// generic maps every dest no explicit rule claimed to the field the naming
// rule gives it (field name = dest in its block, the block's prefix
// dropped), when the schema has that field and it takes the value.
func (m *mapper) generic(dests []string) {
	moe := m.get("num_experts") != nil
	mla := m.flag("multi_latent_attention")
	ckpt := m.get("save") != nil || m.get("load") != nil
	for _, d := range dests {
		if m.claimed[d] {
			continue
		}
		v := m.get(d)
		if v == nil {
			continue
		}
		_, set := m.ns.Set[d]
		for _, b := range blocks {
			name, _ := strings.CutPrefix(d, b.prefix)
			if name == "" {
				continue
			}
			switch {
			case b.block == "model.moe" && !moe, b.block == "model.mla" && !mla, b.block == "checkpoint" && !ckpt:
				continue
			}
			p := b.block + "." + name
			if _, has := m.s.field(p); !has {
				continue
			}
			if _, hasDefault := m.s.defaultOf(p); !set && !hasDefault && !derivedInGo[p] {
				continue // an optional field stays out unless the input sets it
			}
			if m.assign(p, single(v), d) || m.assign(p, v, d) {
				break
			}
		}
	}
}

// virtualStages is the virtual pipeline size --num-layers-per-virtual-
// pipeline-stage gives: (num_layers / pp) / n, the embedding and loss
// counted as layers when the split accounts for them (validate_args), when it divides.
func virtualStages(v map[string]any) (int64, bool) {
	n, ok := asInt(v["num_layers_per_virtual_pipeline_stage"])
	layers, _ := asInt(v["num_layers"])
	for _, d := range []string{"account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"} {
		if b, _ := v[d].(bool); b {
			layers++ // validate_args counts them as layers
		}
	}
	pp, _ := asInt(v["pipeline_model_parallel_size"])
	if !ok || n <= 0 || pp <= 0 || layers%pp != 0 || (layers/pp)%n != 0 {
		return 0, false
	}
	return layers / pp / n, true
}

// derivedInGo are the optional fields whose default the loader derives from
// other fields in Go (spec.DefaultTPCommOverlap, spec.DefaultBiasDropoutFusion,
// spec.DefaultBiasGeluFusion), not in the schema: an input that leaves one
// out still gets Megatron's value written when derivedDefault differs from it.
var derivedInGo = map[string]bool{"parallel.tp_comm_overlap": true, "kernels.bias_dropout_fusion": true, "kernels.bias_gelu_fusion": true}
