package diag

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtent(t *testing.T) {
	cue := []byte("parallel: {tp: 16, pp: 2}\n" +
		"train: {\n\tglobal_batch: \"64\" // a string\n\tlr: 1e-5\n}\n" +
		"model: {name: \"a, {b\"}\n")
	for _, tc := range []struct {
		line, col, endLine, endCol int
	}{
		{1, 12, 1, 18}, // tp: 16 (stops at the comma)
		{1, 20, 1, 25}, // pp: 2 (stops at the closing brace)
		{1, 1, 1, 26},  // the whole parallel field
		{2, 1, 5, 2},   // a block over several lines
		{3, 2, 3, 20},  // a string value, the comment left out
		{3, 16, 3, 20}, // the string alone
		{6, 9, 6, 22},  // a comma and a brace inside a string do not end it
		{9, 1, 9, 1},   // no such line: an empty range
	} {
		l, c := Extent(cue, Pos{File: "plan.cue", Line: tc.line, Column: tc.col})
		assert.Equal(t, [2]int{tc.endLine, tc.endCol}, [2]int{l, c}, "%d:%d", tc.line, tc.col)
	}
	hcl := []byte("parallel {\n  tp = 16 # tensor\n}\n")
	l, c := Extent(hcl, Pos{File: "plan.hcl", Line: 2, Column: 3})
	assert.Equal(t, [2]int{2, 10}, [2]int{l, c}, "an HCL # comment is not part of the value")
}

func TestLine(t *testing.T) {
	src := []byte("a\r\nb\n\nc")
	for n, want := range map[int]string{1: "a", 2: "b", 3: "", 4: "c"} {
		got, ok := Line(src, n)
		assert.True(t, ok, n)
		assert.Equal(t, want, got, n)
	}
	for _, n := range []int{0, 5} {
		_, ok := Line(src, n)
		assert.False(t, ok, n)
	}
}

func TestReporterRelated(t *testing.T) {
	at := func(path string) Pos {
		switch path {
		case "parallel.tp":
			return Pos{File: "p.cue", Line: 3, Column: 2}
		case "model.heads", "model.hidden": // both from one preset
			return Pos{File: "p.cue", Line: 1, Column: 1}
		}
		return Pos{}
	}
	r := NewReporter(at)
	r.Errorf("parallel.tp", "tp-heads", "", "tp=%d", 3).
		Related("model.heads", "heads = %d", 64).
		Related("model.hidden", "hidden = %d", 4096).
		Related("parallel.tp", "itself").       // the diagnostic's own place: nothing
		Related("launch.env", "nowhere at all") // no position: nothing
	require.Len(t, r.List, 1)
	d := r.List[0]
	assert.Equal(t, Pos{File: "p.cue", Line: 3, Column: 2}, d.Pos)
	assert.Equal(t, []Related{{Pos: Pos{File: "p.cue", Line: 1, Column: 1}, Message: "heads = 64; hidden = 4096"}}, d.Related)
}

// The JSON keeps every field of the contract and adds the range and the
// related places: an empty list, and an empty range at the start, when
// nothing more is known.
func TestJSONExtension(t *testing.T) {
	d := Diagnostic{Severity: Warning, Code: "c", Message: "m", Path: "p", Pos: Pos{File: "f", Line: 2, Column: 3}}
	b, err := json.Marshal(d)
	require.NoError(t, err)
	assert.JSONEq(t, `{"severity":"warning","code":"c","message":"m","path":"p","file":"f","line":2,"column":3,
		"end_line":2,"end_column":3,"related":[]}`, string(b))
	d.EndLine, d.EndColumn = 2, 9
	d.Related = []Related{{Pos: Pos{File: "f", Line: 1, Column: 1}, Message: "here"}}
	b, err = json.Marshal(d)
	require.NoError(t, err)
	assert.JSONEq(t, `{"severity":"warning","code":"c","message":"m","path":"p","file":"f","line":2,"column":3,
		"end_line":2,"end_column":9,"related":[{"file":"f","line":1,"column":1,"message":"here"}]}`, string(b))
}
