package compiler

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/importer"
	"parc.dev/parc/internal/spec"
)

// tiny is a small valid spec every trigger below edits.
const tiny = `model: {layers: 4, hidden: 256, heads: 4, vocab: 1000}
cluster: {nodes: 1, gpus_per_node: 8, nvlink_gbps: 450, network_gbps: 50}
cluster: gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}
parallel: {tp: 2, pp: 2}
train: {seq_length: 256, micro_batch: 1, global_batch: 64, iters: 10}
`

// dense7b is a 7B-parameter dense model on one 8-GPU node: 64.2 GiB per GPU
// at tp=2 without the distributed optimizer (parc explain).
const dense7b = `model: {layers: 32, hidden: 4096, heads: 32, vocab: 32000}
cluster: {
	nodes:         NODES
	gpus_per_node: 8
	gpu: {name: "H100", memory_gib: MEMORY, bf16_tflops: 989}
	nvlink_gbps:  450
	network_gbps: 50
}
parallel: {PARALLEL}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64, iters: 10}
`

func dense(nodes, memory, parallel string) string {
	return strings.NewReplacer("NODES", nodes, "MEMORY", memory, "PARALLEL", parallel).Replace(dense7b)
}

// moe16 is a small 16-expert MoE model on two 8-GPU nodes.
const moe16 = `model: {layers: 8, hidden: 1024, heads: 16, vocab: 32000, moe: {experts: 16, topk: 2}}
cluster: {
	nodes:         2
	gpus_per_node: 8
	nvlink_domain: DOMAIN
	gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}
	nvlink_gbps:  450
	network_gbps: 50
}
parallel: {PARALLEL}
train: {seq_length: 4096, micro_batch: 1, global_batch: 64, iters: 10}
`

func moe(domain, parallel string) string {
	return strings.NewReplacer("DOMAIN", domain, "PARALLEL", parallel).Replace(moe16)
}

// trigger is one input that must make the real pipeline report code.
type trigger struct {
	code string
	file string // the spec's name (its extension picks CUE or HCL)
	text string // "" means the file does not exist
	run  string // "vet" (default), "solve", "compile"
	dir  map[string]string
	opts Options
}

