package pictures

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/testenv"
)

// The simulated schedule has exactly the bubble of the papers: 1F1B
// (p−1)/(m+p−1) (Narayanan et al. 2021, §2.2), interleaved (p−1)/(v·m+p−1)
// when m is a multiple of p.
func TestSimulatedBubble(t *testing.T) {
	for _, c := range []struct{ p, v, m int }{
		{4, 1, 8}, {4, 1, 4}, {8, 1, 40}, {2, 1, 1}, {4, 1, 2}, {16, 1, 32},
		{4, 2, 8}, {4, 2, 16}, {8, 2, 24}, {2, 4, 8}, {4, 5, 32}, {3, 3, 9},
	} {
		s, err := Simulate(c.p, c.v, c.m, c.p, 1, 2)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		want := float64(c.p-1) / float64(c.v*c.m+c.p-1)
		if c.v == 1 && c.m < c.p {
			// fewer microbatches than stages: still (p−1) fill and drain steps
			want = float64(c.p-1) / float64(c.m+c.p-1)
		}
		if math.Abs(s.Bubble()-want) > 1e-12 {
			t.Errorf("p=%d v=%d m=%d: simulated bubble %.6f, want %.6f (makespan %g)", c.p, c.v, c.m, s.Bubble(), want, s.Makespan)
		}
	}
}

func TestSimulatedScheduleIsConsistent(t *testing.T) {
	for _, c := range []struct{ p, v, m, g int }{{4, 1, 8, 4}, {4, 2, 8, 4}, {4, 3, 12, 4}, {4, 2, 10, 5}, {1, 1, 3, 1}} {
		s, err := Simulate(c.p, c.v, c.m, c.g, 1, 2)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if len(s.Passes) != 2*c.p*c.v*c.m {
			t.Fatalf("%+v: %d passes, want %d", c, len(s.Passes), 2*c.p*c.v*c.m)
		}
		end := map[passKey]float64{}
		lastEnd := make([]float64, c.p)
		for _, ps := range s.Passes {
			k := passKey{ps.Rank, ps.Microbatch, ps.Chunk, ps.Backward}
			if _, dup := end[k]; dup {
				t.Fatalf("%+v: pass %+v twice", c, k)
			}
			end[k] = ps.End
			if ps.Start < lastEnd[ps.Rank]-1e-12 {
				t.Errorf("%+v: rank %d runs two passes at once", c, ps.Rank)
			}
			lastEnd[ps.Rank] = ps.End
		}
		for _, ps := range s.Passes {
			k := passKey{ps.Rank, ps.Microbatch, ps.Chunk, ps.Backward}
			if dep, ok := dependency(k, c.p, c.v); ok && end[dep] > ps.Start+1e-12 {
				t.Errorf("%+v: %+v starts before its input %+v is ready", c, k, dep)
			}
		}
	}
	// Megatron rejects m = 6 on 4 ranks with groups of 4 (remainder 2 < p):
	// in this order the schedule cannot run.
	if _, err := Simulate(4, 2, 6, 4, 1, 2); !errors.Is(err, ErrDeadlock) {
		t.Logf("m=6, p=4, v=2: %v (a deadlock is not required, only no hang)", err)
	}
}

func wellFormed(t *testing.T, svg []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg[:min(len(svg), 400)])
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
			if se.Name.Space != "http://www.w3.org/2000/svg" {
				t.Errorf("root namespace %q", se.Name.Space)
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
}

func testLayout(t *testing.T, c layout.Config) *layout.Layout {
	t.Helper()
	l, ds := layout.New(c)
	if l == nil {
		t.Fatalf("layout: %v", ds)
	}
	return l
}

func pictures(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"1f1b.svg":        PipelineSchedule(4, 1, 8, 4, 3.0/11),
		"interleaved.svg": PipelineSchedule(4, 2, 8, 4, 3.0/19),
		"single.svg":      PipelineSchedule(1, 1, 4, 1, 0),
		"long.svg":        PipelineSchedule(8, 1, 512, 8, 7.0/519),
		"layout.svg": RankLayout(testLayout(t, layout.Config{
			Nodes: 4, GPUsPerNode: 8, NVLinkDomain: 8, TP: 4, PP: 2, CP: 1, EP: 2, ETP: 1, Order: "tp-cp-ep-dp-pp",
		})),
		"layout-wide.svg": RankLayout(testLayout(t, layout.Config{
			Nodes: 40, GPUsPerNode: 4, NVLinkDomain: 2, TP: 2, PP: 4, CP: 2, EP: 1, Order: "tp-cp-ep-dp-pp",
		})),
		"layout-one.svg": RankLayout(testLayout(t, layout.Config{Nodes: 1, GPUsPerNode: 1, TP: 1, PP: 1, CP: 1, EP: 1, Order: "tp-cp-ep-dp-pp"})),
	}
}

func TestSVGWellFormed(t *testing.T) {
	for name, svg := range pictures(t) {
		t.Run(name, func(t *testing.T) { wellFormed(t, svg) })
	}
	if s := string(PipelineSchedule(4, 1, 8, 4, 3.0/11)); !strings.Contains(s, "3/11 = 27.3%") || !strings.Contains(s, `url(#bubble)`) {
		t.Error("1F1B chart lacks the bubble formula or the hatched bubble")
	}
	if s := string(PipelineSchedule(8, 1, 512, 8, 7.0/519)); !strings.Contains(s, "first 48 of 512 microbatches") {
		t.Error("a long step does not say it is cut")
	}
}

func TestPicturesDeterministic(t *testing.T) {
	a, b := pictures(t), pictures(t)
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two renders", name)
		}
	}
}

// Each SVG renders to a PNG with librsvg (Debian's librsvg2-bin). Set
// PARC_PICTURES_DIR to keep the PNGs.
func TestSVGRendersToPNG(t *testing.T) {
	testenv.NeedCommand(t, "rsvg-convert")
	dir := os.Getenv("PARC_PICTURES_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	for name, svg := range pictures(t) {
		in := filepath.Join(dir, name)
		out := strings.TrimSuffix(in, ".svg") + ".png"
		if err := os.WriteFile(in, svg, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("rsvg-convert", "--format=png", "--output="+out, in)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("rsvg-convert %s: %v\n%s", name, err, msg)
		}
		png, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 1000 {
			t.Errorf("%s: not a PNG (%d bytes)", name, len(png))
		}
	}
}
