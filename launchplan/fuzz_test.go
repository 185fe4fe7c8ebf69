package launchplan

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzPlan feeds arbitrary bytes to the launch.json readers: decoding and
// checking never panic, both readers agree, and a plan that passes the check
// survives an encode/decode round trip unchanged.
func FuzzPlan(f *testing.F) {
	files, _ := filepath.Glob("../launcher/testdata/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"version": 1}`))
	f.Add([]byte(`{"version":1,"world_size":2,"gpus_per_node":2,"order":"tp","master_port":0,"nodes":[{"index":0,"workers":[{"rank":0,"local_rank":0,"gpu":0},{"rank":1,"local_rank":1,"gpu":1}]}],"groups":{"tp":[[0,1]]},"env":{"RANK=7":"x"},"command":["w"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data) // checks
		lean, leanErr := DecodeWithoutGroups(data)
		if (err == nil) != (leanErr == nil) {
			t.Fatalf("Decode: %v, DecodeWithoutGroups: %v", err, leanErr)
		}
		if err != nil || p == nil {
			return
		}
		if lean.Groups != nil {
			t.Fatalf("DecodeWithoutGroups kept the groups")
		}
		again, err := Decode(Encode(p))
		if err != nil {
			t.Fatalf("a checked plan does not decode after encoding: %v", err)
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, again)
		}
	})
}
