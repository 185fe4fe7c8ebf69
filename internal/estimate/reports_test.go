package estimate

import (
	"os"
	"testing"
)

// writeReport writes the generated report at path with -update, and fails
// the test when the file differs from it without: run names the test (a -run
// pattern) that regenerates it.
func writeReport(t *testing.T, path, report, run string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if old, err := os.ReadFile(path); err != nil || string(old) != report {
		t.Errorf("%s is stale: go test ./internal/estimate -run %s -update", path, run)
	}
}
