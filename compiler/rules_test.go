package compiler

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ruleRow = regexp.MustCompile(`^\| ([A-Z][0-9]+[a-z]?) \|`)

// ruleCodes maps each Megatron rule id the registry cites (CodeInfo.Rule,
// ids joined by "/") to the codes citing it, in registry order.
func ruleCodes() map[string][]string {
	out := map[string][]string{}
	for _, c := range Codes() {
		if c.Rule == "" {
			continue
		}
		for _, id := range strings.Split(c.Rule, "/") {
			out[id] = append(out[id], c.Code)
		}
	}
	return out
}

// TestRulesDoc keeps docs/rules.md, the catalogue of Megatron-LM's rules the
// registry's rule ids refer to, in step with the registry: every cited id
// has a row, and each row's last column lists exactly the codes citing it.
// `go test ./compiler -run TestRulesDoc -update` rewrites that column.
func TestRulesDoc(t *testing.T) {
	path := filepath.Join("..", "docs", "rules.md")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cited := ruleCodes()
	rows := map[string]bool{}
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		m := ruleRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id := m[1]
		assert.False(t, rows[id], "rule %s has two rows", id)
		rows[id] = true
		cell := ""
		if codes := cited[id]; len(codes) > 0 {
			cell = "`" + strings.Join(codes, "`, `") + "`"
		}
		j := strings.LastIndex(strings.TrimSuffix(line, "|"), "|")
		require.Positive(t, j, line)
		lines[i] = strings.TrimRight(line[:j+1]+" "+cell, " ") + " |"
	}
	for id := range cited {
		assert.True(t, rows[id], "the registry cites Megatron rule %s, which docs/rules.md lacks", id)
	}
	want := strings.Join(lines, "\n")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	require.Equal(t, want, string(data), "docs/rules.md's parc codes are out of date: go test ./compiler -run TestRulesDoc -update")
	assert.True(t, slices.Contains(lines, "## World size and the parallel grid"))
}
