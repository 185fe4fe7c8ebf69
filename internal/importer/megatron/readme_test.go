package megatron

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite README.md's import example from the importer's output")

// TestREADMEImportExample keeps README.md's "Import an existing script"
// example equal to what the importer really writes for the script.
func TestREADMEImportExample(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	text := string(readme)
	i, j := strings.Index(text, "<!-- import-example:begin -->"), strings.Index(text, "<!-- import-example:end -->")
	require.True(t, i >= 0 && j > i, "README.md has no import example")
	block := text[i:j]
	fence := func(lang string) string {
		start := strings.Index(block, "```"+lang+"\n")
		require.GreaterOrEqual(t, start, 0, "no ```%s block", lang)
		rest := block[start+len(lang)+4:]
		end := strings.Index(rest, "```")
		require.GreaterOrEqual(t, end, 0)
		block = rest[end+3:]
		return rest[:end]
	}
	script, spec, warnings := fence("bash"), fence("cue"), fence("")
	want, err := os.ReadFile("testdata/readme/train_mixtral_8x7b.sh")
	require.NoError(t, err)
	require.Equal(t, string(want), script, "the README's script is testdata/readme/train_mixtral_8x7b.sh")
	res := Import(want, Options{File: "train_mixtral_8x7b.sh", Cluster: "dgx_h100"})
	var got []string
	for _, d := range res.Diags {
		got = append(got, fmt.Sprintf("%s:%d:%d: %s %s: %s", d.File, d.Line, d.Column, d.Severity, d.Code, d.Message))
	}
	gotWarnings := strings.Join(got, "\n") + "\n"
	if *update {
		old := text[i:j]
		repl := strings.Replace(old, "```cue\n"+spec+"```", "```cue\n"+string(res.Spec)+"```", 1)
		repl = strings.Replace(repl, "```\n"+warnings+"```", "```\n"+gotWarnings+"```", 1)
		require.NoError(t, os.WriteFile("../../../README.md", []byte(text[:i]+repl+text[j:]), 0o644))
		return
	}
	require.Equal(t, string(res.Spec), spec, "go test ./internal/importer/megatron -run TestREADMEImportExample -update rewrites it")
	require.Equal(t, gotWarnings, warnings, "go test ./internal/importer/megatron -run TestREADMEImportExample -update rewrites it")
}
