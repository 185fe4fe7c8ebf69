package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkVet measures load + vet (schema, checks, layout, estimates) of
// each example, in memory (the file is read once, outside the timer).
func BenchmarkVet(b *testing.B) {
	files, _ := filepath.Glob("../examples/*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)) + filepath.Ext(f)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, diags := Vet(Source{Path: f, Data: data}); diags.HasErrors() {
					b.Fatal(diags)
				}
			}
		})
	}
}

// BenchmarkSolve measures what `parc solve FILE` runs for the issue's
// acceptance specs, DeepSeek-V3's at the global batch it trained with and
// Qwen3-235B-A22B on 256 GB300, where hundreds of shapes fall within the
// noise band (testdata/scale): load, the search with the targets' checks, and the
// explanation (rendering and writing the output are not included).
func BenchmarkSolve(b *testing.B) {
	for _, name := range []string{"acceptance/deepseek-v3-1k", "acceptance/llama3-405b-16k", "scale/deepseek-v3-1k-gbs15360", "scale/qwen3-235b-gb300-256"} {
		path := filepath.Join("..", "internal", "solve", "testdata", name+".cue")
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(name), func(b *testing.B) {
			for b.Loop() {
				if r, diags := Solve(Source{Path: path, Data: data}, 0); r == nil || len(r.Candidates) == 0 {
					b.Fatal(diags)
				}
			}
		})
	}
}
