package check

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/spec"
)

// A hintForm is one way a hint suggests values: the text that carries them,
// the field they are for (empty: the diagnostic's own path), and how the
// captured text becomes settings to try. Every value a hint prints must be
// covered by a form (TestHintsSuggestValidValues fails on a hint of a
// value-suggesting code that matches none).
type hintForm struct {
	re   *regexp.Regexp
	path string
	// values turns the capture into the values to try (default: the
	// integers of a list like "96 or 112" or "1, 2, …, 64").
	values func(capture string, rng *rand.Rand) []any
	// sets, when given, turns the whole match into settings tried together.
	sets func(m []string) [][]setting
}

var list = `([0-9](?:[0-9, …or]*[0-9])?)`

func form(re, path string) hintForm {
	return hintForm{re: regexp.MustCompile(re), path: path}
}

// atMost, below and atLeast sample a range hint: both ends and values in
// between, so a range is only printed when all of it passes.
func atMost(lo int) func(string, *rand.Rand) []any {
	return func(c string, rng *rand.Rand) []any { n, _ := strconv.Atoi(c); return sample(rng, lo, n) }
}
func below(lo int) func(string, *rand.Rand) []any {
	return func(c string, rng *rand.Rand) []any { n, _ := strconv.Atoi(c); return sample(rng, lo, n-1) }
}
func atLeast(c string, rng *rand.Rand) []any { n, _ := strconv.Atoi(c); return sample(rng, n, 4*n) }

func sample(rng *rand.Rand, lo, hi int) []any {
	if hi < lo {
		return []any{hi} // an empty range: the value fails, and the test says so
	}
	out := []any{lo, hi}
	for range 3 {
		out = append(out, lo+rng.Intn(hi-lo+1))
	}
	return out
}

var hintForms = []hintForm{
	form(`nearest valid global_batch: `+list, "train.global_batch"),
	form(`with the interleaved schedule: `+list, "train.global_batch"),
	form(`nearest valid seq_length: `+list, "train.seq_length"),
	form(`or ffn_hidden = `+list, "model.ffn_hidden"),
	form(`valid tp here: `+list, "parallel.tp"),
	form(`valid tp with pp=\d+, cp=\d+: `+list, "parallel.tp"),
	form(`valid pp with tp=\d+, cp=\d+: `+list, "parallel.pp"),
	form(`(?:^|or )cp in `+list, "parallel.cp"),
	form(`valid query_groups for heads=\d+: `+list, "model.query_groups"),
	form(`heads dividing hidden=\d+: `+list, "model.heads"),
	{re: regexp.MustCompile(`set max_position_embeddings ≥ (\d+)`), path: "model.max_position_embeddings", values: atLeast},
	form(`valid ep with etp=\d+, pp=\d+: `+list, "parallel.ep"),
	form(`use cluster.nodes = (\d+)`, "cluster.nodes"),
	{re: regexp.MustCompile(`(remove parallel\.dp)`), path: "parallel.dp", values: func(string, *rand.Rand) []any { return []any{nil} }},
	form(`valid instance counts here: `+list, "parallel.distributed_optimizer_instances"),
	form(`divisors of gpus_per_node=\d+: `+list, "cluster.nvlink_domain"),
	form(`as on NVL72\): `+list, "cluster.nvlink_domain"),
	form(`divisors of nodes=\d+: `+list, "cluster.slurm.segment"),
	form(`\bpp values dividing \d+(?: that fit the world size)?: `+list, "parallel.pp"),
	form(`vpp values dividing \d+: `+list, "parallel.vpp"),
	form(`use a multiple of vpp=\d+: `+list, ""),
	form(`microbatch_group_size must be at least pp=\d+ \(M=\d+ microbatches\): valid values: `+list, "parallel.microbatch_group_size"),
	{re: regexp.MustCompile(`(or remove it \(default pp\))`), path: "parallel.microbatch_group_size", values: func(string, *rand.Rand) []any { return []any{nil} }},
	form(`ep values dividing experts=\d+ that fit the world size: `+list, "parallel.ep"),
	form(`valid topk: `+list, "model.moe.topk"),
	form(`etp values dividing \d+ that fit the world size: `+list, "parallel.etp"),
	form(`nearest multiples of tp: `+list, "model.moe.shared_ffn_hidden"),
	form(`valid dense_layers: `+list, "model.moe.dense_layers"),
	{re: regexp.MustCompile(`multiply to cp=\d+: ((?:\[\d+, \d+\](?: or )?)+)`), path: "parallel.hierarchical_cp", values: func(c string, _ *rand.Rand) []any {
		var out []any
		for _, m := range regexp.MustCompile(`\[(\d+), (\d+)\]`).FindAllStringSubmatch(c, -1) {
			a, _ := strconv.Atoi(m[1])
			b, _ := strconv.Atoi(m[2])
			out = append(out, []int{a, b})
		}
		return out
	}},
	{re: regexp.MustCompile(`fp8 recipes this GPU supports: ([a-z0-9, ]+)`), path: "train.fp8_recipe", values: func(c string, _ *rand.Rand) []any {
		var out []any
		for _, r := range strings.Split(c, ", ") {
			out = append(out, r)
		}
		return out
	}},
	{re: regexp.MustCompile(`use train\.precision "(bf16|fp16)"`), path: "train.precision", values: func(c string, _ *rand.Rand) []any { return []any{c} }},
	form(`use a divisor of experts=\d+ \(at least router_group_topk=\d+\): `+list, "model.moe.router_num_groups"),
	form(`router_group_topk must be at most router_num_groups=\d+: valid values: `+list, "model.moe.router_group_topk"),
	form(`recompute_layers must be at most \d+: valid values: `+list, "train.recompute_layers"),
	{re: regexp.MustCompile(`use lr_warmup_iters < (\d+)`), path: "train.lr_warmup_iters", values: below(0)},
	form(`set grace_seconds to (\d+)`, "launch.grace_seconds"),
	{re: regexp.MustCompile(`set launch\.launcher "(\w+)" and grace_seconds to (\d+)`), sets: func(m []string) [][]setting {
		n, _ := strconv.Atoi(m[2])
		return [][]setting{{{"launch.launcher", m[1]}, {"launch.grace_seconds", n}}}
	}},
	{re: regexp.MustCompile(`use launch\.launcher ("parc"(?: \(or "srun")?)`), path: "launch.launcher", values: func(c string, _ *rand.Rand) []any {
		var out []any
		for _, m := range regexp.MustCompile(`"(\w+)"`).FindAllStringSubmatch(c, -1) {
			out = append(out, m[1])
		}
		return out
	}},
	{re: regexp.MustCompile(`use cpus_per_task ≤ (\d+)`), path: "cluster.slurm.cpus_per_task", values: atMost(1)},
	{re: regexp.MustCompile(`use fewer than (\d+) seconds`), path: "cluster.slurm.preempt_signal_seconds", values: below(0)},
	{re: regexp.MustCompile(`use at most (\d+)$`), path: "cluster.slurm.preempt_signal_seconds", values: atMost(0)},
	{re: regexp.MustCompile(`use min_lr ≤ lr=([0-9.e+-]+)`), path: "train.min_lr", values: func(c string, rng *rand.Rand) []any {
		lr, _ := strconv.ParseFloat(c, 64)
		return []any{0.0, lr, lr * rng.Float64()}
	}},
	form(`\btp values dividing nvlink_domain=\d+: `+list, "parallel.tp"),
	form(`etp values dividing nvlink_domain=\d+: `+list, "parallel.etp"),
	form(`cp values with tp·cp dividing gpus_per_node=\d+ \(groups on one node\): `+list, "parallel.cp"),
	form(`ep values with etp·ep dividing gpus_per_node=\d+ \(groups on one node\): `+list, "parallel.ep"),
}

