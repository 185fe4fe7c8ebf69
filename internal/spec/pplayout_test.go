package spec

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParsePipelineLayoutMatchesMegatron compares the parser with what
// Megatron-LM's own PipelineParallelLayerLayout.parse_str_to_list made of the
// same strings (testdata/layouts.json, written by testdata/dump_layouts.py
// from Megatron-LM at d98e8a64): the same stages, or an error where Megatron
// raises one.
func TestParsePipelineLayoutMatchesMegatron(t *testing.T) {
	data, err := os.ReadFile("testdata/layouts.json")
	require.NoError(t, err)
	var cases []struct {
		Layout string   `json:"layout"`
		Stages []string `json:"stages"`
		Error  string   `json:"error"`
	}
	require.NoError(t, json.Unmarshal(data, &cases))
	require.NotEmpty(t, cases)
	for _, c := range cases {
		l, err := ParsePipelineLayout(c.Layout)
		if c.Error != "" {
			require.Error(t, err, "%q: Megatron says %s", c.Layout, c.Error)
			continue
		}
		require.NoError(t, err, c.Layout)
		var got []string
		for _, s := range l.Stages {
			got = append(got, s.Layers)
		}
		require.Equal(t, c.Stages, got, c.Layout)
	}
}

func TestParsePipelineLayoutErrors(t *testing.T) {
	for _, c := range []struct {
		layout string
		offset int
	}{
		{"Et|tX|tL", 4},
		{"Et|(tt|)*3,q", 11},
		{"(t*99999)*99999", 1},
	} {
		_, err := ParsePipelineLayout(c.layout)
		var le *LayoutError
		require.ErrorAs(t, err, &le, c.layout)
		require.Equal(t, c.offset, le.Offset, "%s: %v", c.layout, err)
	}
	// Megatron's regex leaves unmatched parentheses, which are then invalid
	// layer characters.
	_, err := ParsePipelineLayout(strings.Repeat("(", 1000) + "t)*2")
	require.Error(t, err)
}

func TestLayoutStageLayers(t *testing.T) {
	layout := "Et*2|t*3|t|t*2L"
	p := Parallel{PP: 2, VPP: 2, Layout: &layout}
	got := StageLayers(8, p)
	// Stages in model order: rank 0 v0 (2), rank 1 v0 (3), rank 0 v1 (1), rank 1 v1 (2).
	require.Equal(t, [][]LayerRange{
		{{First: 0, Count: 2}, {First: 5, Count: 1}},
		{{First: 2, Count: 3}, {First: 6, Count: 2}},
	}, got)
	require.Nil(t, StageLayers(9, p), "decoder count differs from the model's")
	p.VPP = 1
	require.Nil(t, StageLayers(8, p), "vpp differs from the layout's")
}

// TestCompactLayoutRoundTrip: a layout written out layer by layer and its
// compact form (Megatron's repetitions) parse to the same stages.
func TestCompactLayoutRoundTrip(t *testing.T) {
	for _, l := range []string{"Etttt|tttt|tttt|ttttL", "Et|tt|tt|tmL", "E|tttttttt|L", "Ettt|tt|tt|tttmmL", "EtL"} {
		pl, err := ParsePipelineLayout(l)
		require.NoError(t, err)
		c := pl.Compact()
		back, err := ParsePipelineLayout(c)
		require.NoError(t, err, c)
		assert.Equal(t, pl.Stages, back.Stages, "%s -> %s", l, c)
		assert.LessOrEqual(t, len(c), len(l), c)
	}
}
