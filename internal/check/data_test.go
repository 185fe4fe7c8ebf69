package check

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDataSplit: data.split as Megatron reads it (parse_and_normalize_split,
// d98e8a64): re.findall(r"[.0-9]+"), float() of each, at most 3 weights,
// divided by their sum. Python's own float() decides what a number is when
// python3 is installed. Before this rule parc passed every split through,
// and a split Megatron cannot read failed at dataset build time.
func TestDataSplit(t *testing.T) {
	for _, tc := range []struct {
		split string
		ok    bool
	}{
		{"969,30,1", true}, {"99,1", true}, {"1", true}, {"0.5, 0.25, 0.25", true}, {"1e3,1", true}, {"98/1/1", true},
		{"1,2,3,4", false}, {"1.2.3,1", false}, {"0,0,0", false}, {"", false}, {"abc", false}, {".,1", false},
	} {
		s := specFrom(t, parse(t, `{"data": {"mock": false, "paths": ["/data/x"], "split": "`+tc.split+`"}}`))
		var got []string
		for _, d := range runSpec(s) {
			if d.Code == "data-split" {
				got = append(got, d.Message+" | "+d.Hint)
			}
		}
		if tc.ok != (len(got) == 0) {
			t.Errorf("split %q: data-split diagnostics %q, want ok=%v", tc.split, got, tc.ok)
		}
		for _, g := range got {
			if !strings.Contains(g, `set data.split: "969,30,1"`) {
				t.Errorf("split %q: hint offers no valid split: %s", tc.split, g)
			}
		}
		if py, err := exec.LookPath("python3"); err == nil {
			// The outside truth for each weight: Python's float().
			for _, n := range splitNumberRE.FindAllString(tc.split, -1) {
				err := exec.Command(py, "-c", "import sys; float(sys.argv[1])", n).Run()
				if bad := err != nil; bad && tc.ok {
					t.Errorf("split %q: Python rejects %q, the case says ok", tc.split, n)
				}
			}
		}
	}
	// With mock data Megatron takes no --split: nothing to check.
	s := specFrom(t, parse(t, `{"data": {"mock": true, "split": "1,2,3,4"}}`))
	for _, d := range runSpec(s) {
		if d.Code == "data-split" {
			t.Errorf("mock data: %v", d)
		}
	}
}