// valueCodes are the codes whose hints suggest values: each hint of these
// codes must say which value (a form above matches) or that none fits.
var valueCodes = []string{
	"global-batch", "interleave-microbatches", "cp-seq-length", "sp-seq-length", "ffn-tp", "tp-heads",
	"tp-query-groups", "query-groups-heads", "hidden-heads", "max-positions", "world-size",
	"world-not-divisible", "expert-grid-not-divisible", "dp-mismatch", "distopt-instances", "nvlink-domain",
	"pp-layers", "vpp-layers", "uneven-vpp", "uneven-middle", "uneven-middle-negative", "ep-experts",
	"moe-topk-experts", "moe-ffn-etp", "moe-shared-ffn-tp", "moe-no-layers", "cp-hierarchical", "cp-a2a-p2p",
	"precision-fp8-gpu", "moe-router-groups", "recompute-layers-range", "lr-warmup", "launch-grace",
	"slurm-cpus", "slurm-preempt", "slurm-segment", "tp-crosses-nvlink", "etp-crosses-nvlink", "cp-crosses-node", "ep-crosses-node",
	"lr-min",
}

func numbers(list string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r < '0' || r > '9' }) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func errorKeys(l diag.List) map[string]bool {
	out := map[string]bool{}
	for _, d := range l {
		if d.Severity == diag.Error {
			out[d.Code+" "+d.Path] = true
		}
	}
	return out
}

// An optionForm is a setting an option hint names (a boolean, a recipe):
// the text that names it and the settings it makes together.
type optionForm struct {
	re  *regexp.Regexp
	set []setting
	// sets, when given, makes the settings from the match.
	sets func(m []string) []setting
}

func optForm(re string, set ...setting) optionForm {
	return optionForm{re: regexp.MustCompile(re), set: set}
}

var optionForms = []optionForm{
	optForm(`set parallel\.sp: true`, setting{"parallel.sp", true}),
	optForm(`\btp_comm_overlap: false`, setting{"parallel.tp_comm_overlap", false}),
	optForm(`set model\.moe\.router_pre_softmax: true`, setting{"model.moe.router_pre_softmax", true}),
	optForm(`set model\.bias: false`, setting{"model.bias", false}),
	optForm(`\bparallel\.etp: 1\b`, setting{"parallel.etp", 1}),
	optForm(`set model\.moe\.grouped_gemm: true`, setting{"model.moe.grouped_gemm", true}),
	optForm(`use train\.fp8_recipe "tensorwise"`, setting{"train.fp8_recipe", "tensorwise"}),
	optForm(`set train\.fp8_recipe: "delayed"`, setting{"train.fp8_recipe", "delayed"}),
	optForm(`set model\.moe\.shared_expert_overlap: false`, setting{"model.moe.shared_expert_overlap", false}),
	optForm(`set train\.fsdp and train\.nccl_ub to true`, setting{"train.fsdp", true}, setting{"train.nccl_ub", true}),
	optForm(`\bfsdp_manual_registration: false`, setting{"train.fsdp_manual_registration", false}),
	optForm(`set kernels\.apply_rope_fusion: false`, setting{"kernels.apply_rope_fusion", false}),
	optForm(`model\.rope_type "yarn"`, setting{"model.rope_type", "yarn"}),
	optForm(`set train\.check_for_nan_in_loss_and_grad: false`, setting{"train.check_for_nan_in_loss_and_grad", false}),
	optForm(`set train\.distributed_optimizer: true`, setting{"train.distributed_optimizer", true}),
	optForm(`\(or train\.fsdp\)|set train\.fsdp: true`, setting{"train.fsdp", true}),
	optForm(`\bfp8_param_gather: false`, setting{"train.fp8_param_gather", false}),
	optForm(`use train\.precision "fp16"`, setting{"train.precision", "fp16"}),
	optForm(`use train\.precision "fp8"`, setting{"train.precision", "fp8"}),
	optForm(`use train\.precision "bf16"`, setting{"train.precision", "bf16"}),
	optForm(`set train\.precision: "fp4"`, setting{"train.precision", "fp4"}),
	optForm(`\bfp4_param_gather: false`, setting{"train.fp4_param_gather", false}),
	optForm(`set train\.precision_aware_optimizer: true`, setting{"train.precision_aware_optimizer", true}),
	{re: regexp.MustCompile(`\b(train\.\w+_dtype): "fp32"`), sets: func(m []string) []setting { return []setting{{m[1], "fp32"}} }},
	optForm(`\bprecision_aware_optimizer: false`, setting{"train.precision_aware_optimizer", false}),
	optForm(`\boptimizer_cpu_offload: false`, setting{"train.optimizer_cpu_offload", false}),
	optForm(`set train\.optimizer: "adam"`, setting{"train.optimizer", "adam"}),
	optForm(`set train\.precision: "bf16"`, setting{"train.precision", "bf16"}),
	optForm(`set checkpoint\.format: "torch_dist"`, setting{"checkpoint.format", "torch_dist"}),
	optForm(`set parallel\.overlap_moe_expert_parallel_comm: true`, setting{"parallel.overlap_moe_expert_parallel_comm", true}),
	optForm(`\bdelay_wgrad_compute: false`, setting{"parallel.delay_wgrad_compute", false}),
	optForm(`set model\.moe\.score_function: "sigmoid"`, setting{"model.moe.score_function", "sigmoid"}),
	optForm(`\bexpert_bias: false`, setting{"model.moe.expert_bias", false}),
	optForm(`set model\.moe\.aux_loss_coeff: 0\b`, setting{"model.moe.aux_loss_coeff", 0.0}),
	optForm(`set model\.moe\.grouped_gemm: false`, setting{"model.moe.grouped_gemm", false}),
	optForm(`\(or remove it: it defaults to true when tp > 1\)|remove parallel\.sp\b`, setting{"parallel.sp", nil}),
	optForm(`use checkpoint\.format "torch_dist"`, setting{"checkpoint.format", "torch_dist"}),
	optForm(`set checkpoint\.format: "fsdp_dtensor"`, setting{"checkpoint.format", "fsdp_dtensor"}),
	optForm(`use (?:kernels\.)?cross_entropy_fusion_impl "native"`, setting{"kernels.cross_entropy_fusion_impl", "native"}),
	optForm(`\bcross_entropy_loss_fusion: false`, setting{"kernels.cross_entropy_loss_fusion", false}),
	optForm(`set kernels\.disable_parameter_transpose_cache: false`, setting{"kernels.disable_parameter_transpose_cache", false}),
}

// optionCodes are the codes whose hints (those of them optionForms name)
// offer settings: each setting such a hint prints is applied and must pass
// like a suggested value.
var optionCodes = []string{
	"tp-comm-overlap", "moe-topk-pre-softmax", "moe-bias-etp", "recompute-modules", "fsdp-options",
	"kernel-options", "fp8-param-gather", "precision-bf16-gpu", "optimizer-dtypes", "ep-comm-overlap",
	"moe-expert-bias-score", "moe-sinkhorn-aux-loss", "moe-grouped-gemm-gpu", "moe-sp-required", "checkpoint-format",
	// Written as genericSettings reads them (withMoreOptions breaks them).
	"overlap-param-gather", "fsdp-options-unused", "cuda-max-connections", "moe-flex-backend",
	"recompute-options-unused", "lr-options-unused", "weight-decay-schedule", "recompute-mtp-uniform", "train-iters-samples",
	"deterministic-mode", "optimizer-cpu-offload", "pipeline-layout", "vpp-pp", "ep-without-moe", "uneven-vpp-no-middle", "order-pp-last",
	"order-unsupported", "mtp-position-embedding", "mla-query-groups", "etp-without-moe", "moe-capacity-balancing", "moe-pad-capacity",
	"lr-warmup-exclusive", "rampup-batch-size-ignored", "microbatch-group-unused", "uneven-account-for",
	"uneven-single-stage", "sp-without-tp", "tokenizer-files", "lr-wsd-decay", "slurm-nodes", "option-like-path",
	"slurm-time", "slurm-mem", "env-reserved", "env-path", "env-value", "slurm-line-break", "uneven-stage-layers",
	"launch-command", "slurm-option", "layout-world-too-large", "data-split", "window-attn-skip-freq-unused",
	"optimizer-options", "moe-rank-capacity", "moe-paged-stash", "cuda-graph-moe-dynamic",
}