// triggers produce the codes of the stages other than check (check's codes
// come from its corpus, run through Vet below).
var triggers = []trigger{
	{code: "file-not-found", file: "missing.cue"},
	{code: "file-unreadable", file: "adir.cue", dir: map[string]string{"adir.cue/x": ""}},
	{code: "input-too-large", file: "big.cue", text: "// " + strings.Repeat("x", 1<<20+1) + "\n" + tiny},
	{code: "not-text", file: "png.cue", text: "\x89PNG\r\n\x1a\n\x00\x00"},
	{code: "too-deep", file: "deep.hcl", text: "x = " + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + "\n"},
	{code: "number-too-large", file: "p.cue", text: tiny + "train: seed: 99999999999999999999\n"},
	{code: "structural-cycle", file: "p.cue", text: tiny + "x: {a: x}\n"},
	{code: "data-split", file: "p.cue", text: tiny + "data: {mock: false, paths: [\"/d\"], split: \"1,2,3,4\"}\n"},
	{code: "syntax", file: "p.cue", text: tiny + "parallel: {tp: }\n"},
	{code: "unknown-field", file: "p.cue", text: tiny + "parallel: tensor_parallel: 2\n"},
	{code: "type-mismatch", file: "p.cue", text: strings.Replace(tiny, "global_batch: 64", `global_batch: "64"`, 1)},
	{code: "out-of-range", file: "p.cue", text: strings.Replace(tiny, "nodes: 1", "nodes: 0", 1)},
	{code: "invalid-value", file: "p.cue", text: tiny + `model: activation: "relu"` + "\n"},
	{code: "missing-field", file: "p.cue", text: strings.Replace(tiny, "heads: 4, ", "", 1)},
	{code: "unknown-reference", file: "p.cue", text: "import \"parc.dev/stdlib/models\"\n" + strings.Replace(tiny, "model: {layers: 4, hidden: 256, heads: 4, vocab: 1000}", "model: models.llama9", 1)},
	{code: "unknown-import", file: "p.cue", text: "import \"parc.dev/stdlib/nothing\"\n\nx: nothing.y\n" + tiny},
	{code: "cue-language-version", file: "m/p.cue", text: tiny, dir: map[string]string{"m/cue.mod/module.cue": "module: \"x.example/m\"\nlanguage: version: \"v0.5.0\"\n"}},
	{code: "hcl-expression", file: "p.hcl", text: "model {\n  layers = var.n\n}\n"},
	{code: "hcl-block-label", file: "p.hcl", text: "model \"x\" {\n  layers = 4\n}\n"},
	{code: "hcl-duplicate-block", file: "p.hcl", text: "model {\n  layers = 4\n}\nmodel {\n  hidden = 4\n}\n"},
	{code: "no-feasible-plan", file: "p.cue", run: "solve", text: strings.Replace(tiny, "parallel: {tp: 2, pp: 2}", "parallel: {tp: 3 | 8, pp: 2}", 1)},
	// The schema's largest model and cluster with degrees open and nothing
	// that fits: the search stops at its work budget (a few seconds).
	{code: "solve-search-too-large", file: "p.cue", text: `
model: {name: "huge", layers: 65536, hidden: 1048576, heads: 65536, vocab: 67108864, activation: "swiglu"}
cluster: {nodes: 4096, gpus_per_node: 1024, gpu: {name: "G", memory_gib: 4096, bf16_tflops: 100000}, nvlink_gbps: 100000, network_gbps: 100000}
parallel: {tp: int, pp: int, cp: int, vpp: int}
train: {seq_length: 67108864, micro_batch: 1, global_batch: 1073741824, iters: 10}
`},
	{code: "open-field-no-value", file: "p.cue", run: "solve", text: strings.Replace(tiny, "parallel: {tp: 2, pp: 2}", "parallel: {tp: >5000 & <5001, pp: 2}", 1)},
	{code: "memory-exceeds-gpu", file: "p.cue", text: dense("1", "40", "tp: 2")},
	{code: "memory-near-limit", file: "p.cue", text: dense("1", "62", "tp: 2")},
	{code: "cp-crosses-node", file: "p.cue", text: dense("2", "80", "tp: 8, cp: 2")},
	{code: "ep-crosses-node", file: "p.cue", text: moe("8", "ep: 16")},
	{code: "etp-crosses-nvlink", file: "p.cue", text: moe("4", "etp: 8")},
	{code: "import-cycle", file: "m/plan.cue", text: "package plan\n\nimport \"ex.com/a\"\n\ntrain: iters: a.x\n", dir: map[string]string{
		"m/cue.mod/module.cue":         "module: \"ex.com\"\nlanguage: version: \"v0.9.0\"\n",
		"m/cue.mod/pkg/ex.com/a/a.cue": "package a\n\nimport \"ex.com/b\"\n\nx: b.y\n",
		"m/cue.mod/pkg/ex.com/b/b.cue": "package b\n\nimport \"ex.com/a\"\n\ny: a.x\n",
	}},
	{code: "pipeline-bubble", file: "p.cue", text: strings.Replace(tiny, "global_batch: 64", "global_batch: 4", 1)},
	{code: "moe-routing-unbounded", file: "p.cue", text: moe("8", "ep: 8") + "model: moe: router_load_balancing: \"none\"\n"},
	{code: "comms-exceed-compute", file: "p.cue", text: strings.Replace(tiny, "nvlink_gbps: 450", "nvlink_gbps: 0.1", 1)},
	{code: "ddp-bucket-per-tensor", file: "p.cue", text: strings.Replace(tiny, "iters: 10}", "iters: 10, ddp_bucket_size: 64}", 1)},
	{code: "batch-schedule-iterations", file: "p.cue", text: strings.Replace(tiny, "iters: 10}", "iters: 10, step_batch_size_schedule: \"0:64 1M:128\"}", 1)},
	{code: "run-exceeds-time-limit", file: "p.cue", text: strings.Replace(tiny, "iters: 10}", "iters: 100000000}\ncluster: slurm: time: \"00:01:00\"", 1)},
	{code: "extra-arg-conflict", file: "p.cue", text: tiny + `launch: extra_args: ["--num-layers", "8"]` + "\n"},
	{code: "extra-arg-unknown", file: "p.cue", text: tiny + `launch: extra_args: ["--no-such-flag"]` + "\n"},
	{code: "option-like-value", file: "p.cue", text: tiny + `data: {mock: false, paths: ["--train-iters=9"]}` + "\n"},
	{code: "megatron-arg-line-break", file: "p.cue", text: tiny + `launch: extra_args: ["--log-interval", "1\n2"]` + "\n"},
	{code: "templates-outside", file: "m/p.cue", run: "compile", text: tiny + `launch: templates: "../elsewhere"` + "\n",
		dir: map[string]string{"elsewhere/megatron.args.tmpl": "x"}},
	{code: "missing-section", file: "p.cue", text: "import \"parc.dev/stdlib/clusters\"\n" + strings.Replace(tiny, "cluster: {nodes: 1, gpus_per_node: 8, nvlink_gbps: 450, network_gbps: 50}\ncluster: gpu: {name: \"H100\", memory_gib: 80, bf16_tflops: 989}\n", "", 1)},
	{code: "unused-import", file: "p.cue", text: "import \"parc.dev/stdlib/models\"\n" + tiny},
	{code: "too-many-fields", file: "p.cue", text: tiny + "launch: env: {" + manyEnv(10001) + "}\n"},
	{code: "too-many-elements", file: "p.cue", text: tiny + "launch: extra_args: [" + strings.Repeat(`"--x", `, 10001) + "]\n"},
	{code: "memory-above-headroom", file: "p.cue", run: "solve", text: strings.Replace(dense("1", "68", "tp: 2"), "micro_batch: 1", "micro_batch: 1 | 2", 1)},
	{code: "relative-path", file: "p.cue", run: "compile", text: tiny},
	{code: "slurm-output-dir", file: "p.cue", run: "compile", text: tiny + `cluster: slurm: output: "logs/%x-%j.out"` + "\n"},
	{code: "templates-dir", file: "p.cue", run: "compile", text: tiny + `launch: templates: "nowhere"` + "\n"},
	{code: "template", file: "p.cue", run: "compile", text: tiny, dir: map[string]string{"tpl/submit.sbatch.tmpl": "{{.Nope}}"}, opts: Options{Templates: "tpl"}},
}

