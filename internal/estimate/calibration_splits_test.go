package estimate

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// otherSplits hold out other rows than the hash of a row's id, each with
// constants fitted on its own fit rows only (splitFitsFile), so a held-out
// row is estimated by a model that saw nothing of it. The id hash puts
// releases of one plan on both sides, and the main fit started from
// constants that had seen every row; these two do neither.
var otherSplits = []struct {
	key, label string
	held       func(*calRow) bool
}{
	{"by_plan", "held out by plan: every run of a plan (model, GPUs, degrees, micro and global batch, sequence, precision), in any release, on one side (FNV-1a of the plan mod 3 = 0), fitted apart²",
		func(r *calRow) bool { return r.s != nil && holdout(shapeGroup(r)) }},
	{"by_release", "held out by release: fitted on the runs published before 2026, reported on those of 2026 (Megatron-Bridge 26.x, its main branch, the MoE model zoo's 2026 tables)²",
		func(r *calRow) bool { return published2026(r.release) }},
}

// published2026 reports whether a release string names a 2026 publication.
func published2026(release string) bool {
	return strings.HasPrefix(release, "26.") || strings.Contains(release, "2026")
}

// shapeGroup is what one plan is, whatever release ran it and whatever
// settings beside the contract it recorded.
func shapeGroup(r *calRow) string {
	s := r.s
	p, t := s.Parallel, s.Train
	etp := 0
	if p.ETP != nil {
		etp = *p.ETP
	}
	return fmt.Sprintf("%s|%s|%d|tp%d pp%d vpp%d cp%d ep%d etp%d|mb%d gbs%d seq%d|%s",
		s.Model.Name, s.Cluster.GPU.Name, s.Cluster.Nodes*s.Cluster.GPUsPerNode,
		p.TP, p.PP, p.VPP, p.CP, p.EP, etp, t.MicroBatch, t.GlobalBatch, t.SeqLength, t.Precision)
}

var splitFitsFile = filepath.Join("testdata", "calibration", "splits.json")

// readSplitFits reads the constants fitted for otherSplits (none yet: an
// empty map, which -update fills).
func readSplitFits(t *testing.T) map[string]Calibration {
	t.Helper()
	out := map[string]Calibration{}
	data, err := os.ReadFile(splitFitsFile)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %v", splitFitsFile, err)
	}
	return out
}

func writeSplitFits(t *testing.T, cals map[string]Calibration) {
	t.Helper()
	data, err := json.MarshalIndent(cals, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(splitFitsFile, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// splitReport is the table's line for each of otherSplits (its held-out
// rows estimated with its own constants) and the note that gives them.
func splitReport(rows []*calRow, main Calibration, cals map[string]Calibration) (lines, note string) {
	var b, n strings.Builder
	n.WriteString("² Each of these splits has its own fit: the constants are fitted on its other rows alone,\n")
	n.WriteString("starting from the same round values as the main fit, and its held-out rows are estimated with\n")
	n.WriteString("them (`testdata/calibration/splits.json`). The id hash above puts one plan's runs in several\n")
	n.WriteString("releases on both sides, and its fit started from constants fitted before on every row; these do\n")
	n.WriteString("neither.")
	for _, sp := range otherSplits {
		c, ok := cals[sp.key]
		if !ok {
			fmt.Fprintf(&b, "| %s | no fit yet: go test ./internal/estimate -run TestCalibration -update | | | |\n", sp.label)
			continue
		}
		var errs []float64
		for _, r := range rows {
			if r.skip == "" && r.apart == "" && sp.held(r) {
				errs = append(errs, r.estimated(c)/r.measured-1)
			}
		}
		st := errStats(errs)
		fmt.Fprintf(&b, "| %s | %d | %.1f%% | %.1f%% | %.1f%% |\n", sp.label, len(errs), 100*st.median, 100*st.worst, 100*st.mean)
		slices.Sort(errs)
		fmt.Fprintf(&n, " Held out %s, the signed median error is %+.1f%% (negative: rated slower than measured); its constants: GEMMs at %.3g of the peak, fp8 GEMMs %.3g, grouped %.3g of that, attention %.3g, %.3g W per TFLOP/s, %.3g µs per kernel (%.3g of it in a graph), %.3g µs of host time per kernel, %s µs per host synchronisation.",
			strings.ReplaceAll(sp.key, "_", " "), 100*median(errs), c.GEMMEff, c.FP8GEMMEff, c.GroupedRel, c.AttnEff, c.TensorWPerTFLOP, c.KernelS*1e6, c.GraphKernelRel, c.HostOpS*1e6, roundMicros(c.HostSyncS))
	}
	// How far the fits' constants are apart: the dense GEMM efficiencies,
	// which most rows determine, and the rest.
	fits := []Calibration{main}
	for _, sp := range otherSplits {
		if c, ok := cals[sp.key]; ok {
			fits = append(fits, c)
		}
	}
	spread := func(get func(Calibration) float64) float64 {
		lo, hi := math.Inf(1), 0.0
		for _, c := range fits {
			lo, hi = min(lo, get(c)), max(hi, get(c))
		}
		return hi / lo
	}
	dense := max(spread(func(c Calibration) float64 { return c.GEMMEff }), spread(func(c Calibration) float64 { return c.FP8GEMMEff }))
	grouped := spread(func(c Calibration) float64 { return c.GroupedRel })
	fmt.Fprintf(&n, "\nAcross the three fits the dense bf16 and fp8 GEMM efficiencies, which every row weighs on, differ\n"+
		"by at most %.1f%%; the grouped expert GEMMs' share by %.0f%%, and the host and kernel constants far more\n"+
		"(the graph-replay share of a kernel's cost and the GPU idle time at a host synchronisation trade\n"+
		"against each other): the MoE runs that determine them are few and ran under settings that changed\n"+
		"from release to release.\n\n", 100*(dense-1), 100*(grouped-1))
	return b.String(), n.String()
}

// roundMicros is seconds as microseconds, 0 below a hundredth.
func roundMicros(v float64) string {
	if v*1e6 < 0.01 {
		return "0"
	}
	return fmt.Sprintf("%.3g", v*1e6)
}
