package hostlist

import (
	"fmt"
	"math/rand"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Expected expansions written out by hand from Slurm's documented hostlist
// syntax (sbatch(1) "NODELIST", scontrol(1) "show hostnames").
var cases = []struct {
	expr string
	want []string
}{
	{"gpu-[001-004,010],login1", []string{"gpu-001", "gpu-002", "gpu-003", "gpu-004", "gpu-010", "login1"}},
	{"n1", []string{"n1"}},
	{"n[1-3]", []string{"n1", "n2", "n3"}},
	{"n[8-10]", []string{"n8", "n9", "n10"}},
	{"n[08-10]", []string{"n08", "n09", "n10"}},
	{"n[098-101]", []string{"n098", "n099", "n100", "n101"}},
	{"n[7]", []string{"n7"}},
	{"n[1-2],m[3]", []string{"n1", "n2", "m3"}},
	{"rack[1-2]-node[01-02]", []string{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"}},
	{"node-3.cluster.example,node-1.cluster.example", []string{"node-3.cluster.example", "node-1.cluster.example"}},
	{"n[1,1]", []string{"n1", "n1"}},
	{"a b,c", []string{"a", "b", "c"}},
	{"a,", []string{"a"}},
	{"[1-2]", []string{"1", "2"}},
	{"a[1-2]b[1-2]c[1-2]", []string{"a1b1c1", "a1b1c2", "a2b1c1", "a2b1c2", "a1b2c1", "a1b2c2", "a2b2c1", "a2b2c2"}},
	{"n[1-2]x[01-02]y[3]", []string{"n1x01y3", "n2x01y3", "n1x02y3", "n2x02y3"}},
	{"n[1-2]-[3-4]", []string{"n1-3", "n1-4", "n2-3", "n2-4"}},
	{"n[1-02]", []string{"n1", "n2"}},
	{"n1-3", []string{"n1-3"}},
}

func TestExpand(t *testing.T) {
	for _, c := range cases {
		got, err := Expand(c.expr)
		require.NoError(t, err, c.expr)
		assert.Equal(t, c.want, got, c.expr)
		first, err := First(c.expr)
		require.NoError(t, err, c.expr)
		assert.Equal(t, c.want[0], first, c.expr)
	}
}

func TestEmpty(t *testing.T) {
	for _, expr := range []string{"", ",", " , "} {
		hosts, err := Expand(expr)
		require.NoError(t, err)
		assert.Empty(t, hosts)
		_, err = First(expr)
		assert.ErrorContains(t, err, "names no host")
	}
}

func TestExpandErrors(t *testing.T) {
	for _, expr := range []string{
		"n[1-", "n]1", "n[]", "n[[1]]", "n[a]", "n[3-1]", "n[1--2]", "n[-2]", "n[1-]",
		"n[1,]", "n[ 1]", "gpu-a[01-02]-ib", "[1-2]x", "a[1]]", "n]1", "n[0-99999999999]", "n[1-99999999999999999999999]", "n[0-65536]",
		"a[0-1023]b[0-1023]c[0-1]",
	} {
		_, err := Expand(expr)
		assert.Error(t, err, "Expand(%q)", expr)
		_, err = First(expr)
		assert.Error(t, err, "First(%q)", expr)
	}
}

// TestExpandRandom builds compressed expressions from random prefixes and
// number ranges, with the expected names formatted independently by Sprintf.
func TestExpandRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 500; iter++ {
		var parts, want []string
		for range 1 + rng.Intn(3) {
			prefix := []string{"n", "gpu-", "dgx-a", "x1y"}[rng.Intn(4)]
			var ranges []string
			for range 1 + rng.Intn(3) {
				lo := rng.Intn(120)
				hi := lo + rng.Intn(15)
				width := len(fmt.Sprint(lo)) + rng.Intn(3)
				los := fmt.Sprintf("%0*d", width, lo)
				if lo == hi && rng.Intn(2) == 0 {
					ranges = append(ranges, los)
				} else {
					ranges = append(ranges, fmt.Sprintf("%s-%d", los, hi))
				}
				for v := lo; v <= hi; v++ {
					want = append(want, fmt.Sprintf("%s%0*d", prefix, width, v))
				}
			}
			parts = append(parts, prefix+"["+strings.Join(ranges, ",")+"]")
		}
		expr := strings.Join(parts, ",")
		got, err := Expand(expr)
		require.NoError(t, err, expr)
		require.Equal(t, want, got, expr)
	}
}

// TestAgainstScontrol compares with the real Slurm implementation when
// scontrol is installed (`scontrol show hostnames` works without a cluster).
func TestAgainstScontrol(t *testing.T) {
	if _, err := exec.LookPath("scontrol"); err != nil {
		t.Skip("scontrol not installed")
	}
	exprs := []string{
		"x[1-2]y", "gpu-a[01-02]-ib", "[1-2]x", "a[1-2]b[1-2]c[1-2]d[1-2]", "a[1-2]b[5,7]c[1-2]", "n[0-65535]", "n[0-65536]", "n[00-01],n[1-2]x[01-02]y[3]", "n[3-1]", "n[]",
		"n[-2]", "n[1,]", "n[1-]", "n[ 1]", "n]1", "a]b[1]", "n[a]", "n[[1]]", "n[1-2];m", "a[0-1023]b[0-63]", "n[0-99999999999]",
	}
	for _, c := range cases {
		exprs = append(exprs, c.expr)
	}
	slices.Sort(exprs)
	exprs = slices.Compact(exprs)
	// "scontrol show hostnames" accepts these leniently; see Expand.
	lenient := map[string]bool{"n[1-]": true, "n[ 1]": true, "n]1": true, "a]b[1]": true}
	for _, expr := range exprs {
		out, err := exec.Command("scontrol", "show", "hostnames", expr).CombinedOutput()
		got, gotErr := Expand(expr)
		// scontrol prints "Invalid hostlist: ..." and still exits 0.
		if err != nil || strings.Contains(string(out), "Invalid hostlist") || strings.Contains(string(out), "error:") {
			assert.Error(t, gotErr, "Slurm rejects %q (%s) but Expand gives %q", expr, strings.TrimSpace(string(out)), got)
			continue
		}
		if lenient[expr] {
			assert.Error(t, gotErr, expr)
			continue
		}
		require.NoError(t, gotErr, expr)
		assert.Equal(t, strings.Fields(string(out)), got, "hostlist %q", expr)
	}
}

func FuzzExpand(f *testing.F) {
	for _, c := range cases {
		f.Add(c.expr)
	}
	f.Add("n[1-")
	f.Add("a[0-1023]b[0-1023]")
	f.Fuzz(func(t *testing.T, expr string) {
		hosts, err := Expand(expr)
		first, ferr := First(expr)
		if err != nil {
			if ferr == nil {
				t.Fatalf("Expand fails (%v) but First gives %q", err, first)
			}
			return
		}
		if len(hosts) == 0 {
			if ferr == nil {
				t.Fatalf("no hosts but First gives %q", first)
			}
			return
		}
		if ferr != nil || hosts[0] != first {
			t.Fatalf("first %q, hosts %q", first, hosts)
		}
		if len(hosts) > MaxHosts {
			t.Fatalf("%d hosts", len(hosts))
		}
		for _, h := range hosts {
			if h == "" || strings.ContainsAny(h, "[], \t\n") {
				t.Fatalf("bad host %q from %q", h, expr)
			}
		}
	})
}
