package check

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the diagnostic-code table in README.md")

const (
	codesBegin = "<!-- codes:begin -->"
	codesEnd   = "<!-- codes:end -->"
)

// CodesTable renders Codes as the Markdown table README.md carries.
func codesTable() string {
	var b strings.Builder
	b.WriteString("| code | severity | Megatron rule | meaning | fix |\n|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, c := range Codes {
		rule := c.Rule
		if rule == "" {
			rule = "–"
		}
		b.WriteString("| `" + c.Code + "` | " + c.Severity.String() + " | " + rule + " | " + cell(c.Meaning) + " | " + cell(c.Fix) + " |\n")
	}
	return b.String()
}

// TestREADMECodes checks that README.md lists every code between the
// codes:begin/codes:end markers; -update rewrites that block.
func TestREADMECodes(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("README.md not there yet: %v", err)
	}
	text := string(data)
	i, j := strings.Index(text, codesBegin), strings.Index(text, codesEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %s … %s block", codesBegin, codesEnd)
	}
	block := text[i+len(codesBegin) : j]
	if *update {
		text = text[:i+len(codesBegin)] + "\n" + codesTable() + text[j:]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, c := range Codes {
		if !strings.Contains(block, "`"+c.Code+"`") {
			t.Errorf("README.md's code table lacks %s (run: go test ./compiler/check -run TestREADMECodes -update)", c.Code)
		}
	}
	if strings.TrimSpace(block) != strings.TrimSpace(codesTable()) {
		t.Errorf("README.md's code table is out of date (run: go test ./compiler/check -run TestREADMECodes -update)")
	}
}
