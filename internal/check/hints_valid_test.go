package check

import (
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// hintValues are the hint texts that suggest values for a field: the field
// and the list of values as printed ("96 or 112", "1, 2, 4, …, 64").
var hintValues = []struct {
	re   *regexp.Regexp
	path string
}{
	{regexp.MustCompile(`nearest valid global_batch: ([0-9][0-9, or]*)`), "train.global_batch"},
	{regexp.MustCompile(`with the interleaved schedule: ([0-9][0-9, or]*)`), "train.global_batch"},
	{regexp.MustCompile(`nearest valid seq_length: ([0-9][0-9, or]*)`), "train.seq_length"},
	{regexp.MustCompile(`or ffn_hidden = ([0-9][0-9, or]*)`), "model.ffn_hidden"},
	{regexp.MustCompile(`valid tp here: ([0-9][0-9, …]*)`), "parallel.tp"},
	{regexp.MustCompile(`valid tp with pp=\d+, cp=\d+: ([0-9][0-9, …]*)`), "parallel.tp"},
	{regexp.MustCompile(`valid pp with tp=\d+, cp=\d+: ([0-9][0-9, …]*)`), "parallel.pp"},
	{regexp.MustCompile(`or cp in ([0-9][0-9, …]*)`), "parallel.cp"},
}

func numbers(list string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r < '0' || r > '9' }) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func errorKeys(l diag.List) map[string]bool {
	out := map[string]bool{}
	for _, d := range l {
		if d.Severity == diag.Error {
			out[d.Code+" "+d.Path] = true
		}
	}
	return out
}

// TestHintsSuggestValidValues is the property of issue 12 item 15: for
// random invalid specs, every value a hint suggests, applied to the spec and
// vetted again, makes that diagnostic go and brings no new error.
func TestHintsSuggestValidValues(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	pick := func(vs ...int) int { return vs[rng.Intn(len(vs))] }
	checked := map[string]int{}
	for i := 0; i < 400; i++ {
		over := map[string]any{
			"parallel": map[string]any{"tp": pick(1, 2, 3, 4, 8, 16), "pp": pick(1, 2, 3, 4), "vpp": pick(1, 1, 2, 4), "cp": pick(1, 1, 2, 3)},
			"train":    map[string]any{"global_batch": 1 + rng.Intn(600), "seq_length": pick(4096, 4097, 8192, 8193, 1000, 6000)},
			"model":    map[string]any{"ffn_hidden": pick(28672, 28671, 11008, 14336, 1000), "heads": pick(32, 30, 64, 48)},
		}
		s := specFrom(t, over)
		l := Run(s, spec.Derive(s), nil)
		before := errorKeys(l)
		for _, d := range l {
			if d.Severity != diag.Error {
				continue
			}
			for _, h := range hintValues {
				for _, m := range h.re.FindAllStringSubmatch(d.Hint, -1) {
					for _, v := range numbers(m[1]) {
						s2, ok := withInt(s, h.path, v)
						if !ok {
							t.Fatalf("cannot set %s", h.path)
						}
						after := errorKeys(Run(s2, spec.Derive(s2), nil))
						checked[d.Code]++
						if after[d.Code+" "+d.Path] {
							t.Errorf("spec %v: %s hint suggests %s=%d, which still fails %s\n\thint: %s", over, d.Code, h.path, v, d.Code, d.Hint)
						}
						for k := range after {
							if !before[k] {
								t.Errorf("spec %v: %s hint suggests %s=%d, which brings the new error %s\n\thint: %s", over, d.Code, h.path, v, k, d.Hint)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("suggested values verified, by code: %v", checked)
	for _, code := range []string{"global-batch", "tp-heads", "ffn-tp"} {
		if checked[code] == 0 {
			t.Errorf("no %s hint was exercised", code)
		}
	}
}
