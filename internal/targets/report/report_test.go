package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"testing/fstest"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/estimate"
	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/spec"
	"parc.dev/parc/internal/targets/template"
)

func intp(i int) *int { return &i }

// llamaPlan is Llama-3-70B on 16 nodes of 8 H100: tp=8, pp=4, vpp=5, dp=4.
func llamaPlan(t *testing.T) *plan.Plan {
	t.Helper()
	s := &spec.Spec{
		Model: spec.Model{
			Name: "llama3-70b", Layers: 80, Hidden: 8192, Heads: 64, Vocab: 128256, MakeVocabDivisibleBy: 128,
			QueryGroups: intp(8), FFNHidden: intp(28672), Activation: "swiglu", Normalization: "rmsnorm",
			NormEpsilon: 1e-5, PositionEmbedding: "rope", RotaryBase: 500000, RotaryPercent: 1,
		},
		Cluster: spec.Cluster{
			Name: "dgx-h100", Nodes: 16, GPUsPerNode: 8, NVLinkDomain: 8,
			GPU:        spec.GPU{Name: "H100", MemoryGiB: 80, BF16TFLOPs: 989, ComputeCapability: 9},
			NVLinkGBps: 450, NetworkGBps: 50,
		},
		Parallel: spec.Parallel{TP: 8, PP: 4, VPP: 5, CP: 1, EP: 1, Order: "tp-cp-ep-dp-pp", OverlapP2P: true, CPCommType: "p2p", DistributedOptimizerInstances: 1},
		Train: spec.Train{
			SeqLength: 8192, MicroBatch: 1, GlobalBatch: 128, Precision: "bf16", Recompute: "selective",
			RecomputeMethod: "uniform", DistributedOptimizer: true,
		},
	}
	return build(t, "examples/llama/plan.cue", s)
}

func build(t *testing.T, source string, s *spec.Spec) *plan.Plan {
	t.Helper()
	d := spec.Derive(s)
	l, ds := layout.Build(s, d)
	if l == nil {
		t.Fatalf("layout: %v", ds)
	}
	links := map[string]string{}
	for _, f := range l.Summaries {
		links[f.Name] = f.Link
	}
	e, _ := estimate.Run(s, d, links, diag.NoPos)
	return &plan.Plan{Source: source, Spec: *s, Derived: d, Layout: l, Estimate: e}
}

// tables checks every Markdown table has the same number of cells per row.
func tables(t *testing.T, md string) int {
	t.Helper()
	n, want := 0, -1
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			want = -1
			continue
		}
		cells := strings.Count(line, "|") - strings.Count(line, `\|`) // an escaped bar is text
		if want < 0 {
			want = cells
			n++
		} else if cells != want {
			t.Errorf("table row has %d bars, header %d: %s", cells, want, line)
		}
	}
	return n
}

