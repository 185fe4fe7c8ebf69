package load

import (
	"fmt"
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
