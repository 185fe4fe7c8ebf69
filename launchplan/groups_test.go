package launchplan

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holds reports whether the group at family[index] of g contains rank.
func holds(g Groups, at where, rank int) bool {
	fam, ok := g[at.family]
	if !ok || at.index >= len(fam) {
		return false
	}
	for _, r := range fam[at.index] {
		if r == rank {
			return true
		}
	}
	return false
}

// The streaming summary of the JSON equals the summary of the decoded map.
func TestGroupSummaryMatchesDecoded(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for iter := 0; iter < 300; iter++ {
		g := Groups{}
		for f := range rng.Intn(5) {
			var fam [][]int
			for range rng.Intn(4) {
				var grp []int
				for range rng.Intn(5) {
					grp = append(grp, rng.Intn(200)-20)
				}
				fam = append(fam, grp)
			}
			g[fmt.Sprintf("f\"%d", f)] = fam
		}
		data, err := json.MarshalIndent(g, "", " ")
		require.NoError(t, err)
		var got groupSummary
		require.NoError(t, json.Unmarshal(data, &got), "%s", data)
		want := summarize(g)
		assert.Equal(t, want.groups, got.groups)
		assert.Equal(t, want.families, got.families)
		assert.Equal(t, want.hasAnyMember, got.hasAnyMember)
		if want.hasAnyMember {
			assert.Equal(t, want.min, got.min)
			assert.Equal(t, want.max, got.max)
			assert.True(t, holds(g, got.minAt, got.min), "%s holds %d", got.minAt, got.min)
			assert.True(t, holds(g, got.maxAt, got.max), "%s holds %d", got.maxAt, got.max)
		}
	}
}

func TestGroupSummaryShape(t *testing.T) {
	for _, bad := range []string{`[]`, `{"tp": [1, 2]}`, `{"tp": [[1.5]]}`, `{"tp": [[1e3]]}`, `{"tp": {"a": 1}}`,
		`{"tp": [["1"]]}`, `{"tp": [[3000000000]]}`, `3`} {
		var s groupSummary
		assert.Error(t, json.Unmarshal([]byte(bad), &s), bad)
	}
	for _, good := range []string{`{}`, `null`, `{"tp": []}`, `{"tp": [[]]}`, `{"tp": null}`, `{"tp": [null, [0]]}`} {
		var s groupSummary
		assert.NoError(t, json.Unmarshal([]byte(good), &s), good)
	}
}

// FuzzGroupSummary: on any valid JSON, the streaming summary and
// encoding/json agree on whether it is a groups object and on its extremes.
func FuzzGroupSummary(f *testing.F) {
	f.Add([]byte(`{"tp": [[0, 1], [2, 3]], "pp": [[0, 2], [1, 3]]}`))
	f.Add([]byte(`{"tp": [null, [-1]], "x": null}`))
	f.Add([]byte(`{"a\u0062": [[1.0]]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var m map[string][][]int32 // int32: the scanner's range
		stdErr := json.Unmarshal(data, &m)
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(data, &raw)
		var s groupSummary
		err := json.Unmarshal(data, &s)
		if (stdErr == nil) != (err == nil) {
			t.Fatalf("encoding/json: %v, summary: %v", stdErr, err)
		}
		if err != nil || s.families != len(raw) { // duplicate keys: the map keeps the last
			return
		}
		g := Groups{}
		for k, fam := range m {
			for _, grp := range fam {
				var ints []int
				for _, r := range grp {
					ints = append(ints, int(r))
				}
				g[k] = append(g[k], ints)
			}
			if fam != nil && g[k] == nil {
				g[k] = [][]int{}
			}
		}
		want := summarize(g)
		if want.groups != s.groups || want.hasAnyMember != s.hasAnyMember ||
			(want.hasAnyMember && (want.min != s.min || want.max != s.max)) {
			t.Fatalf("summary %+v, decoded %+v", s, want)
		}
	})
}