// Settings a hint names in the spec's own words: options separated by
// ", or ", each "set path: value [and path: value]" and/or "remove path
// [and path]", with full dotted paths. genericSettings reads them without
// knowing the code, so any hint of any code that names settings this way is
// applied (a remove takes the schema default base.json spells out, or
// deletes an optional field).
var (
	settingPathRE = `(?:train|parallel|model|kernels|launch|cluster|checkpoint|data)\.[A-Za-z0-9_.]*[A-Za-z0-9_]`
	settingRE     = regexp.MustCompile(`(` + settingPathRE + `): ("(?:[^"\\]|\\.)*"|\[[^\]]*\]|true|false|-?[0-9][0-9.e+-]*)`)
	removeRE      = regexp.MustCompile(`\bremove ((?:` + settingPathRE + `)(?: and ` + settingPathRE + `)*)`)
	pathRE        = regexp.MustCompile(settingPathRE)
)

// It also returns the hint without the text it read, for the forms above
// (so a form never takes one setting out of an option that needs several).
func genericSettings(t *testing.T, s *spec.Spec, hint string) ([][]setting, string) {
	var out [][]setting
	var rest []string
	for _, part := range strings.Split(withoutTried(hint), ", or ") {
		var set []setting
		for _, m := range settingRE.FindAllStringSubmatch(part, -1) {
			set = append(set, setting{m[1], jsonValue(t, m[2])})
		}
		for _, m := range removeRE.FindAllStringSubmatch(part, -1) {
			for _, p := range pathRE.FindAllString(m[1], -1) {
				set = append(set, setting{p, removedValue(s, p)})
			}
		}
		if len(set) > 0 {
			out = append(out, set)
		}
		rest = append(rest, removeRE.ReplaceAllString(settingRE.ReplaceAllString(part, "…"), "…"))
	}
	return out, strings.Join(rest, ", or ")
}

// removedValue is what removing a field leaves: nothing, for an optional
// field (a pointer, a list, an environment variable), else the default
// base.json spells out.
func removedValue(s *spec.Spec, path string) any {
	if _, ok := WithValue(s, path, nil); ok {
		return nil
	}
	return baseDefault(path)
}

// withoutTried drops the "(tried: …)" list of a hint that says no setting
// passes: those settings failed, and the hint says so.
func withoutTried(hint string) string {
	i := strings.Index(hint, "(tried: ")
	if i < 0 {
		return hint
	}
	depth := 0
	for j := i; j < len(hint); j++ {
		switch hint[j] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return hint[:i] + withoutTried(hint[j+1:])
			}
		}
	}
	return hint[:i]
}

// jsonValue reads a literal as the verifier's settings hold it: whole
// numbers as int, lists of strings as []string.
func jsonValue(t *testing.T, lit string) any {
	var v any
	if err := json.Unmarshal([]byte(lit), &v); err != nil {
		t.Fatalf("hint literal %s: %v", lit, err)
	}
	switch x := v.(type) {
	case float64:
		if !strings.ContainsAny(lit, ".e") {
			return int(x)
		}
	case []any:
		out := []string{}
		for _, e := range x {
			out = append(out, e.(string))
		}
		return out
	}
	return v
}

// baseDefault is the value base.json (every schema default spelt out) gives
// path, converted like jsonValue; nil when it has none.
func baseDefault(path string) any {
	var m any
	if err := json.Unmarshal([]byte(baseJSON), &m); err != nil {
		panic(err)
	}
	for _, k := range strings.Split(path, ".") {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		if m, ok = mm[k]; !ok {
			return nil
		}
	}
	switch x := m.(type) {
	case float64:
		if x == float64(int(x)) && !strings.Contains(path, "coeff") {
			return int(x)
		}
	case map[string]any, []any:
		return nil
	}
	return m
}

// adviceOnly are hints (or options of them) that name no setting, because
// any value would be invented:
//   - the layout's text edits (start it with E, write stages of …): the
//     pipeline layout is the user's design, and pipeline-layout's hint
//     already offers the settings that drop it (genericSettings reads them);
//   - env-name ("use letters, digits and _"): the program reads one name,
//     and a cleaned-up one ("A=B" → "A_B") is a different variable;
//   - train-length-missing ("set train.iters (or train.samples)"): how long
//     to train is the user's decision, nothing in the plan implies it.
//
// Hints that used to be advice and now name verified settings, so the
// test applies them: hidden-heads (model.kv_channels near hidden/heads),
// lr-wsd-decay (a tenth of the decay length), layout-world-too-large (the
// most nodes parc lays out), launch-command (the schema's default program),
// slurm-option (the entries written as --option=value).
//
// An option-code hint that names no setting a form or genericSettings
// reads, and says neither that none passes nor one of these, fails the test.
var adviceOnly = regexp.MustCompile(`^(start the layout with E|end the layout with L|write [EL] once|place model\.(layers|mtp_layers)=\d+|put (the|all) MTP layers|place every t before|write stages of|give pp·vpp stages|` +
	`use letters, digits and _|set train\.iters \(or train\.samples\)$)`)

// withOptions adds to a random plan the options whose hints name settings
// (from its own generator, so the value hints' plans stay as they were).
func withOptions(rng *rand.Rand, over map[string]any) {
	coin := func(n int) bool { return rng.Intn(n) == 0 }
	sub := func(k string) map[string]any { return subMap(over, k) }
	par, train, model, kernels := sub("parallel"), sub("train"), sub("model"), sub("kernels")
	moe, _ := model["moe"].(map[string]any)
	if coin(8) {
		cluster := sub("cluster")
		cluster["gpu"] = map[string]any{"compute_capability": 7.0}
		if _, ok := train["precision"]; !ok || coin(2) {
			train["precision"] = "bf16"
		}
	}
	if coin(6) {
		train["main_grads_dtype"] = "bf16"
		train["precision_aware_optimizer"] = coin(2)
		train["distributed_optimizer"] = coin(2)
	}
	if coin(6) {
		train["optimizer_cpu_offload"] = true
		train["precision_aware_optimizer"] = coin(2)
		train["distributed_optimizer"] = coin(2)
	}
	if coin(6) { // optimizer-options
		withOptimizer(rng, over, 3, "muon", "sgd")
	}
	if coin(8) {
		par["delay_wgrad_compute"] = true
	}
	if moe != nil && coin(5) {
		moe["expert_bias"] = true
		if coin(2) {
			moe["score_function"] = "sigmoid"
		}
	}
	if moe != nil && coin(6) {
		moe["router_load_balancing"] = "sinkhorn"
	}
	if coin(6) {
		over["checkpoint"] = map[string]any{"format": []string{"fsdp_dtensor", "torch_dcp", "torch"}[rng.Intn(3)]}
		train["fsdp"] = coin(2)
	}
	if coin(8) {
		kernels["cross_entropy_loss_fusion"] = true
		kernels["cross_entropy_fusion_impl"] = "te"
	}
	if coin(10) {
		kernels["disable_parameter_transpose_cache"] = true
	}
	if coin(4) {
		par["tp_comm_overlap"] = true
		if coin(2) {
			par["sp"] = false
		}
	}
	if coin(5) {
		train["recompute"] = "selective"
		train["recompute_modules"] = []string{[]string{"moe_act", "layernorm", "shared_experts", "core_attn"}[rng.Intn(4)]}
		if moe, ok := model["moe"].(map[string]any); ok {
			moe["grouped_gemm"] = coin(2)
			if coin(2) {
				moe["shared_expert_overlap"] = true
				moe["shared_ffn_hidden"] = 2048
			}
		}
		if coin(2) {
			train["precision"] = "fp8"
			train["fp8_recipe"] = "delayed"
		}
	}
	if coin(6) {
		train["fsdp_manual_registration"] = true
		train["nccl_ub"] = coin(2)
	}
	if coin(6) {
		train["fp8_param_gather"] = true
		train["distributed_optimizer"] = false
	}
	if coin(6) {
		kernels["cuda_graph_impl"] = "full_iteration"
		train["check_for_nan_in_loss_and_grad"] = true
	}
	if coin(6) {
		model["mla"] = map[string]any{}
		model["rope_type"] = "rope"
		kernels["apply_rope_fusion"] = true
	}
}

