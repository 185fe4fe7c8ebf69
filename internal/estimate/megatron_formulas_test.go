package estimate_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/targets/megatron"
)

// Megatron's own formulas on random plans: testdata/megatron-formulas holds
// random specs that pass every check (cases.jsonl, each with the arguments
// parc's Megatron target renders for it) and what Megatron-LM's code at
// d98e8a64 computes from those arguments (megatron.jsonl, written by
// formulas.py there: theoretical_memory_usage.py's weight-and-optimizer and
// activation memory, as report_theoretical_memory picks the activation
// formula, and training.py's num_floating_point_operations for one global
// batch; and the decoder layers it builds on every pipeline rank and virtual
// stage). parc's reference line (MegatronTheoreticalMemory), its FLOP count
// (MegatronFLOPs, behind model TFLOP/s and MFU) and its split of the layers
// (spec.StageLayers, behind every stage's memory and time) must agree.
//
// Regenerate (README.md there):
//
//	PARC_FORMULAS_DIR=internal/estimate/testdata/megatron-formulas go test ./internal/estimate -run TestDumpMegatronFormulaCases
//	MEGATRON_LM=/tmp/mlm python3 internal/estimate/testdata/megatron-formulas/formulas.py

const formulasDir = "testdata/megatron-formulas"

// formulaCase is one line of cases.jsonl.
type formulaCase struct {
	Name  string            `json:"name"`
	CUE   string            `json:"cue"`
	Args  []string          `json:"args"`
	Env   map[string]string `json:"env"`
	World int               `json:"world"`
	CC    float64           `json:"cc"`
}

// formulaResult is one line of megatron.jsonl: Megatron's numbers, or why it
// refused the arguments.
type formulaResult struct {
	Name              string  `json:"name"`
	Error             string  `json:"error"`
	WeightsOptimizer  float64 `json:"weights_optimizer"`
	Activations       float64 `json:"activations"`
	ActivationFormula string  `json:"activation_formula"`
	FLOPs             float64 `json:"flops"`
	// Stages is, per pipeline rank and virtual stage, the first decoder
	// layer and the count Megatron builds there
	// (get_transformer_layer_offset, get_num_layers_to_build).
	Stages [][][2]int `json:"stages"`
}

