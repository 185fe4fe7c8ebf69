package solve_test

import (
	"bytes"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/solve"
)

// calibrationReport is the estimate package's generated calibration table:
// each measured row's measured and estimated throughput.
const calibrationReport = "../estimate/testdata/calibration/README.md"

var calibrationLine = regexp.MustCompile(`^\| (\S+) \| (?:fit|holdout) \| [^|]+ \| ([0-9.]+) \| ([0-9.]+) \| [+-]?[0-9.]+% \|`)

// rankingErrors measures how well the step-time model ranks two plans
// against what was measured: over every pair of measured runs of the same
// model, GPU, GPU count, sequence and precision (runs.jsonl, the
// calibration corpus), |ln(estimated a/b) − ln(measured a/b)|, split into
// pairs whose plans (tp, pp, vpp, cp, ep, micro batch, recompute) differ
// and pairs of one plan measured in different releases or settings.
func rankingErrors(t *testing.T) (differ, same []float64) {
	data, err := os.ReadFile(calibrationReport)
	require.NoError(t, err)
	type meas struct{ measured, estimated float64 }
	vals := map[string]meas{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		m := calibrationLine.FindSubmatch(line)
		if m == nil {
			continue
		}
		a, err1 := strconv.ParseFloat(string(m[2]), 64)
		b, err2 := strconv.ParseFloat(string(m[3]), 64)
		require.NoError(t, err1)
		require.NoError(t, err2)
		vals[string(m[1])] = meas{a, b}
	}
	groups := map[string][]*notesRow{}
	var keys []string
	for _, r := range readRuns[notesRow](t) {
		if _, ok := vals[r.ID]; !ok {
			continue
		}
		k := r.runKey()
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], &r)
	}
	require.Greater(t, len(vals), 400, "calibration rows read")
	for _, k := range keys {
		g := groups[k]
		for i := range g {
			for j := i + 1; j < len(g); j++ {
				a, b := vals[g[i].ID], vals[g[j].ID]
				e := math.Abs(math.Log(a.estimated/b.estimated) - math.Log(a.measured/b.measured))
				if g[i].kind().String() == g[j].kind().String() {
					same = append(same, e)
				} else {
					differ = append(differ, e)
				}
			}
		}
	}
	return differ, same
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// TestNoiseBandFromCalibration: the solver's noise band — two plans whose
// estimates are closer than it are a tie, and the simpler is preferred — is
// the error the calibration measures when the model ranks two plans of one
// run. Its median over the corpus's pairs of different plans is the widest
// the band may be (beyond it the model does separate plans more often than
// not); the same net of what separates one plan's measurements across
// releases (the median over pairs of one plan, subtracted in quadrature) is
// the narrowest.
func TestNoiseBandFromCalibration(t *testing.T) {
	differ, same := rankingErrors(t)
	require.Greater(t, len(differ), 100)
	require.Greater(t, len(same), 100)
	d, s := median(differ), median(same)
	net := math.Sqrt(math.Max(d*d-s*s, 0))
	t.Logf("ranking error, median over %d pairs of different plans %.2f%%, over %d pairs of one plan %.2f%%, net %.2f%%; band %.2f%%",
		len(differ), 100*d, len(same), 100*s, 100*net, 100*solve.DefaultNoiseBand)
	assert.LessOrEqual(t, solve.DefaultNoiseBand, math.Expm1(d), "band wider than the model's ranking error")
	assert.GreaterOrEqual(t, solve.DefaultNoiseBand, math.Expm1(net), "band narrower than the model's ranking error net of release drift")
}