// hintSpec builds a random plan that breaks some rules on purpose, so that
// every value-suggesting hint is triggered across the seeds.
func hintSpec(rng *rand.Rand) (over map[string]any, scenario bool) {
	if rng.Intn(8) == 0 {
		return scenarios[rng.Intn(len(scenarios))](), true
	}
	pick := func(vs ...int) int { return vs[rng.Intn(len(vs))] }
	coin := func(n int) bool { return rng.Intn(n) == 0 }
	gpn := pick(4, 8, 8, 6)
	par := map[string]any{"tp": pick(1, 2, 3, 4, 8, 16), "pp": pick(1, 2, 3, 4), "vpp": pick(1, 1, 2, 4), "cp": pick(1, 1, 2, 3, 4)}
	model := map[string]any{
		"layers": pick(16, 12, 30, 7), "heads": pick(32, 30, 64, 48, 16), "hidden": pick(4096, 3000, 2048, 5120),
	}
	train := map[string]any{"global_batch": 1 + rng.Intn(600), "seq_length": pick(4096, 4097, 8192, 8193, 1000, 6000),
		"micro_batch": pick(1, 1, 2)}
	cluster := map[string]any{"nodes": pick(1, 2, 3, 4), "gpus_per_node": gpn, "nvlink_domain": pick(gpn, gpn, 4, 3, 2*gpn)}
	launch := map[string]any{}
	if coin(2) {
		model["ffn_hidden"] = pick(28672, 28671, 11008, 14336, 1000)
	}
	if coin(3) {
		model["query_groups"] = pick(8, 6, 4, 3, 1)
	}
	if coin(6) {
		model["max_position_embeddings"] = pick(1024, 2048)
	}
	if coin(8) {
		model["window_attn_skip_freq"] = pick(2, 4)
		if coin(2) {
			model["window_size"] = []int{128, 0}
		}
	}
	if coin(5) {
		par["dp"] = pick(1, 2, 4, 3)
	}
	if coin(5) {
		par["distributed_optimizer_instances"] = pick(2, 3, 4)
	}
	if coin(5) {
		par["microbatch_group_size"] = pick(1, 2, 3, 5)
	}
	if coin(6) {
		par["first_stage_layers"] = pick(1, 2, 3, 5)
		if coin(2) {
			par["last_stage_layers"] = pick(1, 2, 3, 4)
		}
	}
	if coin(5) {
		par["cp_comm_type"] = "a2a+p2p"
		if coin(2) {
			par["hierarchical_cp"] = []int{pick(1, 2, 3), pick(1, 2)}
		}
	}
	if coin(2) {
		moe := map[string]any{"experts": pick(8, 16, 6, 64), "topk": pick(1, 2, 8, 20), "layer_freq": pick(1, 2, 4),
			"dense_layers": pick(0, 1, 3, 16, 40)}
		if coin(3) {
			moe["ffn_hidden"] = pick(1408, 1407, 2048, 1000)
		}
		if coin(4) {
			moe["shared_ffn_hidden"] = pick(2816, 2817, 1000)
		}
		if coin(4) {
			moe["router_num_groups"] = pick(4, 3, 8, 5)
			moe["router_group_topk"] = pick(1, 2, 4, 9)
		}
		if coin(3) {
			moe["router_pre_softmax"] = true
		}
		model["moe"] = moe
		model["bias"] = coin(2)
		par["ep"] = pick(1, 2, 3, 4, 8)
		if coin(2) {
			par["etp"] = pick(1, 2, 3, 4)
		}
	}
	if coin(5) {
		train["precision"] = "fp8"
		train["fp8_recipe"] = []string{"delayed", "tensorwise", "blockwise", "mxfp8"}[rng.Intn(4)]
		cluster["gpu"] = map[string]any{"compute_capability": []float64{8.0, 8.9, 9.0, 12.0}[rng.Intn(4)]}
	}
	if coin(5) {
		train["recompute"] = "full"
		train["recompute_layers"] = pick(1, 4, 9, 20)
		if coin(2) {
			model["mtp_layers"] = 1
			model["position_embedding"] = "rope"
		}
	}
	if coin(6) {
		train["lr_warmup_iters"] = pick(100, 200, 1000)
		train["iters"] = pick(1, 100, 150)
	}
	if coin(4) {
		sl := map[string]any{}
		if coin(2) {
			cluster["cpus_per_node"] = pick(4, 32, 96)
			sl["cpus_per_task"] = pick(2, 8, 16)
		}
		if coin(2) {
			sl["preempt_signal_seconds"] = pick(60, 300, 70000)
			if coin(2) {
				sl["time"] = []string{"1", "4", "00:10:00", "2-00:00:00"}[rng.Intn(4)]
			}
			if coin(2) {
				launch["grace_seconds"] = pick(5, 30, 100)
			}
			launch["launcher"] = []string{"torchrun", "parc", "srun"}[rng.Intn(3)]
		}
		cluster["slurm"] = sl
	}
	return map[string]any{"parallel": par, "model": model, "train": train, "cluster": cluster, "launch": launch}, false
}

// scenarios are valid plans but for one rule the random specs rarely reach
// alone (the layout's topology warnings need a spec that passes every rule).
var scenarios = []func() map[string]any{
	func() map[string]any { // uneven-middle-negative
		return map[string]any{"parallel": map[string]any{"pp": 3, "tp": 1, "first_stage_layers": 10, "last_stage_layers": 10},
			"cluster": map[string]any{"nodes": 3}}
	},
	func() map[string]any { // cp-crosses-node: tp·cp = 16 on 8-GPU nodes
		return map[string]any{"parallel": map[string]any{"tp": 4, "pp": 1, "cp": 4}, "train": map[string]any{"global_batch": 64}}
	},
	func() map[string]any { // cp-crosses-node with cp 3 on 6-GPU nodes
		return map[string]any{"parallel": map[string]any{"tp": 2, "pp": 1, "cp": 6},
			"cluster": map[string]any{"gpus_per_node": 6, "nvlink_domain": 6, "nodes": 2}, "train": map[string]any{"global_batch": 64, "seq_length": 2400}}
	},
	func() map[string]any { // ep-crosses-node: etp·ep = 16 on 8-GPU nodes
		return map[string]any{"parallel": map[string]any{"tp": 1, "pp": 1, "ep": 16},
			"model": map[string]any{"bias": false, "moe": map[string]any{"experts": 32}}, "train": map[string]any{"global_batch": 64}}
	},
	func() map[string]any { // a world past the limit whose grid and batch fit the largest one parc lays out
		return map[string]any{"cluster": map[string]any{"nodes": spec.MaxWorld}, "train": map[string]any{"global_batch": spec.MaxGlobalBatch}}
	},
	func() map[string]any { // slurm-segment: segment 4 on 6 nodes
		return map[string]any{"cluster": map[string]any{"nodes": 6, "slurm": map[string]any{"segment": 4}}, "train": map[string]any{"global_batch": 48}}
	},
	func() map[string]any { // slurm-segment-domain: 16-node segments of 4-GPU nodes against a 72-GPU domain
		return map[string]any{"cluster": map[string]any{"nodes": 32, "gpus_per_node": 4, "nvlink_domain": 72, "slurm": map[string]any{"segment": 16}},
			"train": map[string]any{"global_batch": 128}}
	},
	func() map[string]any { // ep-crosses-node across NVL72 domains: ep 64 on 32 four-GPU nodes (the segment option)
		return map[string]any{"parallel": map[string]any{"tp": 1, "pp": 1, "ep": 64},
			"cluster": map[string]any{"nodes": 32, "gpus_per_node": 4, "nvlink_domain": 72},
			"model":   map[string]any{"bias": false, "moe": map[string]any{"experts": 64}}, "train": map[string]any{"global_batch": 128}}
	},
	func() map[string]any { // cp-crosses-node across NVL72 domains: tp·cp = 16 on 36 four-GPU nodes
		return map[string]any{"parallel": map[string]any{"tp": 4, "pp": 1, "cp": 4},
			"cluster": map[string]any{"nodes": 36, "gpus_per_node": 4, "nvlink_domain": 72}, "train": map[string]any{"global_batch": 72}}
	},
	func() map[string]any { // etp 4 inside an NVLink domain of 4: an expert grid that reaches the layout
		return map[string]any{"parallel": map[string]any{"tp": 2, "pp": 1, "ep": 2, "etp": 4},
			"cluster": map[string]any{"nvlink_domain": 4},
			"model":   map[string]any{"bias": false, "moe": map[string]any{"experts": 8}}, "train": map[string]any{"global_batch": 64}}
	},
}

