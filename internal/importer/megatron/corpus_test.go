package megatron

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
	mg "parc.dev/parc/internal/targets/megatron"
)

// corpusHeader reads the "# key: value" lines at the top of a corpus file.
func corpusHeader(src string) map[string][]string {
	h := map[string][]string{}
	for line := range strings.Lines(src) {
		if !strings.HasPrefix(line, "#") {
			break
		}
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
		if ok {
			h[strings.TrimSpace(k)] = append(h[strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return h
}

// TestCorpusRoundTrip imports every real configuration of testdata/corpus
// (argument lists from public launch scripts and recipes; each file's
// header names its source and commit). Each one either
//
//   - imports, compiles, and the compiled arguments give Megatron's parser
//     (replayed from options.tsv/defaults.tsv, see megatron.Parse) the same
//     namespace as the input — every dest, up to the values Megatron derives
//     for dests the input leaves out (Compare); or
//   - is rejected (header "expect: rejected CODE") with the code parc
//     reports, for a reason the header shows Megatron also rejects.
func TestCorpusRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*.args")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 3)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".args"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			h := corpusHeader(string(b))
			require.NotEmpty(t, h["source"], "the header names the source")
			require.NotEmpty(t, h["commit"], "the header names the commit")
			o := Options{File: f, Cluster: first(h["cluster"])}
			if n := first(h["nodes"]); n != "" {
				o.Nodes = atoi(t, n)
			}
			res := Import(b, o)
			expect := first(h["expect"])
			if code, ok := strings.CutPrefix(expect, "rejected "); ok {
				require.Contains(t, res.Diags.Codes(), code, "%v", res.Diags)
				require.NotEmpty(t, h["megatron"], "the header quotes Megatron's verdict")
				return
			}
			require.Equal(t, "round-trip", expect)
			known := map[string]bool{}
			for _, k := range h["known-false-rejection"] {
				code, _, _ := strings.Cut(k, " ")
				known[code] = true
			}
			for _, d := range res.Diags {
				if d.Severity == diag.Error && known[d.Code] {
					t.Logf("known false rejection (issue 13): %s", d)
					continue
				}
				require.NotEqual(t, diag.Error, d.Severity, "%s\n%s", d, res.Spec)
			}
			require.NotNil(t, res.Compiled, "%s", res.Spec)
			in, errs := mg.Parse(res.Args)
			require.Empty(t, errs)
			out, errs := mg.Parse(res.Compiled)
			require.Empty(t, errs)
			diffs := Compare(in, out, res.World)
			require.Empty(t, diffs, "compiled: %q\nspec:\n%s", res.Compiled, res.Spec)
		})
	}
}

func first(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

func atoi(t *testing.T, s string) int {
	n, err := mg.PyInt(s)
	require.NoError(t, err)
	return int(n)
}
