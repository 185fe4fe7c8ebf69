package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// corpusCase is one configuration of testdata/corpus: overrides of the base
// spec, the verdict Megatron-Core gives it (derived by hand from the rules in
// docs/rules.md and Megatron's source, never from parc's own
// output), and the exact set of codes parc must report.
type corpusCase struct {
	Name  string         `json:"name"`
	Rules []string       `json:"rules,omitempty"` // Megatron rule ids the case exercises
	Note  string         `json:"note,omitempty"`
	Spec  map[string]any `json:"spec"`
	Valid bool           `json:"valid"`
	Codes []string       `json:"codes"`
}

func loadCorpus(t *testing.T) map[string][]corpusCase {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	out := map[string][]corpusCase{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cases []corpusCase
		if err := json.Unmarshal(data, &cases); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = cases
	}
	return out
}

func TestCorpus(t *testing.T) {
	names := map[string]bool{}
	for file, cases := range loadCorpus(t) {
		for _, tc := range cases {
			name := strings.TrimSuffix(file, ".json") + "/" + tc.Name
			if names[name] {
				t.Errorf("duplicate corpus case %s", name)
			}
			names[name] = true
			t.Run(name, func(t *testing.T) {
				for _, code := range tc.Codes {
					if _, ok := Lookup(code); !ok {
						t.Fatalf("corpus names unknown code %q", code)
					}
				}
				l := runSpec(specFrom(t, tc.Spec))
				if got := !l.HasErrors(); got != tc.Valid {
					t.Errorf("verdict: parc says valid=%v, Megatron-Core says valid=%v\n%v", got, tc.Valid, l)
				}
				want := slices.Clone(tc.Codes)
				slices.Sort(want)
				if got := codesOf(l); !slices.Equal(got, want) {
					t.Errorf("codes: got %v, want %v\n%v", got, want, l)
				}
			})
		}
	}
}

// TestCorpusCoversEveryCode: every code Run can emit is exercised by at least
// one corpus case (the layout's node codes are covered by TestTopology, the
// NVLink-domain codes by TestDomainRule).
func TestCorpusCoversEveryCode(t *testing.T) {
	seen := map[string]bool{}
	for _, cases := range loadCorpus(t) {
		for _, tc := range cases {
			for _, c := range tc.Codes {
				seen[c] = true
			}
		}
	}
	topology := []string{"tp-crosses-nvlink", "etp-crosses-nvlink", "cp-crosses-node", "ep-crosses-node", "value-range"}
	for _, c := range Codes {
		if !seen[c.Code] && !slices.Contains(topology, c.Code) {
			t.Errorf("no corpus case reports %s", c.Code)
		}
	}
}