// TestHintsSuggestValidValues is the property of issue 12 item 15: for
// random invalid specs, every value a hint suggests, applied to the spec and
// vetted again (the rules, then the layout's topology checks when the spec
// lays out), makes that diagnostic go and brings no new error; a hint of a
// value-suggesting code that shows no value says that none fits.
func TestHintsSuggestValidValues(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	n := 1000
	if testing.Short() {
		n = 300
	}
	optRng := rand.New(rand.NewSource(15))
	moreRng := rand.New(rand.NewSource(16))
	budgetRng := rand.New(rand.NewSource(17))
	checked := map[string]int{}
	noneSaid := map[string]int{}
	advice := map[string]int{}
	for i := 0; i < n; i++ {
		over, scenario := hintSpec(rng)
		withOptions(optRng, over)
		more := over
		if scenario {
			more = map[string]any{} // a scenario breaks one rule only
		}
		withMoreOptions(moreRng, more)
		withRankBudget(budgetRng, more)
		s := specFrom(t, over)
		l := vetAll(s)
		before := errorKeys(l)
		for _, d := range l {
			// Settings named in the spec's words, whatever the code.
			generic, rest := genericSettings(t, s, d.Hint)
			for _, set := range generic {
				checked[d.Code]++
				if msg := suggestionFails(s, d, set, before); msg != "" {
					t.Errorf("spec %v:\n\t%s hint %q: %v %s", over, d.Code, d.Hint, set, msg)
				}
			}
			if slices.Contains(optionCodes, d.Code) {
				if strings.Contains(d.Hint, "passes every check") {
					noneSaid[d.Code]++
					continue
				}
				named := len(generic) > 0 || adviceOnly.MatchString(d.Hint)
				for _, f := range optionForms {
					for _, m := range f.re.FindAllStringSubmatch(rest, -1) {
						set := f.set
						if f.sets != nil {
							set = f.sets(m)
						}
						named = true
						checked[d.Code]++
						if msg := suggestionFails(s, d, set, before); msg != "" {
							t.Errorf("spec %v:\n\t%s hint %q: %v %s", over, d.Code, d.Hint, set, msg)
						}
					}
				}
				if !named {
					t.Errorf("spec %v: the %s hint %q names no setting this test reads (write it as \"set path: value\" or \"remove path\", or add a form), nor says that none passes", over, d.Code, d.Hint)
				}
				continue
			}
			if !slices.Contains(valueCodes, d.Code) {
				// Any other code: its hint names settings the generic form
				// reads (applied above), or is advice that names none.
				if adviceOnly.MatchString(d.Hint) {
					advice[d.Code]++
				}
				if d.Hint != "" && len(generic) == 0 && !adviceOnly.MatchString(d.Hint) {
					t.Errorf("spec %v: the %s hint %q names no setting this test reads and is not known advice (adviceOnly): a value or setting it suggests must be written as \"set path: value\" and verified", over, d.Code, d.Hint)
				}
				continue
			}
			matched := len(generic) > 0
			for _, h := range hintForms {
				for _, m := range h.re.FindAllStringSubmatch(rest, -1) {
					matched = true
					path := h.path
					if path == "" {
						path = d.Path
					}
					var sets [][]setting
					switch {
					case h.sets != nil:
						sets = h.sets(m)
					case h.values != nil:
						for _, v := range h.values(m[1], rng) {
							sets = append(sets, []setting{{path, v}})
						}
					default:
						for _, v := range numbers(m[1]) {
							sets = append(sets, []setting{{path, v}})
						}
					}
					for _, set := range sets {
						checked[d.Code]++
						if msg := suggestionFails(s, d, set, before); msg != "" {
							t.Errorf("spec %v:\n\t%s hint %q: %v %s", over, d.Code, d.Hint, set, msg)
						}
					}
				}
			}
			if strings.Contains(d.Hint, "both set to the same value") {
				matched = true
				for _, v := range numbers(d.Hint[strings.Index(d.Hint, "valid values are"):]) {
					set := []setting{{d.Path, v}}
					if strings.Contains(d.Hint, "first_stage_layers and last_stage_layers") {
						set = []setting{{"parallel.first_stage_layers", v}, {"parallel.last_stage_layers", v}}
					}
					checked[d.Code]++
					if msg := suggestionFails(s, d, set, before); msg != "" {
						t.Errorf("spec %v:\n\t%s hint %q: %v %s", over, d.Code, d.Hint, set, msg)
					}
				}
			}
			if strings.Contains(d.Hint, "passes every check") || strings.HasPrefix(d.Hint, "fix parallel.tp first") {
				matched = true
				noneSaid[d.Code]++
			}
			if !matched {
				t.Errorf("spec %v: the %s hint %q suggests no value in a form this test knows (add one to hintForms), nor says that none fits", over, d.Code, d.Hint)
			}
		}
	}
	sum := func(m map[string]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	t.Logf("%d specs: %d suggested values and settings applied (%d codes), %d hints saying none fits, %d advice hints",
		n, sum(checked), len(checked), sum(noneSaid), sum(advice))
	t.Logf("suggested values verified, by code: %v", checked)
	t.Logf("hints saying no value fits, by code: %v", noneSaid)
	t.Logf("hints naming no setting (advice), by code: %v", advice)
	for _, code := range append(slices.Clone(valueCodes), optionCodes...) {
		if checked[code] == 0 && !testing.Short() {
			t.Errorf("no %s hint was exercised", code)
		}
	}
}

// vetAll is Run, and for a spec that passes it, the topology checks on its
// layout (what compile reports before the estimate).
func vetAll(s *spec.Spec) diag.List {
	d := spec.Derive(s)
	l := Run(s, d, nil)
	if l.HasErrors() {
		return l
	}
	lay, err := layout.Build(s, d)
	if err != nil {
		panic(err)
	}
	var fams []FamilyLink
	for _, f := range lay.Summaries {
		fams = append(fams, FamilyLink{Family: f.Name, Size: f.Size, Count: f.Count, GroupsLeavingNode: f.GroupsLeavingNode, GroupsLeavingDomain: f.GroupsLeavingDomain, GroupsSplitUnevenly: f.GroupsSplitUnevenly})
	}
	return append(l, Topology(s, fams, nil)...)
}

// suggestionFails applies set to s and vets it again: the diagnostic d must
// be gone and no error the spec did not have may appear.
func suggestionFails(s *spec.Spec, d diag.Diagnostic, set []setting, before map[string]bool) string {
	s2 := s
	for _, st := range set {
		var ok bool
		if s2, ok = WithValue(s2, st.path, st.value); !ok {
			return fmt.Sprintf("cannot be set on the spec (%s)", st.path)
		}
	}
	after := vetAll(s2)
	for _, e := range after {
		if e.Code == d.Code && e.Path == d.Path {
			return "still fails " + d.Code + ": " + e.Message
		}
		// A field the hint sets must pass every rule blamed on it, even
		// one the spec's old value broke too (tp=16384 for a world-size
		// error, with heads=32 and tp-heads already failing at tp=3), but
		// a grid product another degree breaks (jointRules).
		for _, st := range set {
			if e.Severity == diag.Error && e.Path == st.path && !(jointRules[e.Code] && before[e.Code+" "+e.Path]) {
				return "leaves an error on the field it sets: " + e.Code + ": " + e.Message
			}
		}
	}
	for k := range errorKeys(after) {
		if !before[k] {
			return "brings the new error " + k
		}
	}
	return ""
}

// TestDomainRuleMatchesLayout: the NVLink-domain rule Run applies without a
// layout (leavesDomain) says exactly what the layout finds, for tp and etp,
// both rank orders and NVLink domains smaller and larger than a node.
func TestDomainRuleMatchesLayout(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	pick := func(vs []int) int { return vs[rng.Intn(len(vs))] }
	cases, leaving := 0, 0
	for range 600 {
		gpn := pick([]int{2, 4, 6, 8})
		nodes := pick([]int{1, 2, 3, 4})
		world := gpn * nodes
		domain := pick(append(divisors(gpn), 2*gpn, 3*gpn, 72))
		if gpn%domain != 0 && domain%gpn != 0 {
			continue
		}
		tp := pick(divisors(world))
		pp := pick(divisors(world / tp))
		etp := pick(divisors(world / pp))
		ep := pick(divisors(world / (pp * etp)))
		order := []string{spec.OrderDefault, spec.OrderPPDP}[rng.Intn(2)]
		s := specFrom(t, map[string]any{
			"cluster":  map[string]any{"nodes": nodes, "gpus_per_node": gpn, "nvlink_domain": domain},
			"parallel": map[string]any{"tp": tp, "pp": pp, "ep": ep, "etp": etp, "order": order},
			"model":    map[string]any{"layers": 12 * pp, "moe": map[string]any{"experts": 4 * ep}},
		})
		d := spec.Derive(s)
		lay, err := layout.Build(s, d)
		if err != nil {
			continue
		}
		cases++
		for _, f := range lay.Summaries {
			size := map[string]int{"tp": tp, "etp": etp}[f.Name]
			if size == 0 {
				continue
			}
			got := f.GroupsLeavingDomain > 0
			if got {
				leaving++
			}
			if want := leavesDomain(size, domain, world); got != want {
				t.Errorf("world %d (%d×%d), nvlink_domain %d, order %s, %s=%d: the layout has %d groups leaving their domain, leavesDomain says %v",
					world, nodes, gpn, domain, order, f.Name, size, f.GroupsLeavingDomain, want)
			}
		}
	}
	if cases < 200 || leaving == 0 {
		t.Fatalf("only %d layouts (%d with groups leaving a domain): the test does not exercise the rule", cases, leaving)
	}
}

// TestOptionHintDropsFailingSetting: sequence parallelism needs seq_length
// divisible by tp (sp-seq-length), so with seq_length=4097 and tp=2 the
// tp-comm-overlap hint must not offer parallel.sp: true, only turning the
// overlap off; with seq_length=4096 it offers both.
func TestOptionHintDropsFailingSetting(t *testing.T) {
	for _, tc := range []struct {
		seq  int
		hint string
	}{
		{4097, "set parallel.tp_comm_overlap: false"},
		{4096, "set parallel.sp: true, or tp_comm_overlap: false"},
	} {
		s := specFrom(t, map[string]any{"parallel": map[string]any{"tp": 2, "sp": false, "tp_comm_overlap": true},
			"train": map[string]any{"seq_length": tc.seq}})
		var got []string
		for _, d := range runSpec(s) {
			if d.Code == "tp-comm-overlap" {
				got = append(got, d.Hint)
			}
		}
		if len(got) != 1 || got[0] != tc.hint {
			t.Errorf("seq_length=%d: tp-comm-overlap hints %q, want [%q]", tc.seq, got, tc.hint)
		}
	}
}

// withRankBudget draws, on one random MoE plan in five, the rank-budget
// settings and what they rule on (withBudget, the Megatron cross-check's
// generator): the rules of moe-rank-capacity, moe-paged-stash and
// cuda-graph-moe-dynamic, from its own generator.
func withRankBudget(rng *rand.Rand, over map[string]any) {
	if moe, _ := subMap(over, "model")["moe"].(map[string]any); moe == nil || rng.Intn(5) != 0 {
		return
	}
	withBudget(rng, over)
}

// withMoreOptions breaks, on a random plan, the rules whose hints name
// settings in the spec's words (genericSettings), each now and then, from
// its own generator so the plans of the other generators stay as they were.
func withMoreOptions(rng *rand.Rand, over map[string]any) {
	coin := func(n int) bool { return rng.Intn(n) == 0 }
	pick := func(vs ...int) int { return vs[rng.Intn(len(vs))] }
	sub := subMap
	par, train, model, kernels := sub(over, "parallel"), sub(over, "train"), sub(over, "model"), sub(over, "kernels")
	launch, cluster := sub(over, "launch"), sub(over, "cluster")
	moe, _ := model["moe"].(map[string]any)
	intOf := func(m map[string]any, k string, def int) int {
		if v, ok := m[k].(int); ok {
			return v
		}
		return def
	}
	if coin(10) { // fine-grained-offloading, offload-options-unused
		mods := [][]string{nil, {"attn_proj"}, {"core_attn", "attn_proj"}, {"moe_act", "expert_fc1"}, {"fused_group_mlp", "moe_act"}, {"qkv_linear"}}
		if m := mods[rng.Intn(len(mods))]; m != nil {
			train["offload_modules"] = m
		}
		train["fine_grained_activation_offloading"] = !coin(4)
		switch rng.Intn(6) {
		case 0:
			train["cpu_offloading_num_layers"] = 1
		case 1:
			kernels["cuda_graph_impl"] = []string{"local", "full_iteration", "transformer_engine"}[rng.Intn(3)]
		case 2:
			train["recompute"], train["recompute_modules"] = "selective", []string{"moe"}
		case 3:
			launch["env"] = map[string]any{"NVTE_CPU_OFFLOAD_V1": "0"}
		case 4:
			train["activation_offload_fraction"] = 0.5
		}
	}
	if coin(10) { // defer-embedding-wgrad
		par["defer_embedding_wgrad_compute"] = !coin(4)
		if coin(2) {
			par["wgrad_deferral_limit"] = pick(1, 4)
		}
		if coin(2) {
			par["pp"] = 1
		}
		if coin(3) {
			kernels["gradient_accumulation_fusion"] = false
		}
	}
	if coin(10) { // overlap-param-gather
		train["overlap_param_gather"] = true
		train["distributed_optimizer"] = coin(2)
		train["overlap_grad_reduce"] = coin(2)
	}
	if coin(10) { // overlap-param-gather with the optimizer step
		train["overlap_param_gather_with_optimizer_step"] = true
		if coin(2) {
			train["overlap_param_gather"], train["overlap_grad_reduce"], train["distributed_optimizer"] = true, true, true
		}
		if coin(2) {
			over["checkpoint"] = map[string]any{"format": []string{"torch", "torch_dist"}[rng.Intn(2)]}
		}
	}
	if coin(10) { // fsdp-options-unused
		train["fsdp"] = false
		switch rng.Intn(3) {
		case 0:
			train["fsdp_double_buffer"] = true
		case 1:
			train["data_parallel_sharding_strategy"] = "optim"
		default:
			train["megatron_fsdp_main_params_dtype"] = "bf16"
		}
	}
	if coin(10) { // cuda-max-connections
		env := map[string]any{"CUDA_DEVICE_MAX_CONNECTIONS": []string{"1", "8"}[rng.Intn(2)]}
		if coin(2) {
			train["fsdp"] = true
		}
		if coin(3) {
			cluster["env"] = map[string]any{"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
		}
		launch["env"] = env
	}
	if moe != nil && coin(6) { // moe-flex-backend
		switch rng.Intn(3) {
		case 0:
			moe["flex_dispatcher_backend"] = "ncclep"
		case 1:
			moe["dispatcher"] = "flex" // deepep with tp = ep = 1 when the spec has them so
		default:
			moe["shared_expert_overlap"] = true
			moe["shared_ffn_hidden"] = 2048
			moe["dispatcher"] = "allgather"
		}
	}
	if coin(10) { // recompute-options-unused
		if coin(2) {
			train["recompute"] = "none"
			train["recompute_layers"] = 1
		} else {
			train["recompute"] = "full"
			train["recompute_modules"] = []string{"core_attn"}
		}
	}
	if coin(10) { // lr-options-unused
		if coin(2) {
			train["lr_wsd_decay_iters"] = 10
		} else {
			train["decoupled_min_lr"] = 1e-5
		}
	}
	if coin(10) { // weight-decay-schedule
		if coin(2) {
			train["start_weight_decay"] = 0.01
			if coin(2) {
				train["end_weight_decay"] = 0.1
			}
		} else {
			train["weight_decay_incr_style"] = "linear"
			if coin(2) {
				train["end_weight_decay"] = 0.1
			}
		}
	}
	if coin(10) { // recompute-mtp-uniform
		model["mtp_layers"] = 1
		model["position_embedding"] = "rope"
		train["recompute"] = "full"
		train["recompute_method"] = "uniform"
		train["recompute_layers"] = pick(2, 4)
	}
	if coin(8) { // train-iters-samples
		switch rng.Intn(5) {
		case 0:
			train["samples"] = 6400
		case 1:
			train["iters"] = nil
			train["samples"] = 6400
			train["lr_decay_iters"] = 50
		case 2:
			train["iters"] = nil
			train["samples"] = 6400
			train["lr_warmup_iters"] = 10
		case 3:
			train["lr_decay_samples"] = 3200
		default:
			train["lr_warmup_samples"] = 640
		}
	}
	if coin(10) { // kernel-options: transformer_impl
		if coin(2) {
			kernels["transformer_impl"] = "local"
			par["delay_wgrad_compute"] = true
		} else {
			kernels["transformer_impl"] = "inference_optimized"
			if coin(2) {
				model["normalization"] = "rmsnorm"
			}
		}
	}
	if coin(10) { // deterministic-mode
		train["deterministic_mode"] = true
		kernels["cross_entropy_loss_fusion"] = true
		if coin(2) {
			par["tp_comm_overlap"] = true
		}
	}
	layers, pp := intOf(model, "layers", 16), intOf(par, "pp", 2)
	if coin(10) && layers%pp == 0 { // pipeline-layout
		stages := pp * pick(1, 2)
		if layers%stages == 0 {
			var st []string
			for i := range stages {
				x := fmt.Sprintf("t*%d", layers/stages)
				if i == 0 {
					x = "E" + x
				}
				if i == stages-1 {
					x += "L"
				}
				st = append(st, x)
			}
			par["layout"] = strings.Join(st, "|")
			par["vpp"] = pick(1, 2, 4)
			if coin(3) {
				par["account_for_loss"] = true
			}
		}
	}
	if coin(10) { // vpp-pp
		par["vpp"] = 2
		par["pp"] = pick(1, 2)
		par["overlap_p2p"] = coin(2)
		delete(par, "first_stage_layers")
		delete(par, "last_stage_layers")
	}
	if moe == nil && coin(6) { // ep-without-moe, etp-without-moe
		if coin(2) {
			par["ep"] = pick(2, 4)
		} else {
			par["etp"] = pick(1, 2)
		}
	}
	if coin(10) { // uneven-vpp-no-middle
		par["pp"], par["vpp"] = 2, 2
		delete(par, "layout")
		f := 2 * pick(1, 2, 3)
		model["layers"] = f + 4
		par["first_stage_layers"], par["last_stage_layers"] = f, 4
	}
	if coin(10) { // order-pp-last, order-unsupported
		par["order"] = []string{"tp-cp-ep-pp-dp", "dp-pp-tp"}[rng.Intn(2)]
	}
	if coin(10) { // mtp-position-embedding
		model["mtp_layers"] = 1
		model["position_embedding"] = []string{"learned_absolute", "yarn"}[rng.Intn(2)]
	}
	if coin(12) { // mla-query-groups
		model["mla"] = map[string]any{}
		model["query_groups"] = pick(4, 8)
	}
	if moe != nil && coin(8) { // moe-capacity-balancing
		moe["capacity_factor"] = 1.0
		moe["router_load_balancing"] = "sinkhorn"
		moe["aux_loss_coeff"] = 0.0
	}
	if moe != nil && coin(10) { // moe-pad-capacity
		moe["pad_expert_input_to_capacity"] = true
	}
	if coin(12) { // lr-warmup-exclusive
		train["lr_warmup_fraction"] = 0.01
		train["lr_warmup_iters"] = 5
	}
	if coin(12) { // rampup-batch-size-ignored
		train["rampup_batch_size"] = []int{16, 16, 1000}
	}
	if coin(12) { // uneven-account-for
		par["account_for_embedding"] = true
		par["first_stage_layers"] = 2
	}
	if coin(12) { // sp-without-tp
		par["sp"] = true
		par["tp"] = 1
	}
	if coin(12) { // kernel-options: cuda graphs, local attention, two YaRN factors
		switch rng.Intn(3) {
		case 0:
			kernels["cuda_graph_scope"] = []string{"attn"}
			kernels["cuda_graph_modules"] = []string{"attn"}
		case 1:
			kernels["attention_backend"] = "local"
		default:
			model["position_embedding"] = "yarn"
			model["rope_scaling_factor"] = 8.0
			model["rotary_scaling_factor"] = 40.0
		}
	}
	if coin(12) { // recompute-modules: a module the model lacks
		train["recompute"] = "selective"
		train["recompute_modules"] = [][]string{{"mla_up_proj"}, {"mla_up_proj", "core_attn"}}[rng.Intn(2)]
	}
	if coin(12) { // kernel-options: dropout in a recomputed module under a CUDA graph
		kernels["cuda_graph_impl"] = []string{"local", "transformer_engine"}[rng.Intn(2)]
		if coin(2) {
			kernels["cuda_graph_modules"] = [][]string{{"attn"}, {"mlp"}, {"attn", "mlp"}}[rng.Intn(3)]
		}
		train["recompute"] = "selective"
		train["recompute_modules"] = [][]string{{"core_attn"}, {"mlp"}, {"core_attn", "mlp"}}[rng.Intn(3)]
		train[[]string{"attention_dropout", "hidden_dropout"}[rng.Intn(2)]] = 0.1
	}
	if coin(12) { // tokenizer-files
		over["data"] = map[string]any{"tokenizer": map[string]any{"type": "GPT2BPETokenizer"}}
	}
	if coin(12) { // lr-wsd-decay, lr-min
		if coin(2) {
			train["lr_decay_style"] = "WSD"
		} else {
			train["min_lr"] = 1e-3
		}
	}
	if coin(12) { // fsdp-options: both FSDPs, or torch FSDP2 with pp
		launch["extra_args"] = []string{"--use-torch-fsdp2"}
		train["fsdp"] = coin(2)
	}
	if coin(10) { // ep-comm-overlap with what it needs changed
		par["overlap_moe_expert_parallel_comm"] = true
		if moe != nil && coin(2) {
			moe["dispatcher"] = "allgather"
		}
		if coin(3) {
			train["recompute"] = "full"
		}
		if coin(3) {
			train["precision"] = "fp32"
		}
		if coin(3) {
			model["mtp_layers"] = 2
			model["position_embedding"] = "rope"
		}
	}
	if coin(12) { // advice only: train-length-missing, env-name; settings: launch-command, slurm-option, layout-world-too-large, data-split
		switch rng.Intn(6) {
		case 5:
			over["data"] = map[string]any{"mock": false, "paths": []string{"/data/x"}, "split": []string{"1,2,3,4", "0,0", "1.2.3"}[rng.Intn(3)]}
		case 0:
			train["iters"], train["samples"] = nil, nil
		case 1:
			launch["env"] = map[string]any{"1BAD": "x"}
		case 2:
			launch["program"] = ""
		case 3:
			sub(cluster, "slurm")["extra"] = []string{"nodes=2"}
		default:
			cluster["nodes"] = spec.MaxWorld
		}
	}
	if coin(12) { // uneven-stage-layers
		par["first_stage_layers"] = 0
	}
	if coin(10) { // slurm-nodes, slurm-time, slurm-mem, option-like-path, env-reserved, env-value, slurm-line-break
		sl := sub(cluster, "slurm")
		switch rng.Intn(8) {
		case 5:
			launch["env"] = map[string]any{"A": "x\x00y", "B": "\x00"}
		case 6:
			sl["job_name"] = "a\nb"
		case 7:
			model["name"] = "two\nlines"
		case 0:
			sl["extra"] = []string{"--nodes=7", "--exclusive"}
		case 1:
			sl["time"] = "4h"
		case 2:
			sl["mem"] = "lots"
		case 3:
			launch["program"] = "-c"
		default:
			launch["env"] = map[string]any{"RANK": "3", "WORLD_SIZE": "2"}
		}
	}
	if coin(20) { // env-path
		cluster["env"] = map[string]any{"PATH": "/opt/conda/bin:$PATH"}
	}
}

// TestHintLeavesNoErrorOnItsField: a value a hint offers must pass every
// rule on its own field, even one the old value broke too. With MLA, any
// query_groups fails mla-query-groups, so query-groups-heads offers no
// value; tp=16 with pp=3 on 64 GPUs breaks the grid through pp, so the
// NVLink hint still lists the tp values that fit the domain (the grid
// product is a joint rule another degree fixes).
func TestHintLeavesNoErrorOnItsField(t *testing.T) {
	hintOf := func(over, code string) string {
		t.Helper()
		for _, d := range runSpec(specFrom(t, parse(t, over))) {
			if d.Code == code {
				return d.Hint
			}
		}
		t.Fatalf("%s: no %s diagnostic", over, code)
		return ""
	}
	if h := hintOf(`{"model": {"heads": 32, "query_groups": 5, "mla": {"kv_lora_rank": 32, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64, "v_head_dim": 128}}}`,
		"query-groups-heads"); !strings.Contains(h, "passes every check") {
		t.Errorf("query-groups-heads beside MLA offers a value that still fails mla-query-groups: %q", h)
	}
	over := `{"cluster": {"nodes": 8}, "parallel": {"tp": 16, "pp": 3}, "model": {"layers": 80, "heads": 64}}`
	if h, want := hintOf(over, "tp-crosses-nvlink"), "tp values dividing nvlink_domain=8: 1, 2, 4, 8"; h != want {
		t.Errorf("tp-crosses-nvlink hint %q, want %q", h, want)
	}
}

// TestWithValueCopies: a setting reaches an environment variable (set or
// removed) and a number of the other kind, on a copy: the spec a hint is
// verified against never changes.
func TestWithValueCopies(t *testing.T) {
	s := specFrom(t, parse(t, `{"launch": {"env": {"A": "1"}}, "train": {"lr": 0.0003}}`))
	s2, ok := WithValue(s, "launch.env.B", "2")
	if !ok || s2.Launch.Env["B"] != "2" || s2.Launch.Env["A"] != "1" || len(s.Launch.Env) != 1 {
		t.Fatalf("set launch.env.B: %v %v (original %v)", ok, s2.Launch.Env, s.Launch.Env)
	}
	if s3, ok := WithValue(s, "launch.env.A", nil); !ok || len(s3.Launch.Env) != 0 || s.Launch.Env["A"] != "1" {
		t.Fatalf("remove launch.env.A: %v %v (original %v)", ok, s3.Launch.Env, s.Launch.Env)
	}
	if s4, ok := WithValue(s, "train.min_lr", 0); !ok || s4.Train.MinLR != 0 || s.Train.MinLR == 0 {
		t.Fatalf("an int for a float field: %v %v", ok, s4.Train.MinLR)
	}
	if _, ok := WithValue(s, "train.global_batch", 1.5); ok {
		t.Fatal("1.5 was set on an int field")
	}
	if s5, ok := WithValue(s, "checkpoint.format", "torch"); !ok || s5.Checkpoint.Format != "torch" || s.Checkpoint != nil {
		t.Fatalf("a field of a block the spec leaves out: %v", ok)
	}
}

// TestSegmentOptionKeepsGroupsInDomains: expert- and context-parallel groups
// that straddle GB200 NVL72 domains (blocks of 72 consecutive ranks) are
// offered, beside the degrees that divide the domain, Slurm segments whose
// GPUs the group block divides, with nvlink_domain set to them; applied, the
// layout keeps every group in one domain and nothing else fails.
func TestSegmentOptionKeepsGroupsInDomains(t *testing.T) {
	for _, tc := range []struct {
		over, code, want string
		segment, domain  int
	}{
		{`{"parallel": {"tp": 1, "pp": 1, "ep": 64}, "cluster": {"nodes": 32, "gpus_per_node": 4, "nvlink_domain": 72},
			"model": {"bias": false, "moe": {"experts": 64}}, "train": {"global_batch": 128}}`,
			"ep-crosses-node", "or keep ep=64 and run the job in Slurm segments of 16 nodes, 64 GPUs in one NVLink domain each: set cluster.slurm.segment: 16 and cluster.nvlink_domain: 64", 16, 64},
		{`{"parallel": {"tp": 4, "pp": 1, "cp": 4}, "cluster": {"nodes": 36, "gpus_per_node": 4, "nvlink_domain": 72}, "train": {"global_batch": 72}}`,
			"cp-crosses-node", "or keep cp=4 and run the job in Slurm segments of 12 nodes, 48 GPUs in one NVLink domain each: set cluster.slurm.segment: 12 and cluster.nvlink_domain: 48", 12, 48},
	} {
		s := specFrom(t, parse(t, tc.over))
		l := vetAll(s)
		i := slices.IndexFunc(l, func(d diag.Diagnostic) bool { return d.Code == tc.code })
		require.GreaterOrEqual(t, i, 0, "%s: no %s in %v", tc.code, tc.code, l)
		assert.Contains(t, l[i].Hint, tc.want)
		s2, ok := WithValue(s, "cluster.slurm.segment", tc.segment)
		require.True(t, ok)
		s2, ok = WithValue(s2, "cluster.nvlink_domain", tc.domain)
		require.True(t, ok)
		after := vetAll(s2)
		assert.Empty(t, after, "%s: with the segments", tc.code)
	}
	// A spec that already sets a segment is judged by slurm-segment-domain,
	// and a job inside one domain gets no segment option.
	s := specFrom(t, parse(t, `{"parallel": {"tp": 1, "pp": 1, "ep": 64}, "cluster": {"nodes": 16, "gpus_per_node": 4, "nvlink_domain": 72},
		"model": {"bias": false, "moe": {"experts": 64}}, "train": {"global_batch": 128}}`))
	for _, d := range vetAll(s) {
		assert.NotContains(t, d.Hint, "segment", d.Code)
	}
}
