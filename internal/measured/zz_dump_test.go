package measured

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestZZDump(t *testing.T) {
	ids := strings.Split(os.Getenv("ZZIDS"), ",")
	data, _ := os.ReadFile("../estimate/testdata/measured/runs.jsonl")
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r Run
		json.Unmarshal(sc.Bytes(), &r)
		for _, id := range ids {
			if r.ID == id {
				p, err := PublishedPlan(&r)
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile("/tmp/zz-"+id+".cue", []byte(strings.ReplaceAll(p.CUE(), `cross_entropy_fusion_impl: "te"`, `cross_entropy_fusion_impl: "native"`)), 0o644)
			}
		}
	}
}
