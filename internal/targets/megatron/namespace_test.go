package megatron

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseAgainstArgparse replays argument lists whose namespace Megatron's
// own argparse parser produced (testdata/namespaces.json, written by
// testdata/dump_namespaces.py from testdata/namespace_cases.json): Parse must
// give every dest the same value, or fail with argparse's first error.
func TestParseAgainstArgparse(t *testing.T) {
	data, err := os.ReadFile("testdata/namespaces.json")
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var cases []struct {
		Args  []string       `json:"args"`
		Set   map[string]any `json:"set"`
		Error string         `json:"error"`
	}
	require.NoError(t, dec.Decode(&cases))
	require.NotEmpty(t, cases)
	for _, c := range cases {
		ns, errs := Parse(c.Args)
		if c.Error != "" {
			require.NotEmpty(t, errs, "%v: argparse says %s", c.Args, c.Error)
			if strings.HasPrefix(c.Error, "crash: ") {
				continue // Megatron stops with a traceback; parc with its own message
			}
			_, want, _ := strings.Cut(c.Error, "error: ")
			require.Equal(t, want, errs[0].Message, "%v", c.Args)
			continue
		}
		require.Empty(t, errs, "%v", c.Args)
		for d, v := range ns.Values {
			if Equal(v, Defaults[d]) {
				_, listed := c.Set[d]
				require.False(t, listed, "%v: %s is %s in argparse", c.Args, d, c.Set[d])
				continue
			}
			want, ok := c.Set[d]
			require.True(t, ok, "%v: %s = %s, argparse keeps the default", c.Args, d, Repr(v))
			require.True(t, Equal(fromJSON(want), v), "%v: %s = %s, argparse %v", c.Args, d, Repr(v), want)
		}
		for d := range c.Set {
			_, ok := ns.Values[d]
			require.True(t, ok, "%v: argparse sets %s", c.Args, d)
		}
	}
}

func TestEvalPattern(t *testing.T) {
	l, err := EvalPattern("([0]*3+[1]*2)*2")
	require.NoError(t, err)
	require.Equal(t, "[0, 0, 0, 1, 1, 0, 0, 0, 1, 1]", Repr(l))
	_, err = EvalPattern("[0]*99999999999")
	require.Error(t, err)
	_, err = EvalPattern("__import__")
	require.Error(t, err)
}

// FuzzParse: no argument list makes Parse panic.
func FuzzParse(f *testing.F) {
	f.Add("--num-layers\x004\x00--moe-layer-freq\x00([0]*3+[1]*58)")
	f.Add("--cp-comm-type\x00p2p\x00a2a\x00--bf16=1\x00-1")
	f.Fuzz(func(t *testing.T, s string) {
		Parse(strings.Split(s, "\x00"))
	})
}
