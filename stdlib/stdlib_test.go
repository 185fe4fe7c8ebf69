package stdlib_test

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"

	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/schema"
	"parc.dev/parc/stdlib"
)

// languageVersion is the oldest CUE language version a user module may
// declare and still load the presets (internal/load.MinLanguageVersion).
const languageVersion = "v0.9.0"

// packages maps each preset directory to its CUE package name and the schema
// definition its presets unify with.
var packages = map[string]string{"models": "#Model", "clusters": "#Cluster"}

// TestEveryFileEmbedded compares the .cue files on disk with the embedded ones.
func TestEveryFileEmbedded(t *testing.T) {
	for dir := range packages {
		onDisk := cueFiles(t, os.DirFS("."), dir)
		embedded := cueFiles(t, stdlib.FS, dir)
		if len(onDisk) == 0 {
			t.Errorf("%s: no .cue files on disk", dir)
		}
		if strings.Join(onDisk, " ") != strings.Join(embedded, " ") {
			t.Errorf("%s: on disk %v, embedded %v", dir, onDisk, embedded)
		}
	}
	// Nothing but the two preset packages is embedded.
	top, err := fs.ReadDir(stdlib.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		if _, ok := packages[e.Name()]; !ok || !e.IsDir() {
			t.Errorf("unexpected embedded entry %q", e.Name())
		}
	}
}

