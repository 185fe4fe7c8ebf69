package launcher

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"parc.dev/parc/launchplan"
)

// FuzzPlan feeds arbitrary bytes to the launch.json reader the launcher uses:
// decoding and checking never panic, and a plan that passes the check
// survives an encode/decode round trip unchanged.
func FuzzPlan(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"version": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := launchplan.Decode(data)
		if err != nil || p == nil {
			return
		}
		if CheckPlan(p) != nil {
			return
		}
		again, err := launchplan.Decode(launchplan.Encode(p))
		if err != nil {
			t.Fatalf("a checked plan does not decode after encoding: %v", err)
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, again)
		}
	})
}
