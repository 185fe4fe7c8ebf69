package check

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// baseJSON (testdata/base.json; compiler's code registry test reads it too)
// is a small valid dense plan written out in full, with every default
// of schema/plan.cue spelt out (TestBaseMatchesSchema checks that). The corpus
// and the property tests mutate it.
//
// World 16 = 2 nodes × 8 H100; tp=2, pp=2 → dp=4; 16 layers → 8 per stage;
// global batch 64 = 16 microbatches of 1 × dp 4.
var baseJSON = func() string {
	b, err := os.ReadFile("testdata/base.json")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// Defaults of the optional structs, filled in when an override introduces one.
var optionalDefaults = map[string]string{
	"model.moe": `{"topk": 2, "shared_ffn_hidden": 0, "layer_freq": 1, "dense_layers": 0,
	  "dispatcher": "alltoall", "grouped_gemm": true, "router_load_balancing": "aux_loss",
	  "aux_loss_coeff": 1e-2, "score_function": "softmax", "router_pre_softmax": false,
	  "expert_bias": false, "router_bias_update_rate": 1e-3, "router_force_load_balancing": false,
	  "flex_dispatcher_backend": "deepep", "shared_expert_overlap": false,
	  "paged_stash_buffer_size_factor_cuda": 1.1}`,
	"model.mla":     `{"kv_lora_rank": 32, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64, "v_head_dim": 128}`,
	"cluster.slurm": `{"exclusive": true, "requeue": false, "extra": []}`,
	"checkpoint":    `{"interval": 1000, "format": "torch_dist", "async_save": false}`,
}

// mergeJSON deep-merges override into base: objects merge key by key, a null
// deletes the key, anything else replaces. New optional structs start from
// their schema defaults.
func mergeJSON(base, override map[string]any, prefix string) {
	for k, v := range override {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		if v == nil {
			delete(base, k)
			continue
		}
		ov, isObj := v.(map[string]any)
		if !isObj {
			base[k] = v
			continue
		}
		bv, ok := base[k].(map[string]any)
		if !ok {
			bv = map[string]any{}
			if def, ok := optionalDefaults[path]; ok {
				if err := json.Unmarshal([]byte(def), &bv); err != nil {
					panic(err)
				}
			}
			base[k] = bv
		}
		mergeJSON(bv, ov, path)
	}
}

// specFrom builds the base spec with overrides applied.
func specFrom(t testing.TB, override map[string]any) *spec.Spec {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(baseJSON), &m); err != nil {
		t.Fatal(err)
	}
	mergeJSON(m, override, "")
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var s spec.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("override %v: %v", override, err)
	}
	return &s
}

// parse turns a JSON override literal into a map.
func parse(t testing.TB, js string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("bad override %s: %v", js, err)
	}
	return m
}

func runSpec(s *spec.Spec) diag.List { return Run(s, spec.Derive(s), diag.NoPos) }

// codesOf returns the distinct codes of l, sorted.
func codesOf(l diag.List) []string {
	out := slices.Clone(l.Codes())
	slices.Sort(out)
	return slices.Compact(out)
}

func TestBaseIsClean(t *testing.T) {
	s := specFrom(t, nil)
	if l := runSpec(s); len(l) != 0 {
		t.Fatalf("the base spec has diagnostics:\n%v", l)
	}
}

// TestExpertGridHintOffersNodes: an expert grid the world size does not
// divide (etp·ep·pp = 2·8·2 = 32 on 2 nodes of 8) is also offered the node
// count that keeps the degrees (4 nodes, 32 GPUs), as a launch script
// imported with its default node count needs; every check passes there.
func TestExpertGridHintOffersNodes(t *testing.T) {
	s := specFrom(t, parse(t, `{"model": {"bias": false, "moe": {"experts": 8}}, "parallel": {"ep": 8, "etp": 2}}`))
	l := runSpec(s)
	i := slices.IndexFunc(l, func(d diag.Diagnostic) bool { return d.Code == "expert-grid-not-divisible" })
	if i < 0 {
		t.Fatalf("no expert-grid-not-divisible: %v", l)
	}
	if !strings.Contains(l[i].Hint, "use cluster.nodes = 4 (world size 32)") {
		t.Errorf("hint %q does not offer 4 nodes", l[i].Hint)
	}
	s.Cluster.Nodes = 4
	if l := runSpec(s); l.HasErrors() {
		t.Errorf("on 4 nodes: %v", l)
	}
}
