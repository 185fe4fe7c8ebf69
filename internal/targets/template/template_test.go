package template_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/targets/template"
	"parc.dev/parc/internal/testenv"
)

func TestRenderBuiltinAndOverride(t *testing.T) {
	fsys := fstest.MapFS{"greet.tmpl": {Data: []byte("hi {{.Name | upper}}\n")}}
	data := map[string]string{"Name": "ada"}

	out, err := template.Builtin().Render("greet", "hello {{.Name}}\n", data)
	require.NoError(t, err)
	assert.Equal(t, "hello ada\n", string(out))

	out, err = template.New(fsys, "my templates").Render("greet", "hello {{.Name}}\n", data)
	require.NoError(t, err)
	assert.Equal(t, "hi ADA\n", string(out), "the override replaces the built-in")

	out, err = template.New(fsys, "my templates").Render("other", "built-in {{.Name}}", data)
	require.NoError(t, err)
	assert.Equal(t, "built-in ada", string(out), "targets without an override use the built-in")
}

func TestErrorsNameFileAndLine(t *testing.T) {
	fsys := fstest.MapFS{
		"parse.tmpl":   {Data: []byte("line 1\nline 2 {{if}}\n")},
		"missing.tmpl": {Data: []byte("a\nb\n  {{.Nope}}\n")},
		"quote.tmpl":   {Data: []byte("#SBATCH --job-name={{sbatchq .Name}}\n")},
	}
	set := template.New(fsys, "tpl")
	cases := []struct {
		name, file string
		line, col  int // col is text/template's: the 0-based byte offset in the line
		msg        string
		data       any
	}{
		{"parse", "tpl/parse.tmpl", 2, 0, "missing value for if", map[string]string{}},
		{"missing", "tpl/missing.tmpl", 3, 4, `map has no entry for key "Nope"`, map[string]string{"Name": "x"}},
		{"quote", "tpl/quote.tmpl", 1, 21, "line break", map[string]string{"Name": "a\nb"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := set.Render(c.name, "unused", c.data)
			require.Error(t, err)
			var te *template.Error
			require.True(t, errors.As(err, &te), "%T", err)
			assert.Equal(t, c.file, te.File)
			assert.Equal(t, c.line, te.Line)
			assert.Equal(t, c.col, te.Column)
			assert.Contains(t, te.Msg, c.msg)
			assert.True(t, strings.HasPrefix(err.Error(), te.File+":"), err.Error())
		})
	}
}

func TestHermeticFunctions(t *testing.T) {
	// sprig's non-hermetic functions (environment, clock, randomness) are absent.
	for _, fn := range []string{"env", "expandenv", "now", "randAlphaNum", "uuidv4"} {
		_, err := template.Execute("t", "{{"+fn+"}}", nil)
		assert.Error(t, err, fn)
	}
	out, err := template.Execute("t", `{{list "b" "a" | sortAlpha | join ","}} {{shqJoin (list "x y" "z")}}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "a,b 'x y' z", string(out))
}

func TestCheckOverrides(t *testing.T) {
	fsys := fstest.MapFS{
		"submit.sbatch.tmpl": {Data: []byte("x")},
		"sbatch.tmpl":        {Data: []byte("x")},
		"README":             {Data: []byte("x")},
	}
	set := template.New(fsys, "tpl")
	names, err := set.Overrides()
	require.NoError(t, err)
	assert.Equal(t, []string{"sbatch", "submit.sbatch"}, names)
	err = set.CheckOverrides("submit.sbatch", "torchrun.sh")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tpl/sbatch.tmpl")
	assert.NoError(t, template.New(fsys, "tpl").CheckOverrides("submit.sbatch", "sbatch"))
	assert.NoError(t, template.Builtin().CheckOverrides("x"))
}

var quoteSeeds = []string{
	"", "plain", "with space", "it's", `x"; rm -rf ~; "`, "$HOME", "`id`", "$(id)", "a\nb", "tab\there",
	"back\\slash", "trailing\\", "*", "~", "A=b", "--flag=v", "!bang", "{a,b}", "#hash", "'", "''", "\"", "é ü", "a;b|c&d",
}

// shellEcho runs bash on "printf %s WORD" and returns what the shell made of the word.
func shellEcho(t testing.TB, word string) string {
	out, err := exec.Command("bash", "-c", "printf %s "+word).Output()
	require.NoError(t, err, word)
	return string(out)
}

func TestShellQuoteRoundTrip(t *testing.T) {
	for _, s := range quoteSeeds {
		q := template.ShellQuote(s)
		assert.Equal(t, s, shellEcho(t, q), "quoted as %s", q)
	}
	assert.Equal(t, "plain", template.ShellQuote("plain"), "safe words stay bare")
	assert.Equal(t, "''", template.ShellQuote(""))
	assert.Equal(t, "'A=b'", template.ShellQuote("A=b"), "an assignment-looking word is quoted")
	assert.Equal(t, `'it'\''s '\$'HOME'`, template.ShellQuote("it's $HOME"))
	assert.Equal(t, "\\`'id'\\`", template.ShellQuote("`id`"))
}

func FuzzShellQuote(f *testing.F) {
	for _, s := range quoteSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			t.Skip("a shell word cannot hold NUL")
		}
		q := template.ShellQuote(s)
		if got := shellEcho(t, q); got != s {
			t.Fatalf("ShellQuote(%q) = %s, the shell reads %q", s, q, got)
		}
	})
}

func TestSbatchQuote(t *testing.T) {
	for in, want := range map[string]string{
		"gpu":             "gpu",
		"00:10:00":        "00:10:00",
		"B:USR2@120":      "B:USR2@120",
		"logs/%x-%j.out":  "logs/%x-%j.out",
		"my job":          `"my job"`,
		`x"; rm -rf ~; "`: `"x\"; rm -rf ~; \""`,
		`back\slash`:      `"back\\slash"`,
		"a#b":             `"a#b"`,
	} {
		got, err := template.SbatchQuote(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}
	_, err := template.SbatchQuote("a\nb")
	assert.Error(t, err)
}

// TestShellQuoteShellcheck checks that quoted values give shellcheck nothing
// to say (the generated scripts must pass it whatever the spec holds).
func TestShellQuoteShellcheck(t *testing.T) {
	testenv.NeedCommand(t, "shellcheck")
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	for i, s := range quoteSeeds {
		// The two ways the scripts use values: exported, and in a variable
		// expanded in double quotes.
		fmt.Fprintf(&b, "export e%d=%s\nv%d=%s\nprintf '%%s\\n' \"$v%d\"\n", i, template.ShellQuote(s), i, template.ShellQuote(s), i)
	}
	cmd := exec.Command("shellcheck", "--severity=style", "-")
	cmd.Stdin = strings.NewReader(b.String())
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "%s\n%s", out, b.String())
}
