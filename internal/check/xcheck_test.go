package check

import (
	"encoding/json"
	mrand "math/rand"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// xcase is one plan handed to testdata/megatron-xcheck/xcheck.py, which runs
// Megatron-LM's own validation on it (see testdata/README.md).
type xcase struct {
	Name    string       `json:"name"`
	Spec    *spec.Spec   `json:"spec"`
	Derived spec.Derived `json:"derived"`
	Valid   bool         `json:"valid"`
	Codes   []string     `json:"codes"`
	// Errors are the errors parc reports, each with the field it blames.
	Errors []xerror `json:"errors"`
}

// xerror is one error of parc's verdict: its code and the field it blames.
type xerror struct {
	Code string `json:"code"`
	Path string `json:"path"`
}

// errorsOf lists the errors of l.
func errorsOf(l diag.List) []xerror {
	var out []xerror
	for _, d := range l {
		if d.Severity == diag.Error {
			out = append(out, xerror{d.Code, d.Path})
		}
	}
	return out
}

// xcheckCorpus is the corpus as plans for the Megatron cross-check, named
// file/case.
func xcheckCorpus(t *testing.T) []xcase {
	var corpus []xcase
	for file, cases := range loadCorpus(t) {
		for _, tc := range cases {
			s := specFrom(t, tc.Spec)
			corpus = append(corpus, xcase{strings.TrimSuffix(file, ".json") + "/" + tc.Name, s, spec.Derive(s), tc.Valid, tc.Codes, errorsOf(runSpec(s))})
		}
	}
	slices.SortFunc(corpus, func(a, b xcase) int { return strings.Compare(a.Name, b.Name) })
	return corpus
}

// errorCodes lists the codes of Run that are errors.
func errorCodes() []string {
	var errs []string
	for _, c := range Codes {
		if c.Severity == diag.Error {
			errs = append(errs, c.Code)
		}
	}
	return errs
}

// randomForXcheck makes n random plans, most of them invalid in some way.
func randomForXcheck(t *testing.T, seed uint64, n int) []xcase {
	r := rand.New(rand.NewPCG(seed, seed+1))
	pick := func(v ...int) int { return v[r.IntN(len(v))] }
	var all []xcase
	for range n {
		model := map[string]any{"layers": pick(6, 8, 12, 15, 16, 24, 30, 32), "heads": pick(8, 12, 16, 24, 32), "hidden": pick(1536, 2048, 3072, 4096)}
		if r.IntN(2) == 0 {
			model["query_groups"] = pick(1, 2, 3, 4, 6, 8, 16)
		}
		par := map[string]any{"tp": pick(1, 2, 4), "pp": pick(1, 2, 4, 4, 3), "cp": pick(1, 1, 1, 2), "vpp": pick(1, 1, 2, 2, 3)}
		if r.IntN(3) == 0 {
			model["bias"] = false
			model["moe"] = map[string]any{"experts": pick(4, 6, 8, 16, 64), "topk": pick(1, 2, 4)}
			if r.IntN(2) == 0 {
				model["moe"].(map[string]any)["router_pre_softmax"] = true
			}
			par["ep"] = pick(1, 2, 4, 8)
			if r.IntN(2) == 0 {
				par["etp"] = pick(1, 2)
			}
		}
		if r.IntN(4) == 0 {
			par["order"] = "tp-cp-ep-pp-dp"
		}
		switch r.IntN(6) {
		case 0:
			par["first_stage_layers"] = pick(1, 2, 3, 4, 6, 8)
		case 1:
			par["last_stage_layers"] = pick(1, 2, 3, 4, 6, 8)
		case 2:
			par["first_stage_layers"], par["last_stage_layers"] = pick(1, 2, 3, 4, 6), pick(1, 2, 3, 4, 6)
		case 3:
			par["account_for_embedding"] = r.IntN(2) == 0
			par["account_for_loss"] = r.IntN(2) == 0
		}
		if r.IntN(5) == 0 {
			par["microbatch_group_size"] = pick(1, 2, 3, 4, 6, 8)
		}
		if r.IntN(5) == 0 {
			par["overlap_p2p"] = false
		}
		if r.IntN(6) == 0 {
			par["distributed_optimizer_instances"] = pick(2, 3, 4)
		}
		if r.IntN(8) == 0 {
			par["hierarchical_cp"] = []int{pick(1, 2), pick(1, 2)}
		}
		train := map[string]any{"global_batch": pick(8, 12, 16, 24, 32, 48, 64, 96, 128), "micro_batch": pick(1, 2), "seq_length": pick(2048, 4096, 4096, 2046)}
		cl := map[string]any{"nodes": pick(2, 4, 4)}
		all = append(all, xcaseOf(t, map[string]any{"model": model, "parallel": par, "train": train, "cluster": cl}))
	}
	return all
}

// xcaseOf is the plan the overrides make (through JSON, as the dump names
// it) with parc's verdict on it.
func xcaseOf(t *testing.T, over map[string]any) xcase {
	data, _ := json.Marshal(over)
	var m map[string]any
	json.Unmarshal(data, &m)
	s := specFrom(t, m)
	l := runSpec(s)
	return xcase{Name: string(data), Spec: s, Derived: spec.Derive(s), Valid: !l.HasErrors(), Codes: codesOf(l), Errors: errorsOf(l)}
}

// optionsForXcheck makes n plans from the base plan with the random options
// of the hint tests (withMoreOptions: recomputation, offloading,
// overlaps, CUDA graphs, MoE routing, FSDP, schedules, ...), so the
// cross-check reaches the rules the grid-only plans of randomForXcheck leave
// alone.
func optionsForXcheck(t *testing.T, seed int64, n int) []xcase {
	return optionCases(t, seed, n, func(*mrand.Rand, map[string]any) {})
}

// optimizerForXcheck is optionsForXcheck with train.optimizer muon or sgd in
// every plan, beside the companions Megatron rules on with it
// (withOptimizer): its own generator, so the other seeds' plans stay the
// ones their results name.
func optimizerForXcheck(t *testing.T, seed int64, n int) []xcase {
	return optionCases(t, seed, n, func(r *mrand.Rand, over map[string]any) { withOptimizer(r, over, 4, "muon", "sgd") })
}

// lionForXcheck is optimizerForXcheck with train.optimizer lion in every
// plan.
func lionForXcheck(t *testing.T, seed int64, n int) []xcase {
	return optionCases(t, seed, n, func(r *mrand.Rand, over map[string]any) { withOptimizer(r, over, 4, "lion") })
}

// emergingForXcheck is optimizerForXcheck with train.optimizer soap or
// adaptive_muon in every plan (the two emerging optimizers session 29
// added), and with adaptive_muon a tensor-parallel mode at random one time
// in two.
func emergingForXcheck(t *testing.T, seed int64, n int) []xcase {
	return optionCases(t, seed, n, func(r *mrand.Rand, over map[string]any) {
		withOptimizer(r, over, 4, "soap", "adaptive_muon")
		train := subMap(over, "train")
		if train["optimizer"] == "adaptive_muon" && r.Intn(2) == 0 {
			train["muon_tp_mode"] = []string{"duplicated", "blockwise", "distributed"}[r.Intn(3)]
		}
	})
}

// activationForXcheck is optionsForXcheck with model.activation one of the
// four in every plan, beside random linear biases and bias-activation
// fusions (withActivation): what core_transformer_config_from_args and
// TransformerConfig rule on together (rules S16, S17).
func activationForXcheck(t *testing.T, seed int64, n int) []xcase {
	return optionCases(t, seed, n, func(r *mrand.Rand, over map[string]any) { withActivation(r, over) })
}

// budgetForXcheck is n MoE plans with the expert-rank capacity factor, the
// paged stash and what they rule on (the dispatcher and its backend,
// Transformer Engine's op fuser, CPU and fine-grained offloading, a
// full-iteration CUDA graph) drawn at random.
func budgetForXcheck(t *testing.T, seed int64, n int) []xcase {
	return optionCases(t, seed, n, func(r *mrand.Rand, over map[string]any) { withBudget(r, over) })
}

// withBudget makes the plan an MoE one and draws its rank-budget settings.
func withBudget(r *mrand.Rand, over map[string]any) {
	model, kern, train := subMap(over, "model"), subMap(over, "kernels"), subMap(over, "train")
	moe, _ := model["moe"].(map[string]any)
	if moe == nil {
		moe = map[string]any{"experts": 8}
		model["moe"] = moe
	}
	model["bias"] = r.Intn(4) == 0
	moe["dispatcher"] = []string{"alltoall", "flex", "flex"}[r.Intn(3)]
	moe["flex_dispatcher_backend"] = []string{"deepep", "hybridep", "hybridep", "ncclep"}[r.Intn(4)]
	if r.Intn(4) != 0 {
		moe["expert_rank_capacity_factor"] = []float64{0.5, 1.5, 2}[r.Intn(3)]
	}
	moe["paged_stash"] = r.Intn(2) == 0
	kern["use_transformer_engine_op_fuser"] = r.Intn(2) == 0
	if r.Intn(5) == 0 {
		train["cpu_offloading_num_layers"] = 1
	}
	if r.Intn(5) == 0 {
		train["fine_grained_activation_offloading"] = true
		train["offload_modules"] = [][]string{{"attn_proj"}, {"moe_act"}, {"expert_fc1", "core_attn"}}[r.Intn(3)]
	}
	if r.Intn(3) == 0 {
		kern["cuda_graph_impl"] = "full_iteration"
		train["check_for_nan_in_loss_and_grad"] = false
	}
}

// withActivation sets model.activation, model.bias and the two
// bias-activation fusions at random.
func withActivation(r *mrand.Rand, over map[string]any) {
	model, kern := subMap(over, "model"), subMap(over, "kernels")
	model["activation"] = []string{"gelu", "swiglu", "squared_relu", "quick_geglu"}[r.Intn(4)]
	model["bias"] = r.Intn(2) == 0
	kern["bias_gelu_fusion"] = r.Intn(2) == 0
	kern["bias_swiglu_fusion"] = r.Intn(2) == 0
}

// subMap is m[k] as a map, made and stored there when m has none.
func subMap(m map[string]any, k string) map[string]any {
	if v, ok := m[k].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[k] = v
	return v
}

// optionCases makes n plans of withMoreOptions and then more.
func optionCases(t *testing.T, seed int64, n int, more func(*mrand.Rand, map[string]any)) []xcase {
	r := mrand.New(mrand.NewSource(seed))
	var all []xcase
	for range n {
		over := map[string]any{}
		withMoreOptions(r, over)
		more(r, over)
		all = append(all, xcaseOf(t, over))
	}
	return all
}

// withOptimizer sets train.optimizer to one of names, and each of the
// companions Megatron rules on with it (FSDP, the precision-aware optimizer,
// the parameter gather overlapped with the optimizer step, fp16, the
// checkpoint format) one time in odds; the distributed optimizer half of the
// time.
func withOptimizer(r *mrand.Rand, over map[string]any, odds int, names ...string) {
	train := subMap(over, "train")
	train["optimizer"] = names[r.Intn(len(names))]
	train["distributed_optimizer"] = r.Intn(2) == 0
	for _, f := range []string{"fsdp", "precision_aware_optimizer", "overlap_param_gather_with_optimizer_step"} {
		if r.Intn(odds) == 0 {
			train[f] = true
		}
	}
	if r.Intn(odds) == 0 {
		train["precision"] = "fp16"
	}
	if r.Intn(odds) == 0 {
		over["checkpoint"] = map[string]any{"format": []string{"torch", "torch_dist", "torch_dcp", "fsdp_dtensor"}[r.Intn(4)]}
	}
}