// manyEnv is n environment variables, V0: "x", V1: "x", ...
func manyEnv(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "V%d: \"x\", ", i)
	}
	return b.String()
}

// codesFrom runs one trigger through the pipeline and returns the codes.
func (tr trigger) codesFrom(t *testing.T) []string {
	dir := t.TempDir()
	for name, text := range tr.dir {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	path := filepath.Join(dir, tr.file)
	if tr.text != "" {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(tr.text), 0o644))
	}
	if tr.opts.Templates != "" {
		tr.opts.Templates = filepath.Join(dir, tr.opts.Templates)
	}
	var diags diag.List
	switch tr.run {
	case "solve":
		// A solve reports the rules that rejected candidates by code too
		// (Result.Rejected, in parc solve --format json).
		r, ds := Solve(Source{Path: path}, 3)
		diags = ds
		if r != nil {
			for _, code := range slices.Sorted(maps.Keys(r.Rejected)) {
				diags = append(diags, diag.Diagnostic{Code: code})
			}
		}
	case "compile":
		_, _, diags = Compile(Source{Path: path}, tr.opts)
	default:
		_, diags = Vet(Source{Path: path})
	}
	return diags.Codes()
}

// corpusSpecs are the check corpus's cases (internal/check/testdata): each
// case's overrides merged into the corpus's base spec, written as CUE (JSON
// is CUE), with the codes the case expects.
func corpusSpecs(t *testing.T) map[string][]byte {
	t.Helper()
	base, err := os.ReadFile("../internal/check/testdata/base.json")
	require.NoError(t, err)
	files, err := filepath.Glob("../internal/check/testdata/corpus/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var cases []struct {
			Name string         `json:"name"`
			Spec map[string]any `json:"spec"`
		}
		require.NoError(t, json.Unmarshal(data, &cases), f)
		for _, c := range cases {
			var m map[string]any
			require.NoError(t, json.Unmarshal(base, &m))
			merge(m, c.Spec)
			b, err := json.MarshalIndent(m, "", "  ")
			require.NoError(t, err)
			out[strings.TrimSuffix(filepath.Base(f), ".json")+"/"+c.Name] = b
		}
	}
	return out
}

