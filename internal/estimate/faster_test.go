package estimate

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/spec"
)

// TestFasterSettingsAgreeWithMeasuredPairs checks explain's faster settings
// against measurements: wherever the corpus measured the same job and plan
// with one of the settings off and on (everything else equal), the setting
// is suggested for the plan without it exactly when the measured run with it
// was faster (by more than 5%; within 5% either way is allowed).
func TestFasterSettingsAgreeWithMeasuredPairs(t *testing.T) {
	if testing.Short() {
		t.Skip("loads every corpus row")
	}
	rows := loadCalibrationRows(t)
	pairs := 0
	for _, c := range fasterCandidates {
		groups := map[string][]*calRow{}
		for _, r := range rows {
			if r.skip != "" || r.apart != "" {
				continue
			}
			s2 := *r.s
			c.apply(&s2)
			key, err := json.Marshal(s2)
			if err != nil {
				t.Fatal(err)
			}
			groups[string(key)] = append(groups[string(key)], r)
		}
		for _, g := range groups {
			for _, off := range g {
				if !c.applies(off.s) {
					continue
				}
				for _, on := range g {
					if c.applies(on.s) {
						continue
					}
					ratio := on.measured / off.measured
					o := DefaultOptions()
					base, _ := RunWith(off.s, off.d, off.links, diag.NoPos, o)
					got := slices.ContainsFunc(FasterSettings(off.s, off.d, off.links, o, base, 1), func(f FasterSetting) bool {
						return f.Field == c.field && reflect.DeepEqual(f.Also, c.also)
					})
					pairs++
					msg := fmt.Sprintf("%s: %s=%v %v measured %.2fx (%s vs %s)", c.field, c.field, c.value, c.also, ratio, on.id, off.id)
					t.Log(msg, "suggested:", got)
					switch {
					case ratio > 1.05 && !got:
						t.Errorf("%s, but it is not suggested", msg)
					case ratio < 0.95 && got:
						t.Errorf("%s, but it is suggested", msg)
					}
				}
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no measured pair differs in one of the settings")
	}
}

// TestFasterTogether: explain's settings applied together on an MoE plan
// that leaves them all off (DeepSeek-V3, the guide's baseline plan on 256
// GB200 with the alltoall dispatcher and no CUDA graphs) keep two or more
// of them; the plan with exactly those set passes every check the plan
// passes, fits and takes the combination's step; that step is shorter than
// the best single's; and the flex dispatcher is set once, with one backend.
// A plan with one faster setting or none has no combination.
func TestFasterTogether(t *testing.T) {
	text := `package plan

import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)

model:   models.deepseek_v3 & {mtp_layers: 0}
cluster: clusters.gb200_nvl72 & {nodes: 64, gpus_per_node: 4, nvlink_domain: 64, slurm: segment: 16}
parallel: {tp: 1, pp: 8, vpp: 4, cp: 1, ep: 32, etp: 1, layout: "Et|(tt|)*30L"}
train: {seq_length: 4096, micro_batch: 1, global_batch: 2048, precision: "fp8", fp8_recipe: "mxfp8", recompute: "selective", recompute_modules: ["mlp", "mla_up_proj"], distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true, iters: 10}
`
	res, ds := load.Load(load.Source{Path: filepath.Join(t.TempDir(), "together.cue"), Data: []byte(text)})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	s, ds := res.DecodeValue(res.Plan)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	d := spec.Derive(s)
	if v := check.Verdict(s, d, diag.NoPos); v.HasErrors() {
		t.Fatal(v)
	}
	o := DefaultOptions()
	links := DefaultLinks(s, d)
	base, _ := RunWith(s, d, links, diag.NoPos, o)
	singles := FasterSettings(s, d, links, o, base, 1)
	together := FasterTogether(s, d, links, o, base, 1, singles)
	if together == nil {
		t.Fatalf("no combination of %d singles", len(singles))
	}
	if len(together.Settings) < 2 || together.StepTimeS >= singles[0].StepTimeS {
		t.Errorf("together %d settings, %.3g s; best single %.3g s", len(together.Settings), together.StepTimeS, singles[0].StepTimeS)
	}
	s2 := *s
	dispatchers := 0
	for _, f := range together.Settings {
		f.candidate.apply(&s2)
		if _, also := f.Also["model.moe.dispatcher"]; f.Field == "model.moe.dispatcher" || also {
			dispatchers++
		}
	}
	if dispatchers > 1 {
		t.Errorf("the dispatcher is set %d times", dispatchers)
	}
	d2 := spec.Derive(&s2)
	if !noNewErrors(errorKeys(check.Verdict(s, d, diag.NoPos)), &s2, d2) {
		t.Errorf("the combination fails a check: %v", check.Verdict(&s2, d2, diag.NoPos))
	}
	e2, _ := RunWith(&s2, d2, links, diag.NoPos, o)
	if e2 == nil || e2.StepTimeS != together.StepTimeS || e2.Memory.FractionOfGPU > 1 {
		t.Errorf("the combination as set: %+v, reported %.4g s", e2, together.StepTimeS)
	}
	t.Logf("base %.2f s, best single %.2f s, together %.2f s with %d settings", base.StepTimeS, singles[0].StepTimeS, together.StepTimeS, len(together.Settings))
	if FasterTogether(s, d, links, o, base, 1, singles[:1]) != nil {
		t.Error("one setting makes a combination")
	}
}

// TestFasterCandidatesAreTimed: every setting explain may suggest
// (fasterCandidates) changes the estimated step of some measured plan it
// applies to: one the step-time model does not time could never pass
// FasterSettings' 1% bar, and listing it would say parc weighs it. The
// plans are the corpus's and Megatron-Bridge's optimizer-offload run
// (TestOptimizerOffloadMeasured, fully offloaded without the overlap of its
// copies), which the corpus has none like.
func TestFasterCandidatesAreTimed(t *testing.T) {
	type plan struct {
		id string
		s  *spec.Spec
	}
	var plans []plan
	for _, r := range loadCalibrationRows(t) {
		if r.s != nil {
			plans = append(plans, plan{r.id, r.s})
		}
	}
	off := loadSpecText(t, offloadSpec)
	off.Train.OptimizerCPUOffload, off.Train.OptimizerOffloadFraction = true, 1
	plans = append(plans, plan{"Megatron-Bridge's optimizer-offload card", off})
	for i := range fasterCandidates {
		c := &fasterCandidates[i]
		timed := ""
		for _, p := range plans {
			if !c.applies(p.s) {
				continue
			}
			d := spec.Derive(p.s)
			before, _ := Run(p.s, d, DefaultLinks(p.s, d), diag.NoPos)
			s := *p.s
			c.apply(&s)
			d = spec.Derive(&s)
			after, _ := Run(&s, d, DefaultLinks(&s, d), diag.NoPos)
			if before != nil && after != nil && math.Abs(after.StepTimeS/before.StepTimeS-1) > 1e-6 {
				timed = p.id
				break
			}
		}
		if assert.NotEmpty(t, timed, "%s %v: the estimated step of no plan it applies to changes with it", c.field, c.value) {
			t.Logf("%s %v: timed on %s", c.field, c.value, timed)
		}
	}
}
