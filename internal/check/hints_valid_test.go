package check

import (
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

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
	form(`or cp in `+list, "parallel.cp"),
	form(`valid query_groups for heads=\d+: `+list, "model.query_groups"),
	form(`heads dividing hidden=\d+: `+list, "model.heads"),
	{re: regexp.MustCompile(`set max_position_embeddings ≥ (\d+)`), path: "model.max_position_embeddings", values: atLeast},
	form(`valid ep with etp=\d+, pp=\d+: `+list, "parallel.ep"),
	form(`use cluster.nodes = (\d+)`, "cluster.nodes"),
	{re: regexp.MustCompile(`(remove parallel\.dp)`), path: "parallel.dp", values: func(string, *rand.Rand) []any { return []any{nil} }},
	form(`valid instance counts here: `+list, "parallel.distributed_optimizer_instances"),
	form(`divisors of gpus_per_node=\d+: `+list, "cluster.nvlink_domain"),
	form(`as on NVL72\): `+list, "cluster.nvlink_domain"),
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
	"slurm-cpus", "slurm-preempt", "tp-crosses-nvlink", "etp-crosses-nvlink", "cp-crosses-node", "ep-crosses-node",
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
	optForm(`set train\.precision_aware_optimizer: true`, setting{"train.precision_aware_optimizer", true}),
	{re: regexp.MustCompile(`\b(train\.\w+_dtype): "fp32"`), sets: func(m []string) []setting { return []setting{{m[1], "fp32"}} }},
	optForm(`\bprecision_aware_optimizer: false`, setting{"train.precision_aware_optimizer", false}),
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
}

// optionCodes are the codes whose hints (those of them optionForms name)
// offer settings: each setting such a hint prints is applied and must pass
// like a suggested value.
var optionCodes = []string{
	"tp-comm-overlap", "moe-topk-pre-softmax", "moe-bias-etp", "recompute-modules", "fsdp-options",
	"kernel-options", "fp8-param-gather", "precision-bf16-gpu", "optimizer-dtypes", "ep-comm-overlap",
	"moe-expert-bias-score", "moe-sinkhorn-aux-loss", "moe-grouped-gemm-gpu", "moe-sp-required", "checkpoint-format",
}

// withOptions adds to a random plan the options whose hints name settings
// (from its own generator, so the value hints' plans stay as they were).
func withOptions(rng *rand.Rand, over map[string]any) {
	coin := func(n int) bool { return rng.Intn(n) == 0 }
	sub := func(k string) map[string]any {
		if m, ok := over[k].(map[string]any); ok {
			return m
		}
		m := map[string]any{}
		over[k] = m
		return m
	}
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
func hintSpec(rng *rand.Rand) map[string]any {
	if rng.Intn(8) == 0 {
		return scenarios[rng.Intn(len(scenarios))]()
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
	return map[string]any{"parallel": par, "model": model, "train": train, "cluster": cluster, "launch": launch}
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
	func() map[string]any { // etp-crosses-nvlink through the layout: etp 4 over a domain of 2
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
	checked := map[string]int{}
	noneSaid := map[string]int{}
	for i := 0; i < n; i++ {
		over := hintSpec(rng)
		withOptions(optRng, over)
		s := specFrom(t, over)
		l := vetAll(s)
		before := errorKeys(l)
		for _, d := range l {
			if slices.Contains(optionCodes, d.Code) {
				if strings.Contains(d.Hint, "passes every check") {
					noneSaid[d.Code]++
					continue
				}
				for _, f := range optionForms {
					for _, m := range f.re.FindAllStringSubmatch(d.Hint, -1) {
						set := f.set
						if f.sets != nil {
							set = f.sets(m)
						}
						checked[d.Code]++
						if msg := suggestionFails(s, d, set, before); msg != "" {
							t.Errorf("spec %v:\n\t%s hint %q: %v %s", over, d.Code, d.Hint, set, msg)
						}
					}
				}
				continue
			}
			if !slices.Contains(valueCodes, d.Code) {
				continue
			}
			matched := false
			for _, h := range hintForms {
				for _, m := range h.re.FindAllStringSubmatch(d.Hint, -1) {
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
			if strings.HasPrefix(d.Hint, "remove first_stage_layers/last_stage_layers") {
				matched = true
				set := []setting{{"parallel.first_stage_layers", nil}, {"parallel.last_stage_layers", nil}}
				checked[d.Code]++
				if msg := suggestionFails(s, d, set, before); msg != "" {
					t.Errorf("spec %v:\n\t%s hint %q: %v %s", over, d.Code, d.Hint, set, msg)
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
	t.Logf("suggested values verified, by code: %v", checked)
	t.Logf("hints saying no value fits, by code: %v", noneSaid)
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
		fams = append(fams, FamilyLink{Family: f.Name, Size: f.Size, Count: f.Count,
			GroupsLeavingNode: f.GroupsLeavingNode, GroupsLeavingDomain: f.GroupsLeavingDomain})
	}
	return append(l, Topology(s, fams, nil)...)
}

// suggestionFails applies set to s and vets it again: the diagnostic d must
// be gone and no error the spec did not have may appear.
func suggestionFails(s *spec.Spec, d diag.Diagnostic, set []setting, before map[string]bool) string {
	s2 := s
	for _, st := range set {
		var ok bool
		if s2, ok = withValue(s2, st.path, st.value); !ok {
			return fmt.Sprintf("cannot be set on the spec (%s)", st.path)
		}
	}
	after := vetAll(s2)
	for _, e := range after {
		if e.Code == d.Code && e.Path == d.Path {
			return "still fails " + d.Code + ": " + e.Message
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
