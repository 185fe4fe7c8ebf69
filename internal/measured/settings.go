// Package measured turns the recipe settings recorded on a measured run
// (internal/estimate/testdata/measured/runs.jsonl, Megatron-Bridge's names)
// into spec CUE. The calibration (internal/estimate) and the solver's
// corpus sweep (internal/solve) both judge a run with the settings it was
// measured with, so both read them here.
package measured

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ModelKernelsCUE is the CUE of a run's MoE and kernel settings: lines
// setting model.moe, launch.env and kernels, or "" when the run records none.
func ModelKernelsCUE(settings map[string]any) string {
	var b strings.Builder
	var moe []string
	if v, ok := settings["moe_token_dispatcher_type"].(string); ok {
		moe = append(moe, fmt.Sprintf("dispatcher: %q", v))
	}
	if v, ok := settings["moe_flex_dispatcher_backend"].(string); ok {
		moe = append(moe, fmt.Sprintf("flex_dispatcher_backend: %q", v))
	}
	for _, k := range []string{"router_force_load_balancing", "shared_expert_overlap", "pad_expert_input_to_capacity", "paged_stash", "router_padding_for_quantization"} {
		if v, ok := settings["moe_"+k].(bool); ok {
			moe = append(moe, fmt.Sprintf("%s: %v", k, v))
		}
	}
	if v, ok := settings["moe_expert_capacity_factor"].(float64); ok {
		moe = append(moe, fmt.Sprintf("capacity_factor: %v", v))
	}
	for _, k := range []string{"expert_rank_capacity_factor", "paged_stash_buffer_size_factor_cuda"} {
		if v, ok := settings["moe_"+k].(float64); ok {
			moe = append(moe, fmt.Sprintf("%s: %v", k, v))
		}
	}
	if len(moe) > 0 {
		fmt.Fprintf(&b, "model: moe: {%s}\n", strings.Join(moe, ", "))
	}
	var kern []string
	if v, ok := settings["cuda_graph_impl"].(string); ok {
		kern = append(kern, fmt.Sprintf("cuda_graph_impl: %q", v))
		if sc, ok := settings["cuda_graph_scope"].([]any); ok {
			q, _ := json.Marshal(sc)
			kern = append(kern, fmt.Sprintf("cuda_graph_scope: %s", q))
		}
	}
	for _, k := range []string{"moe_permute_fusion", "moe_router_fusion", "cross_entropy_loss_fusion", "apply_rope_fusion", "gradient_accumulation_fusion", "bias_dropout_fusion"} {
		if v, ok := settings[k].(bool); ok {
			kern = append(kern, fmt.Sprintf("%s: %v", k, v))
		}
	}
	for _, k := range []string{"cross_entropy_fusion_impl", "attention_backend"} {
		if v, ok := settings[k].(string); ok {
			if k == "attention_backend" && v == "local" {
				// Megatron's own unfused core attention (the 2021-22
				// papers' runs) needs its local layer spec, which parc's
				// Transformer Engine plans do not use (check
				// kernel-options); Transformer Engine's unfused attention
				// runs the same kernels (baddbmm, fused scale-mask-softmax,
				// bmm) and the estimate times the two alike
				// (unfusedAttention), so the run is written with it.
				v = "unfused"
			}
			kern = append(kern, fmt.Sprintf("%s: %q", k, v))
		}
	}
	// Megatron-Bridge's cutedsl_fused_grouped_mlp: use_transformer_engine_op_fuser
	// (scripts/performance/utils/overrides.py) and NVTE_CUTEDSL_FUSED_GROUPED_MLP=1
	// in the job's environment (perf_plugins.py), r0.5.0; a recipe may set
	// the op fuser alone (use_transformer_engine_op_fuser).
	if v, ok := settings["cutedsl_fused_grouped_mlp"].(bool); ok && v {
		kern = append(kern, "use_transformer_engine_op_fuser: true")
		b.WriteString("launch: env: {NVTE_CUTEDSL_FUSED_GROUPED_MLP: \"1\"}\n")
	} else if v, ok := settings["use_transformer_engine_op_fuser"].(bool); ok && v {
		kern = append(kern, "use_transformer_engine_op_fuser: true")
	}
	if len(kern) > 0 {
		fmt.Fprintf(&b, "kernels: {%s}\n", strings.Join(kern, ", "))
	}
	return b.String()
}
