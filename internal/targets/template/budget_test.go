package template

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTemplateWorkIsBounded: a user template's work is bounded, not only
// its output. Before, nested ranges over until lists that write nothing ran
// for minutes, a string doubled forty times by printf took 10 GB before a
// byte was written, and a nested range over the plan's own data (no
// function call to count) had no bound at all (re-probe of issue 12 item 6
// with computing templates instead of writing ones).
func TestTemplateWorkIsBounded(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"nested ranges writing nothing", `{{ range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}`, "steps of work"},
		{"a string doubled by printf", `{{ $s := "x" }}{{ range $i := until 40 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ len $s }}`, "steps of work|exceeds 16 MiB"},
		{"a string doubled by cat", `{{ $s := "xx" }}{{ range $i := until 40 }}{{ $s = cat $s $s }}{{ end }}`, "steps of work|exceeds 16 MiB"},
		{"a list grown by append", `{{ $l := list 1 }}{{ range $i := until 40 }}{{ $l = concat $l $l }}{{ end }}`, "more than 1048576 elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Execute("x.tmpl", tc.text, nil)
			require.Error(t, err)
			assert.Regexp(t, tc.want, err.Error())
		})
	}
	// Nothing to count: a nested range over the data itself. The time
	// limit stops it (lowered here from MaxRenderTime).
	old := renderTime
	renderTime = 200 * time.Millisecond
	defer func() { renderTime = old }()
	data := map[string]any{"L": make([]int, 1<<20)}
	_, err := Execute("x.tmpl", `{{ range .L }}{{ range $.L }}{{ end }}{{ end }}`, data)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ran for more than")
	// The built-in work stays far below the budget: every example compiles
	// (cmd/parc and the targets' own tests render them).
	out, err := Execute("ok.tmpl", `{{ range $i := until 3 }}{{ printf "%d" $i }}{{ end }}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "012", string(out))
}