// merge deep-merges override into base (a null deletes a key).
func merge(base, override map[string]any) {
	for k, v := range override {
		switch v := v.(type) {
		case nil:
			delete(base, k)
		case map[string]any:
			if b, ok := base[k].(map[string]any); ok {
				merge(b, v)
				continue
			}
			base[k] = v
		default:
			base[k] = v
		}
	}
}

// goOnly are the codes only a spec built in Go reaches (the schema rejects
// the value first): compiler.Resolve, the public API for such specs, reports
// them.
var goOnly = map[string]func(s *spec.Spec){
	"value-range":         func(s *spec.Spec) { s.Parallel.PP = 0 },
	"uneven-stage-layers": func(s *spec.Spec) { zero := 0; s.Parallel.PP, s.Parallel.FirstStageLayers = 2, &zero },
}

// TestEveryCodeIsProduced: every registered code comes out of the real
// pipeline for at least one input — the check corpus vetted as CUE files,
// the triggers above, and Go-built specs through Resolve — so no code in the
// registry (and the README's table) is one a user can never see.
func TestEveryCodeIsProduced(t *testing.T) {
	produced := map[string]string{}
	for name, text := range corpusSpecs(t) {
		path := filepath.Join(t.TempDir(), "plan.cue")
		require.NoError(t, os.WriteFile(path, text, 0o644))
		_, diags := Vet(Source{Path: path})
		for _, c := range diags.Codes() {
			produced[c] = "corpus " + name
		}
	}
	for _, tr := range triggers {
		codes := tr.codesFrom(t)
		assert.Contains(t, codes, tr.code, "trigger %s (%s) gives %v", tr.code, tr.file, codes)
		for _, c := range codes {
			produced[c] = "trigger " + tr.code
		}
	}
	for code, edit := range goOnly {
		p, diags := Vet(Source{Path: "../examples/tiny-gpt-local.cue"})
		require.NotNil(t, p, "%v", diags)
		s := p.Spec
		edit(&s)
		_, diags = Resolve("go", &s, diag.NoPos)
		assert.Contains(t, diags.Codes(), code)
		for _, c := range diags.Codes() {
			produced[c] = "go " + code
		}
	}
	if os.Geteuid() == 0 {
		// root reads every file: permission-denied needs another user
		// (internal/load's TestUnreadableInput covers it there).
		produced["permission-denied"] = "not as root"
	} else {
		p := filepath.Join(t.TempDir(), "secret.cue")
		require.NoError(t, os.WriteFile(p, []byte(tiny), 0o000))
		_, diags := Vet(Source{Path: p})
		assert.Equal(t, []string{"permission-denied"}, diags.Codes())
		produced["permission-denied"] = "an unreadable file"
	}
	// parc import's codes come from its own pipeline: internal/importer/
	// megatron's TestEveryCodeIsProduced runs Import on inputs for each.
	for _, c := range importer.Codes {
		produced[c.Code] = "internal/importer/megatron"
	}
	var never []string
	for _, c := range Codes() {
		if _, ok := produced[c.Code]; !ok {
			never = append(never, c.Code)
		}
	}
	assert.Empty(t, never, "registered codes no test input produces through the pipeline")
	for _, c := range slices.Sorted(maps.Keys(produced)) {
		_, ok := codeIndex()[c]
		assert.True(t, ok, "%s (from %s) is not registered", c, produced[c])
	}
}

func codeIndex() map[string]bool {
	m := map[string]bool{}
	for _, c := range Codes() {
		m[c.Code] = true
	}
	return m
}