func TestRenderReport(t *testing.T) {
	p := llamaPlan(t)
	warn := diag.List{{Severity: diag.Warning, Code: "pipeline-bubble", Path: "train.global_batch", Message: "the bubble is big", Hint: "more microbatches"}}
	md, err := Render(p, warn, template.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	e := p.Estimate
	for _, want := range []string{
		"# Training plan: llama3-70b on 16 × 8 H100",
		"from plan.cue.",
		"## Memory per GPU", "## Pipeline", "## Communication per training step", "## Compute and step time", "## Rank layout",
		"![pipeline schedule](pipeline.svg)", "![rank layout](layout.svg)",
		"**" + Bytes(e.Memory.PerGPUPeakBytes) + "**",
		"(p−1)/(v·m+p−1) = 3/163",
		"| tp | tp | 8 |", "| nvlink |", "| network |",
		Bytes(e.Memory.MegatronTheoreticalBytes),
		"pipeline-bubble (train.global_batch): the bubble is big — more microbatches",
		Count(e.Params.Total),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if n := tables(t, s); n < 6 {
		t.Errorf("%d tables, want at least 6", n)
	}
	again, _ := Render(llamaPlan(t), warn, template.Builtin())
	if !bytes.Equal(md, again) {
		t.Error("two renders differ")
	}
}

func TestFilesAndPictures(t *testing.T) {
	files, err := Files(llamaPlan(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{FileName, PipelineSVG, LayoutSVG} {
		if len(files[name]) == 0 {
			t.Errorf("no %s", name)
		}
	}
	for _, name := range []string{PipelineSVG, LayoutSVG} {
		dec := xml.NewDecoder(bytes.NewReader(files[name]))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
	if !strings.Contains(string(files[PipelineSVG]), "interleaved 1F1B") {
		t.Error("pipeline.svg is not the interleaved schedule")
	}
}

func TestTemplateOverride(t *testing.T) {
	set := template.New(fstest.MapFS{"report.md.tmpl": {Data: []byte("{{ .Title }} / {{ len .Comms }} axes / {{ .Plan.Spec.Parallel.TP }}\n")}}, "mine")
	md, err := Render(llamaPlan(t), nil, set)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(md); got != "llama3-70b on 16 × 8 H100 / 3 axes / 8\n" {
		t.Errorf("override rendered %q", got)
	}
	bad := template.New(fstest.MapFS{"report.md.tmpl": {Data: []byte("{{ .NoSuchField }}")}}, "mine")
	if _, err := Render(llamaPlan(t), nil, bad); err == nil || !strings.Contains(err.Error(), "mine/report.md.tmpl") {
		t.Errorf("missing field: %v", err)
	}
}

func TestPlanWithoutEstimate(t *testing.T) {
	p := llamaPlan(t)
	p.Estimate, p.Layout = nil, nil
	files, err := Files(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := string(files[FileName])
	if strings.Contains(s, "## Memory") || strings.Contains(s, "layout.svg") {
		t.Errorf("sections without data:\n%s", s)
	}
	if _, ok := files[LayoutSVG]; ok {
		t.Error("layout.svg without a layout")
	}
	if !strings.Contains(Explain(p), "llama3-70b") {
		t.Error("explain without estimate")
	}
}

func TestExplain(t *testing.T) {
	p := llamaPlan(t)
	out := Explain(p)
	e := p.Estimate
	for _, want := range []string{
		"Memory per GPU", "Pipeline", "Communication per step", "Compute and step time", "Rank layout",
		Bytes(e.Memory.PerGPUPeakBytes), Bytes(e.Comms["tp"].BytesPerStep), Bytes(e.Comms["dp"].BytesPerStep),
		"0 *", "node 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q", want)
		}
	}
	// rows of the memory table line up: all as long as its header
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "stage  layers") {
			for _, row := range lines[i+1 : i+5] {
				if len([]rune(row)) != len([]rune(l)) {
					t.Errorf("misaligned row\n%s\n%s", l, row)
				}
			}
		}
	}
	if out != Explain(llamaPlan(t)) {
		t.Error("explain is not deterministic")
	}
}

func TestFormats(t *testing.T) {
	for got, want := range map[string]string{
		Bytes(896 << 20):    "896.0 MiB",
		Bytes(80 << 30):     "80.00 GiB",
		Bytes(512):          "512 B",
		Count(70553706496):  "70.55 B",
		Count(12345):        "12,345",
		Thousands(-1234567): "-1,234,567",
		FLOPs(4.71e17):      "471.0 PFLOP",
		Seconds(0.0123):     "12.3 ms",
		Seconds(8.3112):     "8.31 s",
		Percent(3.0 / 11):   "27.3%",
		Rate(126164):        "126.2 k",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestHostileNames renders a plan whose names carry HTML, Markdown and line
// breaks: report.md keeps the same lines, headings and table shape as with
// plain names, and holds no raw HTML; explain holds no control character.
func TestHostileNames(t *testing.T) {
	plain, err := Render(llamaPlan(t), nil, template.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	p := llamaPlan(t)
	p.Source = "dir/x\n# injected\n<b>.cue"
	p.Spec.Model.Name = "</text><script>alert(1)</script>"
	p.Spec.Cluster.GPU.Name = "H100 | *bold*\r\n- item\x1b[31m"
	warn := diag.List{{Severity: diag.Warning, Code: "c", Path: "model.name", Message: "name <img src=x> is odd\n## heading"}}
	md, err := Render(p, warn, template.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	for _, bad := range []string{"<script", "</text>", "<img", "<b>", "\n# injected", "\n## heading", "\n- item", "\x1b", "\r"} {
		if strings.Contains(s, bad) {
			t.Errorf("report.md holds %q raw", bad)
		}
	}
	heads := func(s string) (h []string) {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "#") {
				h = append(h, strings.Fields(l)[0])
			}
		}
		return h
	}
	// Four more lines for the warnings section (blank, title, blank, item).
	if got, want := strings.Count(s, "\n"), strings.Count(string(plain), "\n")+4; got != want {
		t.Errorf("report.md has %d lines, want %d: a name added lines", got, want)
	}
	if got, want := len(heads(s)), len(heads(string(plain)))+1; got != want {
		t.Errorf("%d headings, want %d", got, want)
	}
	if got, want := tables(t, s), tables(t, string(plain)); got != want {
		t.Errorf("%d tables, want %d", got, want)
	}
	for _, r := range Explain(p) {
		if r < ' ' && r != '\n' || r == 0x7f || r == '\u2028' || r == '\u0085' {
			t.Fatalf("explain prints the control character %U", r)
		}
	}
}

// TestNoInfinityOrNaN: figures the schema would refuse (a spec built in Go)
// never print +Inf or NaN in report.md or explain.
func TestNoInfinityOrNaN(t *testing.T) {
	p := llamaPlan(t)
	p.Spec.Cluster.GPU.BF16TFLOPs = 1e-320
	p.Spec.Cluster.GPU.MemoryGiB = 1e-10
	p.Spec.Cluster.NetworkGBps = 1e-300
	p = build(t, "plan.cue", &p.Spec)
	md, err := Render(p, nil, template.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"report.md": string(md), "explain": Explain(p)} {
		if m := nonFinite.FindString(text); m != "" {
			i := strings.Index(text, m)
			t.Errorf("%s prints %q: …%s…", name, m, text[max(0, i-80):min(len(text), i+20)])
		}
	}
}

// The data-parallel line says how many collectives a reduction takes: several
// buckets of up to a size, one bucket holding the whole buffer (Megatron
// without overlap_grad_reduce, or ddp_num_buckets 1), or Megatron-FSDP's
// units.
func TestBucketsNote(t *testing.T) {
	for _, tc := range []struct {
		c    estimate.AxisComm
		want string
	}{
		{estimate.AxisComm{Buckets: 12, BucketParams: 134217728, Stage: 1}, " (12 buckets of up to 134.2 M parameters, stage 1)"},
		{estimate.AxisComm{Buckets: 1, BucketParams: 8030261248}, " (one bucket of 8.03 B parameters, stage 0)"},
		{estimate.AxisComm{Buckets: 34, Stage: 2}, " (34 collectives per pass, one per FSDP unit, stage 2)"},
	} {
		if got := bucketsNote(tc.c); got != tc.want {
			t.Errorf("bucketsNote(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
