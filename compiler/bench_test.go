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
