package check

import (
	"encoding/json"
	"testing"

	"parc.dev/parc/internal/load"
)

// minimalCUE gives only what the base spec sets away from the schema's
// defaults; loading it through the real loader must yield exactly baseJSON,
// so the corpus runs on the schema's defaults, not on guesses.
const minimalCUE = `
model: {name: "base", layers: 16, hidden: 2048, heads: 16, vocab: 50257}
cluster: {
	name: "h100x2", nodes: 2, gpus_per_node: 8
	gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}
	nvlink_gbps: 450, network_gbps: 50
}
parallel: {tp: 2, pp: 2, tp_comm_overlap: false} // the corpus writes the overlap it tests
train: {seq_length: 2048, micro_batch: 1, global_batch: 64, iters: 100}
data: {}
logging: {}
launch: {}
`

func TestBaseMatchesSchema(t *testing.T) {
	res, diags := load.Load(load.Source{Path: "base.cue", Data: []byte(minimalCUE)})
	if res == nil || diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	got, diags := res.Decode()
	if got == nil || diags.HasErrors() {
		t.Fatalf("decode: %v", diags)
	}
	want := specFrom(t, nil)
	gj, _ := json.MarshalIndent(got, "", " ")
	wj, _ := json.MarshalIndent(want, "", " ")
	if string(gj) != string(wj) {
		t.Fatalf("baseJSON drifted from schema/plan.cue defaults:\nloader: %s\nbase:   %s", gj, wj)
	}
}

// TestOptionalDefaultsMatchSchema does the same for the optional structs the
// corpus introduces (moe, mla, slurm, checkpoint).
func TestOptionalDefaultsMatchSchema(t *testing.T) {
	src := minimalCUE + `
model: moe: {experts: 8}
model: mla: {}
cluster: slurm: {}
checkpoint: {}
`
	res, diags := load.Load(load.Source{Path: "opt.cue", Data: []byte(src)})
	if res == nil || diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	got, diags := res.Decode()
	if got == nil || diags.HasErrors() {
		t.Fatalf("decode: %v", diags)
	}
	want := specFrom(t, parse(t, `{"model": {"moe": {"experts": 8}, "mla": {}}, "cluster": {"slurm": {}}, "checkpoint": {}}`))
	gj, _ := json.MarshalIndent(got, "", " ")
	wj, _ := json.MarshalIndent(want, "", " ")
	if string(gj) != string(wj) {
		t.Fatalf("optional defaults drifted from schema/plan.cue:\nloader: %s\nbase:   %s", gj, wj)
	}
}
