package estimate

import (
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// TestStateFloorBelowPlans: StateFloor's Bytes over the world size is at most
// the model state (weights, gradients, optimizer) of the most loaded GPU of
// every plan: the measured corpus's plans (every optimizer, precision,
// offload and pipeline layout it holds), each also without a sharded
// optimizer, with the distributed optimizer and with Megatron-FSDP, with and
// without the distributed optimizer. The
// solver skips the node counts the floor rules out (a sound bound: those
// searches could not find a plan), so a plan below it would hide a count
// that works.
func TestStateFloorBelowPlans(t *testing.T) {
	if testing.Short() {
		t.Skip("estimates every measured run four more times")
	}
	n, closest, closestID := 0, 0.0, ""
	for _, r := range loadCalibrationRows(t) {
		if r.skip != "" {
			continue
		}
		for _, sh := range []struct{ do, fsdp bool }{{r.s.Train.DistributedOptimizer, r.s.Train.FSDP}, {false, false}, {true, false}, {false, true}, {true, true}} {
			s := *r.s
			s.Train.DistributedOptimizer, s.Train.FSDP = sh.do, sh.fsdp
			d := spec.Derive(&s)
			e, _ := RunWith(&s, d, r.links, diag.NoPos, DefaultOptions())
			if e == nil || len(e.Memory.Stages) == 0 {
				continue
			}
			var most float64
			for _, st := range e.Memory.Stages {
				most = max(most, float64(st.Weights+st.Gradients+st.Optimizer))
			}
			floor := StateFloorOf(&s).Bytes() / float64(d.World)
			// Stage bytes are rounded to whole bytes.
			if floor > most+float64(len(e.Memory.Stages)) {
				t.Errorf("%s (distributed optimizer %v, fsdp %v): the state floor %.0f bytes per GPU is above the most loaded GPU's state, %.0f", r.id, sh.do, sh.fsdp, floor, most)
			}
			if q := floor / most; q > closest {
				closest, closestID = q, r.id
			}
			n++
		}
	}
	if n < 3000 {
		t.Fatalf("%d plans compared, want 3000 or more", n)
	}
	t.Logf("%d plans: the floor is at most %.3f of the most loaded GPU's state (%s)", n, closest, closestID)
}

// TestStateFloorParamsPublished: the floor counts each parameter once with
// the vocabulary unpadded, the count the model's publishers give:
// Llama-2-7B 6,738,415,616 and Llama-3-70B 70,553,706,496 (Hugging Face
// model cards; TestParamsPublished counts them by hand), where the
// estimate's Params.Total counts the vocabulary Megatron pads.
func TestStateFloorParamsPublished(t *testing.T) {
	for _, c := range []struct {
		name string
		s    *spec.Spec
		want float64
	}{{"Llama-2-7B", llama2_7B(), 6738415616}, {"Llama-3-70B", llama70B(), 70553706496}} {
		if got := StateFloorOf(c.s).Params; got != c.want {
			t.Errorf("%s: the floor counts %.0f parameters, want %.0f", c.name, got, c.want)
		}
	}
}