// randomFormulaSpec writes one random plan in CUE: dense, MoE and MLA models
// with grouped-query attention, SwiGLU or GELU, RMSNorm or LayerNorm, RoPE or
// learned positions, biases or none, tied or untied embeddings,
// shared experts, dense leading layers, MoE every other layer, MTP; the
// degrees, pipeline layouts, uneven first and last stages, the embedding and
// loss accounted in the split, sequence parallelism, recomputation and the
// distributed optimizer.
func randomFormulaSpec(r *rand.Rand, i int) string {
	pick := func(xs ...int) int { return xs[r.IntN(len(xs))] }
	coin := func(p float64) bool { return r.Float64() < p }
	var m []string
	heads := pick(8, 16, 32, 64)
	hidden := heads * pick(64, 96, 128)
	layers := pick(4, 6, 8, 12, 16)
	m = append(m, fmt.Sprintf(`name: "r%d", layers: %d, hidden: %d, heads: %d`, i, layers, hidden, heads))
	groups := heads
	kind := r.IntN(3) // 0 dense, 1 MoE, 2 MLA + MoE
	if kind != 2 && coin(0.6) {
		groups = pick(1, 2, 4, 8)
		m = append(m, fmt.Sprintf("query_groups: %d", groups))
	}
	if kind != 2 && coin(0.3) {
		m = append(m, fmt.Sprintf("kv_channels: %d", pick(64, 128)))
	}
	m = append(m, fmt.Sprintf("vocab: %d", pick(32000, 50257, 128256, 151936)))
	act := "swiglu"
	if kind == 0 && coin(0.4) {
		act = "gelu"
	}
	m = append(m, fmt.Sprintf("activation: %q", act))
	if coin(0.4) {
		m = append(m, fmt.Sprintf("ffn_hidden: %d", hidden*pick(2, 3, 4)))
	}
	m = append(m, fmt.Sprintf("tie_embeddings: %v", coin(0.3)))
	switch {
	case kind == 0 && coin(0.3):
		m = append(m, `position_embedding: "learned_absolute"`, `normalization: "layernorm"`)
	case coin(0.2):
		m = append(m, `position_embedding: "rope"`, `normalization: "layernorm"`)
	default:
		m = append(m, `position_embedding: "rope"`, `normalization: "rmsnorm"`)
	}
	noBias := coin(0.4)
	experts := 1
	if kind > 0 {
		experts = pick(8, 16, 32, 64)
		topk := min(experts, pick(1, 2, 4, 8))
		moe := []string{fmt.Sprintf("experts: %d, topk: %d, ffn_hidden: %d", experts, topk, pick(256, 512, 1024))}
		if coin(0.5) {
			moe = append(moe, fmt.Sprintf("shared_ffn_hidden: %d", pick(256, 512, 1024)))
			// Megatron's shared experts take no linear biases
			// (moe-shared-expert-bias).
			noBias = true
		}
		if coin(0.3) {
			moe = append(moe, "layer_freq: 2")
		} else if coin(0.4) {
			moe = append(moe, fmt.Sprintf("dense_layers: %d", pick(1, 2)))
		}
		m = append(m, "moe: {"+strings.Join(moe, ", ")+"}")
	}
	if noBias {
		m = append(m, "bias: false")
	}
	if kind == 2 {
		mla := fmt.Sprintf("kv_lora_rank: %d, qk_head_dim: %d, qk_pos_emb_head_dim: %d, v_head_dim: %d",
			pick(128, 256, 512), pick(64, 128), pick(32, 64), pick(64, 128))
		if coin(0.6) {
			mla += fmt.Sprintf(", q_lora_rank: %d", pick(256, 512, 1536))
		}
		m = append(m, "mla: {"+mla+"}")
	}
	mtp := 0
	if coin(0.2) {
		mtp = 1
		m = append(m, "mtp_layers: 1")
	}
	nodes := pick(1, 2, 4)
	var p []string
	tp := pick(1, 2, 4, 8)
	pp := pick(1, 1, 2, 4)
	p = append(p, fmt.Sprintf("tp: %d, pp: %d", tp, pp))
	vpp := 1
	if pp > 1 && coin(0.3) {
		vpp = 2
	}
	switch {
	case pp == 1:
	case coin(0.25):
		// A pipeline layout: the layers dealt at random over pp·vpp
		// stages, the embedding first, the MTP layer and the loss last.
		counts := make([]int, pp*vpp)
		for range layers {
			counts[r.IntN(len(counts))]++
		}
		stages := make([]string, len(counts))
		for i, n := range counts {
			if i == 0 {
				stages[i] = "E"
			}
			stages[i] += strings.Repeat("t", n)
			if i == len(counts)-1 {
				stages[i] += strings.Repeat("m", mtp) + "L"
			}
		}
		p = append(p, fmt.Sprintf("layout: %q", strings.Join(stages, "|")))
	case coin(0.35):
		// Uneven first and last stages, mostly ones Megatron can split
		// (the middle stages share the rest evenly), some not.
		first := r.IntN(layers/pp + 2)
		last := layers - first
		if pp > 2 {
			last = (layers - first) % (pp - 2)
			if last+pp-2 <= layers-first && coin(0.5) {
				last += pp - 2
			}
		}
		switch {
		case coin(0.2):
			p = append(p, fmt.Sprintf("first_stage_layers: %d", first))
		case coin(0.2):
			p = append(p, fmt.Sprintf("last_stage_layers: %d", last))
		default:
			p = append(p, fmt.Sprintf("first_stage_layers: %d, last_stage_layers: %d", first, last))
		}
	case coin(0.4):
		// The embedding and the loss counted as layers in the split.
		for _, f := range r.Perm(3) {
			emb, loss := f != 1, f != 2
			if (layers+boolInt(emb)+boolInt(loss))%(pp*vpp) == 0 {
				p = append(p, fmt.Sprintf("account_for_embedding: %v, account_for_loss: %v", emb, loss))
				break
			}
		}
	}
	if vpp > 1 {
		p = append(p, fmt.Sprintf("vpp: %d", vpp))
	}
	if coin(0.2) {
		p = append(p, "cp: 2")
	}
	if kind > 0 {
		p = append(p, fmt.Sprintf("ep: %d", pick(1, 2, 4, 8)))
		if coin(0.5) {
			p = append(p, "etp: 1")
		}
	}
	if tp > 1 {
		p = append(p, fmt.Sprintf("sp: %v", coin(0.7)))
	}
	mb := pick(1, 2)
	var t []string
	t = append(t, fmt.Sprintf("seq_length: %d, micro_batch: %d, global_batch: %d, iters: 10", pick(1024, 2048, 4096), mb, mb*nodes*8*pick(1, 2, 4)))
	switch r.IntN(3) {
	case 0:
		t = append(t, `recompute: "none"`)
	case 1:
		t = append(t, `recompute: "selective"`)
	default:
		t = append(t, fmt.Sprintf(`recompute: "full", recompute_method: %q, recompute_layers: 1`, []string{"uniform", "block"}[r.IntN(2)]))
	}
	t = append(t, fmt.Sprintf("distributed_optimizer: %v", coin(0.6)))
	kernels := ""
	if experts > 1 && !noBias {
		// Grouped-GEMM experts take biases only without the fused
		// bias-dropout-add (moe-bias-dropout-fusion).
		kernels = "kernels: {bias_dropout_fusion: false}\n"
	}
	return fmt.Sprintf(`model: {%s}
cluster: {nodes: %d, gpus_per_node: 8, gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}, nvlink_gbps: 450, network_gbps: 50}
parallel: {%s}
train: {%s}
`, strings.Join(m, ", "), nodes, strings.Join(p, ", "), strings.Join(t, ", ")) + kernels
}