func cueFiles(t *testing.T, fsys fs.FS, dir string) []string {
	t.Helper()
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".cue" {
			t.Errorf("%s/%s: only .cue files belong in a preset package", dir, e.Name())
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// preset is one top-level field of a preset package.
type preset struct {
	file, name string
	doc        string // the comment above the field
	value      cue.Value
}

// loadPresets parses every embedded file of dir at the oldest supported
// language version, checks its package clause, and builds it.
func loadPresets(t *testing.T, ctx *cue.Context, dir string) []preset {
	t.Helper()
	var out []preset
	seen := map[string]string{}
	for _, name := range cueFiles(t, stdlib.FS, dir) {
		file := dir + "/" + name
		src, err := fs.ReadFile(stdlib.FS, file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(file, src, parser.ParseComments, parser.Version(languageVersion))
		if err != nil {
			t.Errorf("%s does not parse: %v", file, err)
			continue
		}
		if got := f.PackageName(); got != dir {
			t.Errorf("%s: package %q, want %q (import path parc.dev/stdlib/%s)", file, got, dir, dir)
		}
		for spec := range f.ImportSpecs() {
			t.Errorf("%s: imports %s; presets are plain data and import nothing", file, spec.Path.Value)
		}
		v := ctx.BuildFile(f)
		if err := v.Err(); err != nil {
			t.Errorf("%s does not build at language %s: %s", file, languageVersion, errors.Details(err, nil))
			continue
		}
		for _, d := range f.Decls {
			field, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			label, _, err := ast.LabelName(field.Label)
			if err != nil {
				t.Errorf("%s: label: %v", file, err)
				continue
			}
			if strings.HasPrefix(label, "_") {
				continue // a hidden field presets share: not importable, no preset
			}
			if prev, dup := seen[label]; dup {
				t.Errorf("%s: %s is also defined in %s", file, label, prev)
			}
			seen[label] = file
			var doc strings.Builder
			for _, cg := range ast.Comments(field) {
				if cg.Doc {
					doc.WriteString(cg.Text())
				}
			}
			out = append(out, preset{file: file, name: label, doc: doc.String(), value: v.LookupPath(cue.MakePath(cue.Str(label)))})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no presets", dir)
	}
	return out
}

func schemaDef(t *testing.T, ctx *cue.Context, def string) cue.Value {
	t.Helper()
	s := ctx.CompileBytes(schema.Source, cue.Filename(schema.Filename))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return s.LookupPath(cue.ParsePath(def))
}

// TestPresetsAreValid unifies every preset with its schema definition (closed:
// a misspelt key fails) and checks it is concrete. Cluster presets must leave
// nodes to the spec.
func TestPresetsAreValid(t *testing.T) {
	ctx := cuecontext.New()
	for dir, def := range packages {
		d := schemaDef(t, ctx, def)
		for _, p := range loadPresets(t, ctx, dir) {
			if !strings.Contains(p.doc, "Source:") {
				t.Errorf("%s: %s has no comment naming its Source:", p.file, p.name)
			}
			if p.value.Kind() != cue.StructKind {
				t.Errorf("%s: %s is not a struct", p.file, p.name)
				continue
			}
			v := p.value
			if dir == "clusters" {
				if n := p.value.LookupPath(cue.ParsePath("nodes")); n.Exists() {
					t.Errorf("%s: %s sets nodes; the spec sets it", p.file, p.name)
				}
				v = v.FillPath(cue.ParsePath("nodes"), 1)
			}
			u := load.PresetDefaults(v, d).Unify(d)
			if err := u.Validate(cue.Concrete(true)); err != nil {
				t.Errorf("%s: %s is not a valid %s: %s", p.file, p.name, def, errors.Details(err, nil))
			}
		}
	}
}

// TestBrokenPresetIsCaught makes sure the validation above can fail.
func TestBrokenPresetIsCaught(t *testing.T) {
	ctx := cuecontext.New()
	d := schemaDef(t, ctx, "#Model")
	for _, src := range []string{
		`{layers: 2, hidden: 8, heads: 2, vocab: 10, hiden: 8}`, // misspelt key
		`{layers: 2, hidden: 8, heads: 2}`,                      // vocab missing
		`{layers: 0, hidden: 8, heads: 2, vocab: 10}`,           // out of range
	} {
		if err := ctx.CompileString(src).Unify(d).Validate(cue.Concrete(true)); err == nil {
			t.Errorf("%s: validated, want an error", src)
		}
	}
}

// decodeModels returns every model preset with the schema defaults filled in.
func decodeModels(t *testing.T) map[string]spec.Model {
	t.Helper()
	ctx := cuecontext.New()
	d := schemaDef(t, ctx, "#Model")
	out := map[string]spec.Model{}
	for _, p := range loadPresets(t, ctx, "models") {
		var m spec.Model
		if err := load.PresetDefaults(p.value, d).Unify(d).Decode(&m); err != nil {
			t.Fatalf("%s: decode: %v", p.name, err)
		}
		out[p.name] = m
	}
	return out
}

// TestModelShapes checks invariants every published shape satisfies.
func TestModelShapes(t *testing.T) {
	for name, m := range decodeModels(t) {
		if m.FFNHidden == nil {
			t.Errorf("%s: ffn_hidden is not spelt out", name)
		}
		if m.MaxPositionEmbeddings == nil {
			t.Errorf("%s: max_position_embeddings is not spelt out", name)
		}
		if m.QueryGroups != nil && m.Heads%*m.QueryGroups != 0 {
			t.Errorf("%s: heads %d not a multiple of query groups %d", name, m.Heads, *m.QueryGroups)
		}
		if m.KVChannels == nil && m.Hidden%m.Heads != 0 {
			t.Errorf("%s: hidden %d not divisible by heads %d and kv_channels unset", name, m.Hidden, m.Heads)
		}
		if m.MLA != nil && m.QueryGroups != nil {
			t.Errorf("%s: MLA and GQA are exclusive in Megatron", name)
		}
		if mo := m.MoE; mo != nil {
			if mo.FFNHidden == nil {
				t.Errorf("%s: moe.ffn_hidden is not spelt out", name)
			}
			if mo.TopK > mo.Experts {
				t.Errorf("%s: topk %d > experts %d", name, mo.TopK, mo.Experts)
			}
			if mo.ExpertBias && mo.ScoreFunction != "sigmoid" {
				t.Errorf("%s: expert bias needs sigmoid scores", name)
			}
			// A MoE model with linear biases limits plans to etp 1
			// (Megatron: bias in MoE only with expert tensor
			// parallelism 1); only a model published with them may.
			if m.Bias && name != "gpt_oss_120b" && name != "gpt_oss_20b" {
				t.Errorf("%s: MoE preset with linear biases cannot use etp > 1", name)
			}
		}
		if m.Name == "model" {
			t.Errorf("%s: name left at the schema default", name)
		}
	}
}

// TestParameterCounts recomputes each model's parameter count from its shape
// and compares it with the count its authors publish. A wrong layer count,
// width, head layout, vocabulary or tying shows up here.
func TestParameterCounts(t *testing.T) {
	published := []struct {
		preset        string
		total, active float64 // active = 0 for dense models
		source        string
		inputEmbed    bool // the published active count includes the input embedding table
		// tol is the relative tolerance of a count published with fewer
		// significant figures (0: 1% of the total, 2.5% of the active).
		tol float64
	}{
		{"gpt3_175b", 175.0e9, 0, "Brown et al. 2020, Table 2.1: 175.0B", false, 0},
		{"llama2_7b", 6.74e9, 0, "meta-llama/Llama-2-7b-hf model page: 6.74B params", false, 0},
		{"llama2_70b", 69.0e9, 0, "meta-llama/Llama-2-70b-hf model page: 69B params", false, 0},
		{"llama3_8b", 8.03e9, 0, "meta-llama/Llama-3.1-8B model page: 8.03B params", false, 0},
		{"llama3_70b", 70.6e9, 0, "meta-llama/Llama-3.1-70B model page: 70.6B params", false, 0},
		{"llama3_405b", 406e9, 0, "meta-llama/Llama-3.1-405B model page: 406B params", false, 0},
		{"mixtral_8x7b", 46.7e9, 12.9e9, "Mistral AI, \"Mixtral of experts\" announcement: 46.7B total, 12.9B per token", false, 0},
		{"mixtral_8x22b", 141e9, 39e9, "Mistral AI, Mixtral 8x22B announcement: 141B total, 39B active", false, 0},
		{"qwen2_5_72b", 72.7e9, 0, "Qwen/Qwen2.5-72B model card: 72.7B", false, 0},
		{"qwen3_8b", 8.2e9, 0, "Qwen/Qwen3-8B model card: 8.2B parameters", false, 0},
		{"qwen3_32b", 32.8e9, 0, "Qwen/Qwen3-32B model card: 32.8B parameters", false, 0},
		{"qwen3_30b_a3b", 30.5e9, 3.3e9, "Qwen/Qwen3-30B-A3B model card: 30.5B in total, 3.3B activated (29.9B non-embedding: embeddings counted)", true, 0},
		{"qwen3_235b_a22b", 235e9, 22e9, "Qwen/Qwen3-235B-A22B model card: 235B in total, 22B activated (234B non-embedding: embeddings counted)", true, 0},
		{"deepseek_v3", 671e9, 36.7e9, "DeepSeek-V3 README: 671B main model, 36.7B activated incl. the 0.9B output head", false, 0},
		{"nemotron4_15b", 15.7e9, 0, "arXiv:2402.16819 Table 1: 3.2B embedding + 12.5B non-embedding parameters", false, 0},
		{"nemotron4_340b", 341.0e9, 0, "arXiv:2406.11704 Table 1: 9.4B embedding + 331.6B non-embedding parameters", false, 0},
		{"gpt_oss_120b", 116.83e9, 5.13e9, "gpt-oss model card (arXiv:2508.10925) Table 1: 116.83B total, 5.13B active (the unembedding counted, the embedding not)", false, 0},
		{"gpt_oss_20b", 20.91e9, 3.61e9, "gpt-oss model card (arXiv:2508.10925) Table 1: 20.91B total, 3.61B active (the unembedding counted, the embedding not)", false, 0},
		{"kimi_k2", 1e12, 32e9, "MoonshotAI/Kimi-K2 README, Model Summary: 1T total, 32B activated (one and two significant figures: within 5%)", false, 0.05},
	}
	models := decodeModels(t)
	if len(published) != len(models) {
		t.Errorf("%d presets, %d published counts: add the new preset's count", len(models), len(published))
	}
	for _, p := range published {
		m, ok := models[p.preset]
		if !ok {
			t.Errorf("no preset %s", p.preset)
			continue
		}
		total, active := paramCount(m)
		t.Logf("%s: %.2fB parameters, %.2fB active", p.preset, total/1e9, active/1e9)
		tolTotal, tolActive := 0.01, 0.025
		if p.tol > 0 {
			tolTotal, tolActive = p.tol, p.tol
		}
		if rel := math.Abs(total-p.total) / p.total; rel > tolTotal {
			t.Errorf("%s: %.4gB parameters from the shape, published %.4gB (%s): off by %.1f%%",
				p.preset, total/1e9, p.total/1e9, p.source, 100*rel)
		}
		if p.inputEmbed {
			active += float64(m.Vocab) * float64(m.Hidden)
		}
		if p.active > 0 {
			if rel := math.Abs(active-p.active) / p.active; rel > tolActive {
				t.Errorf("%s: %.4gB active parameters from the shape, published %.4gB (%s): off by %.1f%%",
					p.preset, active/1e9, p.active/1e9, p.source, 100*rel)
			}
		}
	}
}

// TestParameterCountExact pins the formula on a shape whose count is known to
// the parameter: Llama-2-7b-hf holds 6,738,415,616 parameters.
func TestParameterCountExact(t *testing.T) {
	if total, _ := paramCount(decodeModels(t)["llama2_7b"]); total != 6738415616 {
		t.Errorf("llama2_7b: %d parameters, want 6738415616", int64(total))
	}
}

// paramCount counts the parameters of the decoder stack, the embeddings and
// the final norm (MTP layers excluded, as the published counts exclude them).
// active counts what one token passes through: routed experts only topk of
// them, and no input embedding table.
func paramCount(m spec.Model) (total, active float64) {
	h := float64(m.Hidden)
	a := float64(m.Heads)
	g := a
	if m.QueryGroups != nil {
		g = float64(*m.QueryGroups)
	}
	kv := h / a
	if m.KVChannels != nil {
		kv = float64(*m.KVChannels)
	}
	norm := h
	if m.Normalization == "layernorm" {
		norm = 2 * h // weight and bias
	}
	var attn float64
	if mla := m.MLA; mla != nil {
		qk := float64(mla.QKHeadDim + mla.QKPosEmbHeadDim)
		if mla.QLoraRank != nil {
			r := float64(*mla.QLoraRank)
			attn += h*r + r*a*qk
			if m.QKLayernorm {
				attn += r
			}
		} else {
			attn += h * a * qk
		}
		r := float64(mla.KVLoraRank)
		attn += h*(r+float64(mla.QKPosEmbHeadDim)) + r*a*float64(mla.QKHeadDim+mla.VHeadDim)
		if m.QKLayernorm {
			attn += r
		}
		attn += a * float64(mla.VHeadDim) * h
	} else {
		qkv := (a + 2*g) * kv
		attn = h*qkv + a*kv*h
		if m.Bias || m.QKVBias {
			attn += qkv
		}
		if m.Bias {
			attn += h
		}
	}
	mlp := func(ffn float64) float64 {
		if m.GatedMLP() {
			p := 3 * h * ffn
			if m.Bias {
				p += 2*ffn + h
			}
			return p
		}
		p := 2 * h * ffn
		if m.Bias {
			p += ffn + h
		}
		return p
	}
	ffn := float64(4 * m.Hidden)
	if m.FFNHidden != nil {
		ffn = float64(*m.FFNHidden)
	}
	for i := 0; i < m.Layers; i++ {
		layer := attn + 2*norm
		layerActive := layer
		moeLayer := m.MoE != nil && i >= m.MoE.DenseLayers && i%m.MoE.LayerFreq == 0
		if !moeLayer {
			layer += mlp(ffn)
			layerActive += mlp(ffn)
		} else {
			mo := m.MoE
			eff := ffn
			if mo.FFNHidden != nil {
				eff = float64(*mo.FFNHidden)
			}
			shared := 0.0
			if mo.SharedFFNHidden > 0 {
				shared = mlp(float64(mo.SharedFFNHidden))
			}
			router := h * float64(mo.Experts)
			layer += router + shared + float64(mo.Experts)*mlp(eff)
			layerActive += router + shared + float64(mo.TopK)*mlp(eff)
		}
		total += layer
		active += layerActive
	}
	embed := float64(m.Vocab) * h
	total += embed + norm // input embedding, final norm
	active += norm
	if !m.TieEmbeddings {
		total += embed
		active += embed // output layer
	} else {
		active += embed // the tied table is the output layer too
	}
	if m.PositionEmbedding == "learned_absolute" && m.MaxPositionEmbeddings != nil {
		total += float64(*m.MaxPositionEmbeddings) * h
	}
	return total, active
}

// TestClusterPresets checks invariants of every cluster preset.
func TestClusterPresets(t *testing.T) {
	ctx := cuecontext.New()
	d := schemaDef(t, ctx, "#Cluster")
	for _, p := range loadPresets(t, ctx, "clusters") {
		var c spec.Cluster
		if err := load.PresetDefaults(p.value.FillPath(cue.ParsePath("nodes"), 1), d).Unify(d).Decode(&c); err != nil {
			t.Fatalf("%s: decode: %v", p.name, err)
		}
		c.FillFromDatasheet() // as the loader does
		// The preset's GPU name finds a datasheet whose bf16 peak is the
		// one the preset file writes (two sources: the preset's and the
		// table's), and a cluster written inline with only the contract's
		// fields (the GPU's short name, memory and bf16 peak, no NVLink
		// domain) finds the same datasheet and the NVLink domain the
		// preset file writes.
		if ds, ok := spec.LookupGPU(c.GPU.Name, c.GPU.MemoryGiB); !ok || ds.BF16 != c.GPU.BF16TFLOPs {
			t.Errorf("%s: GPU %q has no datasheet of its bf16 peak %v (found %v: %+v)", p.name, c.GPU.Name, c.GPU.BF16TFLOPs, ok, ds)
		}
		short, _, _ := strings.Cut(c.GPU.Name, "-")
		inline := ctx.CompileString(fmt.Sprintf("{nodes: 1, gpus_per_node: %d, gpu: {name: %q, memory_gib: %v, bf16_tflops: %v}, nvlink_gbps: %v, network_gbps: %v}",
			c.GPUsPerNode, short, c.GPU.MemoryGiB, c.GPU.BF16TFLOPs, c.NVLinkGBps, c.NetworkGBps))
		var ic spec.Cluster
		if err := inline.Unify(d).Decode(&ic); err != nil {
			t.Fatalf("%s: inline: %v", p.name, err)
		}
		ic.FillFromDatasheet()
		ic.GPU.Name = c.GPU.Name
		if ic.GPU != c.GPU || ic.NVLinkDomain != c.NVLinkDomain {
			t.Errorf("%s: written inline as %q the cluster differs:\n inline %+v domain %d\n preset %+v domain %d", p.name, short, ic.GPU, ic.NVLinkDomain, c.GPU, c.NVLinkDomain)
		}
		if c.NVLinkDomain%c.GPUsPerNode != 0 {
			t.Errorf("%s: nvlink_domain %d is not whole nodes of %d GPUs", p.name, c.NVLinkDomain, c.GPUsPerNode)
		}
		switch c.GPU.ComputeCapability {
		case 8.0, 9.0, 10.0, 10.3: // A100, H100/H200, B200/GB200, B300/GB300 (CUDA sm_103)
		default:
			t.Errorf("%s: compute capability %v is none of 8.0, 9.0, 10.0, 10.3", p.name, c.GPU.ComputeCapability)
		}
		if c.NetworkGBps >= c.NVLinkGBps {
			t.Errorf("%s: network %v GB/s not below NVLink %v GB/s", p.name, c.NetworkGBps, c.NVLinkGBps)
		}
		if c.CPUsPerNode != nil && *c.CPUsPerNode < c.GPUsPerNode {
			t.Errorf("%s: fewer CPUs (%d) than GPUs (%d) per node", p.name, *c.CPUsPerNode, c.GPUsPerNode)
		}
		for k := range c.Env {
			if !strings.HasPrefix(k, "NCCL_") {
				t.Errorf("%s: env %s is not an NCCL setting", p.name, k)
			}
		}
		// A site may replace the NCCL settings: they are defaults.
		over := p.value.FillPath(cue.ParsePath("nodes"), 1).
			FillPath(cue.ParsePath("env.NCCL_SOCKET_IFNAME"), "=ib0")
		over = load.PresetDefaults(over, d).Unify(d)
		if err := over.Validate(cue.Concrete(true)); err != nil {
			t.Errorf("%s: env is not overridable: %s", p.name, errors.Details(err, nil))
		}
	}
}

// TestEveryFieldIsADefault: a preset is a starting point (issue 13 §4). Every
// field of every model and cluster preset is overridden, one at a time, with
// another value of its kind; the preset must take it without a conflict.
func TestEveryFieldIsADefault(t *testing.T) {
	ctx := cuecontext.New()
	for dir := range packages {
		for _, p := range loadPresets(t, ctx, dir) {
			var walk func(v cue.Value, path []cue.Selector)
			walk = func(v cue.Value, path []cue.Selector) {
				it, err := v.Fields()
				if err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				for it.Next() {
					sel := append(slices.Clone(path), it.Selector())
					f := it.Value()
					if f.IncompleteKind() == cue.StructKind {
						walk(f, sel)
						continue
					}
					d, ok := f.Default()
					if !ok {
						t.Errorf("%s: %s.%s has no default", p.file, p.name, cue.MakePath(sel...))
						continue
					}
					var other any
					switch d.Kind() {
					case cue.StringKind:
						s, _ := d.String()
						other = s + "-custom"
					case cue.BoolKind:
						b, _ := d.Bool()
						other = !b
					case cue.IntKind:
						i, _ := d.Int64()
						other = i + 1
					case cue.FloatKind, cue.NumberKind:
						x, _ := d.Float64()
						other = x + 0.5
					case cue.ListKind:
						var l []int
						if err := d.Decode(&l); err != nil {
							t.Errorf("%s: %s.%s: %v", p.file, p.name, cue.MakePath(sel...), err)
							continue
						}
						other = append(slices.Clone(l), 0)[1:]
					default:
						t.Errorf("%s: %s.%s: unexpected kind %v", p.file, p.name, cue.MakePath(sel...), d.Kind())
						continue
					}
					u := p.value.FillPath(cue.MakePath(sel...), other)
					got := u.LookupPath(cue.MakePath(sel...))
					if err := got.Validate(cue.Concrete(true)); err != nil {
						t.Errorf("%s: %s.%s cannot be overridden with %v: %v", p.file, p.name, cue.MakePath(sel...), other, err)
					}
				}
			}
			walk(p.value, nil)
		}
	}
}

// TestREADMEListsThePresets keeps the README's list of presets equal to the
// embedded ones.
func TestREADMEListsThePresets(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- presets:begin -->")
	list, _, ok2 := strings.Cut(rest, "<!-- presets:end -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no presets:begin/end block")
	}
	listed := map[string]bool{}
	for _, f := range strings.Split(list, "`") {
		if f != "" && !strings.ContainsAny(f, " ,.:\n") {
			listed[f] = true
		}
	}
	ctx := cuecontext.New()
	for dir := range packages {
		for _, p := range loadPresets(t, ctx, dir) {
			if !listed[p.name] {
				t.Errorf("README.md does not list the %s preset %s", dir, p.name)
			}
			delete(listed, p.name)
		}
	}
	for name := range listed {
		t.Errorf("README.md lists %s, which is no preset", name)
	}
}