// TestExpertGroupsInNVL72: where an NVLink domain holds several nodes
// (GB200 NVL72: 4 GPUs a node, 72 a domain) an expert-parallel group that
// spans nodes but stays in its domain runs its all-to-all over NVLink and
// gets no ep-crosses-node; one that leaves the domain does, and its hint
// names the values whose groups divide the domain.
func TestExpertGroupsInNVL72(t *testing.T) {
	spec := func(ep int) []byte {
		return []byte(fmt.Sprintf(`model: {layers: 8, hidden: 1024, heads: 16, vocab: 32000, bias: false, moe: {experts: 64, topk: 2}}
cluster: {nodes: 36, gpus_per_node: 4, nvlink_domain: 72, gpu: {name: "GB200", memory_gib: 186, bf16_tflops: 2500}, nvlink_gbps: 900, network_gbps: 50}
parallel: {tp: 1, pp: 1, ep: %d}
train: {seq_length: 4096, micro_batch: 1, global_batch: 144, iters: 10}
`, ep))
	}
	_, ds := Vet(Source{Path: "p.cue", Data: spec(8)})
	require.NotContains(t, ds.Codes(), "ep-crosses-node", "ep 8 spans two 4-GPU nodes inside one 72-GPU domain: %v", ds)
	_, ds = Vet(Source{Path: "p.cue", Data: spec(16)})
	var d *diag.Diagnostic
	for i := range ds {
		if ds[i].Code == "ep-crosses-node" {
			d = &ds[i]
		}
	}
	require.NotNil(t, d, "ep 16: the group of ranks 64-79 straddles the domains 0-71 and 72-143: %v", ds)
	require.Contains(t, d.Message, "1 of 9 expert-parallel groups (size 16) span NVLink domains of 72 GPUs")
	require.Contains(t, d.Message, "parc's step time does not charge it yet", "the estimate times an expert-parallel group within a domain's size as inside one")
	require.Contains(t, d.Hint, "dividing nvlink_domain=72")
}

// TestHybridEPAcrossDomains: HybridEP counts the ranks of its group each
// rank reaches over NVLink and asserts the group size divides by it
// (DeepEP hybrid-ep, HybridEPBuffer.__init__), so a group a domain boundary
// cuts into unequal parts fails at start-up: ep 32 on 128 GB200 (32 nodes,
// domains of 72) has the group of ranks 64-95 with 8 in the first domain
// and 24 in the second, and ep-crosses-node says so. ep 16 cuts the group
// of ranks 64-79 into 8 and 8, which HybridEP numbers consistently; the
// alltoall dispatcher has no such assert.
func TestHybridEPAcrossDomains(t *testing.T) {
	spec := func(ep int, dispatcher string) []byte {
		return []byte(fmt.Sprintf(`model: {layers: 8, hidden: 1024, heads: 16, vocab: 32000, bias: false, moe: {experts: 64, topk: 2, dispatcher: %q, flex_dispatcher_backend: "hybridep"}}
cluster: {nodes: 32, gpus_per_node: 4, nvlink_domain: 72, gpu: {name: "GB200", memory_gib: 186, bf16_tflops: 2500}, nvlink_gbps: 900, network_gbps: 50}
parallel: {tp: 1, pp: 1, ep: %d}
train: {seq_length: 4096, micro_batch: 1, global_batch: 128, iters: 10}
`, dispatcher, ep))
	}
	warning := func(ep int, dispatcher string) string {
		_, ds := Vet(Source{Path: "p.cue", Data: spec(ep, dispatcher)})
		for _, d := range ds {
			if d.Code == "ep-crosses-node" {
				return d.Message
			}
		}
		return ""
	}
	require.Contains(t, warning(32, "flex"), "1 of 4 expert-parallel groups (size 32) span NVLink domains of 72 GPUs")
	require.Contains(t, warning(32, "flex"), "with the hybridep backend, 1 of them holds unequal numbers of ranks in the domains they span, which HybridEPBuffer rejects at start-up")
	require.NotContains(t, warning(16, "flex"), "HybridEPBuffer", "ep 16: 8 and 8 ranks in the two domains")
	require.NotEmpty(t, warning(16, "flex"))
	require.NotContains(t, warning(32, "alltoall"), "HybridEPBuffer")
}
