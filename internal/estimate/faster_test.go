package estimate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"parc.dev/parc/internal/diag"
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
			if r.skip != "" || r.knownSlow != "" {
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
