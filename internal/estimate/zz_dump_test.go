package estimate

import (
	"os"
	"strings"
	"testing"
)

func TestZZDump(t *testing.T) {
	id := os.Getenv("ROW")
	for _, r := range readMeasuredRuns(t) {
		if r.ID == id {
			text, _, skip := loadRunSpec(&r)
			t.Log(skip)
			os.WriteFile("/tmp/row.cue", []byte(strings.ReplaceAll(text, `cross_entropy_fusion_impl: "te"`, `cross_entropy_fusion_impl: "native"`)), 0o644)
		}
	}
}