// loadFormulaSpec loads a case's CUE; ok is false when it does not load or a
// check rejects it.
func loadFormulaSpec(t testing.TB, name, text string) (*spec.Spec, spec.Derived, bool) {
	res, ds := load.Load(load.Source{Path: filepath.Join(os.TempDir(), name+".cue"), Data: []byte(text)})
	if ds.HasErrors() {
		return nil, spec.Derived{}, false
	}
	s, ds := res.DecodeValue(res.Plan)
	if ds.HasErrors() {
		return nil, spec.Derived{}, false
	}
	d, ok := accepted(s)
	return s, d, ok
}

// accepted derives s and reports whether every check accepts it.
func accepted(s *spec.Spec) (spec.Derived, bool) {
	d := spec.Derive(s)
	return d, !check.Run(s, d, diag.NoPos).HasErrors()
}

// TestDumpMegatronFormulaCases writes cases.jsonl: 200 random plans every
// check accepts, with the arguments and environment parc's Megatron target
// renders for them.
func TestDumpMegatronFormulaCases(t *testing.T) {
	dir := os.Getenv("PARC_FORMULAS_DIR")
	if dir == "" {
		t.Skip("set PARC_FORMULAS_DIR to write the cases for formulas.py")
	}
	r := rand.New(rand.NewPCG(14, 26))
	var b strings.Builder
	n := 0
	for i := 0; n < 200 && i < 20000; i++ {
		text := randomFormulaSpec(r, i)
		name := fmt.Sprintf("r%d", i)
		s, d, ok := loadFormulaSpec(t, name, text)
		if !ok {
			continue
		}
		p := &plan.Plan{Spec: *s, Derived: d}
		args, ds := megatron.Args(p, nil)
		if ds.HasErrors() {
			continue
		}
		line, err := json.Marshal(formulaCase{Name: name, CUE: text, Args: args, Env: megatron.Env(p),
			World: d.World, CC: s.Cluster.GPU.ComputeCapability})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
		n++
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d cases", n)
}

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMegatronFormulasMatchMegatron compares parc's renditions of Megatron's
// theoretical memory and FLOP count with what Megatron-LM computed for the
// same arguments (megatron.jsonl, never parc's output).
func TestMegatronFormulasMatchMegatron(t *testing.T) {
	cases := readJSONL[formulaCase](t, filepath.Join(formulasDir, "cases.jsonl"))
	results := map[string]formulaResult{}
	for _, r := range readJSONL[formulaResult](t, filepath.Join(formulasDir, "megatron.jsonl")) {
		results[r.Name] = r
	}
	rel := func(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(b), 1) }
	compared := 0
	for _, c := range cases {
		m, ok := results[c.Name]
		if !ok {
			t.Errorf("%s: no Megatron result (formulas.py)", c.Name)
			continue
		}
		if m.Error != "" {
			// Every check passed, so Megatron should accept the plan too.
			t.Errorf("%s: Megatron refused parc's arguments: %s", c.Name, m.Error)
			continue
		}
		s, d, ok := loadFormulaSpec(t, c.Name, c.CUE)
		if !ok {
			t.Errorf("%s: the case no longer passes every check", c.Name)
			continue
		}
		got := estimate.MegatronTheoreticalMemory(s, d)
		flops := estimate.MegatronFLOPs(s, d)
		for _, v := range []struct {
			what      string
			got, want float64
		}{
			{"weights and optimizer", got.WeightsAndOptimizer, m.WeightsOptimizer},
			{"activations (" + m.ActivationFormula + ")", got.Activations, m.Activations},
			{"FLOPs per global batch", flops, m.FLOPs},
		} {
			if rel(v.got, v.want) > 1e-9 {
				t.Errorf("%s: %s: parc %.6g, Megatron %.6g (%+.3g%%)\n%s", c.Name, v.what, v.got, v.want, 100*(v.got/v.want-1), c.CUE)
			}
		}
		if !sameStages(d.Stages, m.Stages) {
			t.Errorf("%s: layers per pipeline rank and virtual stage: parc %v, Megatron %v (first layer, count)\n%s", c.Name, d.Stages, m.Stages, c.CUE)
		}
		compared++
	}
	if compared < 150 {
		t.Errorf("only %d of %d cases compared", compared, len(cases))
	}
	t.Logf("%d random plans compared with Megatron-LM's formulas", compared)
}

// sameStages compares parc's split of the decoder layers (spec.StageLayers)
// with Megatron's: the count everywhere, the first layer where there are
// layers.
func sameStages(parc [][]spec.LayerRange, megatron [][][2]int) bool {
	if len(parc) != len(megatron) {
		return false
	}
	for r := range parc {
		if len(parc[r]) != len(megatron[r]) {
			return false
		}
		for v, l := range parc[r] {
			m := megatron[r][v]
			if l.Count != m[1] || l.Count > 0 && l.First != m[0] {
				return false
			}
		}
	}
	return true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
