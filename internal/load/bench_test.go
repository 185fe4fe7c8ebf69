package load

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manyFields is goodCUE followed by n top-level fields the schema does not
// have (each an unknown-field error): the worst case for the walks over the
// user's fields.
func manyFields(n int) []byte {
	var b strings.Builder
	b.WriteString(goodCUE)
	for i := range n {
		fmt.Fprintf(&b, "unknown_field_%d: %d\n", i, i)
	}
	return []byte(b.String())
}

// BenchmarkLoadManyFields loads and decodes specs with 1k, 10k and 30k
// unknown top-level fields. Load time must grow linearly with the number of
// fields (issue 12 item 5: it was quadratic, ≈10 s at 30k).
//
//	go test ./internal/load -run XXX -bench LoadManyFields -benchtime 3x
func BenchmarkLoadManyFields(b *testing.B) {
	for _, n := range []int{1000, 10000, 30000} {
		data := manyFields(n)
		b.Run(fmt.Sprintf("fields=%d", n), func(b *testing.B) {
			for range b.N {
				l := diagsFor(b, Source{Path: "/tmp/bench/plan.cue", Data: data})
				if len(l) != n {
					b.Fatalf("%d diagnostics, want %d", len(l), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/field")
		})
	}
}

// TestWideStructsStayLinear: thousands of unknown fields are each reported
// at their own line, with the rest of the spec still checked, and the text
// CUE evaluates no longer holds them (CUE's struct building is quadratic in
// a struct's width); an allowed struct wider than MaxStructFields is refused
// before CUE sees it.
func TestWideStructsStayLinear(t *testing.T) {
	n := 5000
	src := strings.Replace(string(manyFields(n)), "nodes: 1", "nodes: 0", 1)
	res := &Result{Display: map[string]string{"/x/plan.cue": "plan.cue"}}
	res.Schema = mustSchema(t)
	out, pre, ok := res.dropUnknown("/x/plan.cue", []byte(src))
	require.True(t, ok)
	require.Len(t, pre, n)
	assert.Equal(t, len(src), len(out), "blanking keeps every offset")
	assert.NotContains(t, string(out), "unknown_field_")
	assert.Equal(t, strings.Count(src, "\n"), strings.Count(string(out), "\n"))

	l := diagsFor(t, Source{Path: "/x/plan.cue", Data: []byte(src)})
	require.Len(t, l, n+1, "every unknown field and the out-of-range nodes")
	lines := strings.Count(goodCUE, "\n")
	for i, d := range l[:n] {
		if d.Code != "unknown-field" || d.Line != lines+1+i || d.Column != 1 || d.Path != fmt.Sprintf("unknown_field_%d", i) {
			t.Fatalf("diagnostic %d: %v", i, d)
		}
	}
	assert.Equal(t, "out-of-range", l[n].Code, "%v", l[n])
	assert.Equal(t, "cluster.nodes", l[n].Path)

	// Nested: the same inside model {...}.
	var b strings.Builder
	b.WriteString(strings.Replace(goodCUE, "model: {", "model: {\n", 1))
	nested := strings.Replace(b.String(), "model: {\n", "model: {\n"+strings.Repeat("zz: 1, ", 0)+nestedUnknown(200), 1)
	l = diagsFor(t, Source{Path: "/x/plan.cue", Data: []byte(nested)})
	require.Len(t, l, 200, "%v", l[:min(3, len(l))])
	assert.Equal(t, "model.nested_0", l[0].Path)
	assert.Equal(t, 3, l[0].Line)

	// An allowed map too wide for CUE.
	var env strings.Builder
	env.WriteString(goodCUE + "cluster: env: {\n")
	for i := range MaxStructFields + 1 {
		fmt.Fprintf(&env, "E_%d: \"x\"\n", i)
	}
	env.WriteString("}\n")
	l = diagsFor(t, Source{Path: "/x/plan.cue", Data: []byte(env.String())})
	require.Len(t, l, 1)
	assert.Equal(t, "too-many-fields", l[0].Code)
	assert.Equal(t, "cluster.env", l[0].Path)
	assert.Contains(t, l[0].Message, fmt.Sprint(MaxStructFields))
}

func nestedUnknown(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "nested_%d: %d, ", i, i)
	}
	return b.String() + "\n"
}

func mustSchema(t *testing.T) cue.Value {
	res, diags := Load(Source{Path: "/x/plan.cue", Data: []byte(goodCUE)})
	require.Empty(t, diags)
	return res.Schema
}

// manyHCL is goodHCL followed by n top-level attributes (u0 = 0) or, with
// blocks, n empty blocks (b0 {}) the schema does not have; short names keep
// 100k of them under MaxInputBytes.
func manyHCL(n int, blocks bool) []byte {
	var b strings.Builder
	b.WriteString(goodHCL)
	for i := range n {
		if blocks {
			fmt.Fprintf(&b, "b%d{\n}\n", i)
		} else {
			fmt.Fprintf(&b, "u%d=%d\n", i, i%10)
		}
	}
	return []byte(b.String())
}

// BenchmarkLoadManyHCLFields is BenchmarkLoadManyFields for the HCL front
// end (issue 12 item 5): 10k, 30k and 100k unknown top-level attributes, and
// as many empty blocks. ns/field must stay flat as n grows.
//
//	go test ./internal/load -run XXX -bench LoadManyHCLFields -benchtime 3x -count 5 | benchstat
func BenchmarkLoadManyHCLFields(b *testing.B) {
	for _, kind := range []string{"attributes", "blocks"} {
		for _, n := range []int{10000, 30000, 100000} {
			data := manyHCL(n, kind == "blocks")
			if len(data) > MaxInputBytes {
				b.Fatalf("%d %s are %d bytes, over MaxInputBytes", n, kind, len(data))
			}
			b.Run(fmt.Sprintf("%s=%d", kind, n), func(b *testing.B) {
				for range b.N {
					l := diagsFor(b, Source{Path: "/tmp/bench/plan.hcl", Data: data})
					if len(l) != n {
						b.Fatalf("%d diagnostics, want %d: %v", len(l), n, l[:min(3, len(l))])
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/field")
			})
		}
	}
}

// TestHCLWideStaysLinear is TestWideStructsStayLinear for HCL: a batch of
// unknown attributes and blocks is reported by parc at each one's line and
// left out of what CUE evaluates, the rest of the spec is still checked,
// and an allowed object wider than MaxStructFields is refused (issue 12
// item 5; before, 10,000 unknown attributes took ≈4 s, quadratic in n).
func TestHCLWideStaysLinear(t *testing.T) {
	n := 3000
	src := strings.Replace(string(manyHCL(n, false)), "nodes         = 1", "nodes         = 0", 1)
	src += "blk_a {\n}\n"
	l := diagsFor(t, Source{Path: "/x/plan.hcl", Data: []byte(src)})
	require.Len(t, l, n+2, "every unknown attribute, the unknown block and the out-of-range nodes: %v", l[:min(3, len(l))])
	lines := strings.Count(goodHCL, "\n")
	var unknown, ranges int
	for _, d := range l {
		switch d.Code {
		case "unknown-field":
			if d.Path != "blk_a" {
				i, err := strconv.Atoi(strings.TrimPrefix(d.Path, "u"))
				require.NoError(t, err, "%v", d)
				assert.Equal(t, lines+1+i, d.Line, "%v", d)
				assert.Equal(t, 1, d.Column, "%v", d)
			}
			unknown++
		case "out-of-range":
			assert.Equal(t, "cluster.nodes", d.Path)
			ranges++
		}
	}
	assert.Equal(t, n+1, unknown)
	assert.Equal(t, 1, ranges)

	// An allowed object too wide for CUE.
	var items strings.Builder
	for k := range MaxStructFields + 1 {
		fmt.Fprintf(&items, "E_%d = \"x\"\n", k)
	}
	wide := strings.Replace(goodHCL, `env = { NCCL_DEBUG = "WARN" }`, "env = {\n"+items.String()+"}", 1)
	l = diagsFor(t, Source{Path: "/x/plan.hcl", Data: []byte(wide)})
	require.Len(t, l, 1, "%v", l[:min(3, len(l))])
	assert.Equal(t, "too-many-fields", l[0].Code)
	assert.Equal(t, "cluster.env", l[0].Path)
}

// BenchmarkLoadPresets loads specs built from stdlib presets (every preset
// field a default the user may override), the common case of parc solve and
// parc vet.
//
//	go test ./internal/load -run XXX -bench LoadPresets
func BenchmarkLoadPresets(b *testing.B) {
	for _, name := range []string{"deepseek-v3-1k", "llama3-405b-16k"} {
		path := "../solve/testdata/acceptance/" + name + ".cue"
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if res, ds := Load(Source{Path: path}); res == nil || ds.HasErrors() {
					b.Fatal(ds)
				}
			}
		})
	}
}
