package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"parc.dev/parc/internal/cli"
)

// readmeBlock is the fenced block that follows marker in the README.
var fence = regexp.MustCompile("(?s)\n```[a-z]*\n(.*?)```")

func readmeBlock(t *testing.T, readme, marker string) (string, [2]int) {
	t.Helper()
	i := strings.Index(readme, marker)
	if i < 0 {
		t.Fatalf("README.md has no %s", marker)
	}
	m := fence.FindStringSubmatchIndex(readme[i+len(marker):])
	if m == nil {
		t.Fatalf("no fenced block after %s", marker)
	}
	off := i + len(marker)
	return readme[off+m[2] : off+m[3]], [2]int{off + m[2], off + m[3]}
}

// Issue 12, item 12: the README's first example shows what parc really
// prints for the spec shown next to it. `go test ./cmd/parc -run
// TestREADMEExample -update` rewrites the output block.
func TestREADMEExample(t *testing.T) {
	path, err := filepath.Abs(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	spec, _ := readmeBlock(t, readme, "<!-- readme-example:spec -->")
	shown, at := readmeBlock(t, readme, "<!-- readme-example:vet -->")

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plan.cue"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := cli.Main([]string{"vet", "plan.cue"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("parc vet exited %d, the README says 1:\n%s%s", code, stdout.String(), stderr.String())
	}
	want := "$ parc vet plan.cue\n" + stdout.String() + stderr.String()
	if *update {
		readme = readme[:at[0]] + want + readme[at[1]:]
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if shown != want {
		t.Errorf("README.md's vet example differs from the real output (go test ./cmd/parc -run TestREADMEExample -update):\n--- README\n%s--- parc vet\n%s", shown, want)
	}
	if strings.Contains(readme, "tp=16 does not divide heads=64") {
		t.Error("README.md still shows the invented tp-heads example")
	}
}
