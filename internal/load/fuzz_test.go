package load

import (
	"cuelang.org/go/cue/ast"
	"os"
	"path/filepath"
	"testing"
)

// seeds adds every example of the given extension as a fuzz seed.
func seeds(f *testing.F, ext string) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*"+ext))
	if len(files) == 0 {
		f.Fatalf("no examples/*%s to seed the fuzzer with", ext)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// check runs the whole front-end on data: it must never panic, and every
// diagnostic it reports must carry a code and name a file.
func check(t *testing.T, name string, data []byte) {
	res, diags := Load(Source{Path: name, Data: data})
	if res != nil {
		_, ds := res.Decode()
		diags = append(diags, ds...)
		_ = res.Open()
	}
	for _, d := range diags {
		if d.Code == "" || d.File == "" {
			t.Fatalf("diagnostic without code or file: %+v", d)
		}
	}
}

func FuzzCUE(f *testing.F) {
	seeds(f, ".cue")
	f.Add([]byte(goodCUE))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, "fuzz.cue", data) })
}

func FuzzHCL(f *testing.F) {
	seeds(f, ".hcl")
	f.Add([]byte(goodHCL))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, "fuzz.hcl", data) })
}

// FuzzHCLConvert fuzzes the HCL → CUE syntax conversion alone (fast enough
// for the fuzzer to explore): it must not panic, and every node it positions
// lies inside the input.
func FuzzHCLConvert(f *testing.F) {
	seeds(f, ".hcl")
	f.Add([]byte(goodHCL))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, diags := convertHCL("fuzz.hcl", "/fuzz.hcl", data)
		for _, d := range diags {
			if d.Code == "" {
				t.Fatalf("diagnostic without a code: %+v", d)
			}
		}
		if st == nil {
			return
		}
		ast.Walk(st, func(n ast.Node) bool {
			if p := n.Pos(); p.IsValid() && (p.Offset() < 0 || p.Offset() > len(data)) {
				t.Fatalf("node at offset %d outside the %d-byte input", p.Offset(), len(data))
			}
			return true
		}, nil)
	})
}
