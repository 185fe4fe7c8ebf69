package solve_test

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"parc.dev/parc/internal/measured"
	"parc.dev/parc/internal/solve"
)

// planKind is what a miss's two plans are compared on with other measured
// runs: the degrees, the micro batch and the recomputation mode.
type planKind struct {
	vals map[string]int // tp, pp, vpp, cp, ep, micro_batch
	rc   string         // recompute: none, selective, full ("" unknown)
}

// kindKeys are planKind's degrees, in the order the notes print them.
var kindKeys = []string{"tp", "pp", "vpp", "cp", "ep", "micro_batch"}

func kindOf(p solve.Parallel, t solve.Train) *planKind {
	return &planKind{vals: map[string]int{"tp": p.TP, "pp": p.PP, "vpp": p.VPP, "cp": p.CP, "ep": p.EP, "micro_batch": t.MicroBatch}, rc: t.Recompute}
}

func (k *planKind) String() string {
	var f []string
	for _, key := range kindKeys {
		if v, ok := k.vals[key]; ok {
			f = append(f, fmt.Sprintf("%s=%d", key, v))
		}
	}
	if k.rc != "" {
		f = append(f, "recompute="+k.rc)
	}
	return strings.Join(f, " ")
}

// notesRow is a measured run (a runs.jsonl line, measured.Run) as the
// miss notes and the outside evidence read it.
type notesRow struct{ measured.Run }

// kind is a measured row's plan as a planKind: the degrees it records
// (Megatron's default 1 for an unrecorded tp, pp, vpp, cp, ep), its micro
// batch when it records one, its recompute mode when it records one.
func (r *notesRow) kind() *planKind {
	p := r.Parallel
	k := &planKind{vals: map[string]int{}, rc: r.Train.Recompute}
	for key, v := range map[string]*int{"tp": p.TP, "pp": p.PP, "vpp": p.VPP, "cp": p.CP, "ep": p.EP} {
		k.vals[key] = 1
		if v != nil {
			k.vals[key] = *v
		}
	}
	if r.Train.MicroBatch != nil {
		k.vals["micro_batch"] = *r.Train.MicroBatch
	}
	return k
}

// runKey names the run a row measures: the model at its scale, sequence
// and precision on its GPU (the releases, batch and settings may differ).
// The model is its recorded object but for YaRN's attention-scale factors
// (numericsOnly), which some releases' rows record and others leave at
// their default: the same model, the same work.
func (r *notesRow) runKey() string {
	var m map[string]any
	model := string(r.Model)
	if json.Unmarshal(r.Model, &m) == nil {
		for _, k := range numericsOnly {
			delete(m, k)
		}
		if b, err := json.Marshal(m); err == nil {
			model = string(b)
		}
	}
	return fmt.Sprintf("%s|%s|%d|%d|%s|%s", model, r.GPU, r.GPUs, r.Train.SeqLength, r.Train.Precision, r.Train.FP8Recipe)
}

// numericsOnly are model fields that change the numbers a layer computes,
// not its work: YaRN's mscale and mscale_all_dim scale the attention
// logits (Megatron's --mscale, --mscale-all-dim).
var numericsOnly = []string{"mscale", "mscale_all_dim"}

// sameRun: the two rows measure the same run (runKey).
func (r *notesRow) sameRun(o *notesRow) bool { return r.runKey() == o.runKey() }

// towardPick: the measured plan w is of the pick's kind where the pick and
// the published plan differ: on each key where they differ w has one of
// the two values, on at least one of them the pick's, and on every other
// key the value both share (an unrecorded micro batch or recompute mode of
// w matches either).
func towardPick(w, pub, pick *planKind) bool {
	moved := false
	for _, key := range kindKeys {
		wv, ok := w.vals[key]
		if !ok {
			continue
		}
		a, b := pub.vals[key], pick.vals[key]
		switch {
		case a == b && wv != a:
			return false
		case a != b && wv == b:
			moved = true
		case a != b && wv != a:
			return false
		}
	}
	if w.rc != "" && pub.rc != pick.rc {
		switch w.rc {
		case pick.rc:
			moved = true
		case pub.rc:
		default:
			return false
		}
	} else if w.rc != "" && w.rc != pub.rc {
		return false
	}
	return moved
}

// curatedNotes are outside measurements of a miss's kind of plan that are
// not rows of the corpus, by the row ids they speak to.
var curatedNotes = []struct {
	rows *regexp.Regexp
	note string
}{
	{regexp.MustCompile(`^(megatron-sc21-table1-|mtnlg-530b-)`),
		"Full recomputation, as the 2021 runs did. Korthikanti et al., \"Reducing Activation Recomputation in Large " +
			"Transformer Models\" (arXiv:2205.05198, abstract): the 530B GPT model on 2,240 A100 trained at 54.2% MFU with " +
			"sequence parallelism and selective recomputation, 29% faster than the 42.1% MFU with full recomputation: the cost of " +
			"recomputing. The corpus lets the pick for these rows use only the 2021 software's options (no sequence or context " +
			"parallelism, no selective recomputation, no distributed optimizer); parc's picks for the misses left recompute nothing, " +
			"at a smaller micro batch that fits parc's memory model without it."},
}

// notesRowsByID reads the measured corpus: its rows by id, and the ids in
// file order.
func notesRowsByID(t *testing.T) (map[string]*notesRow, []string) {
	rows := map[string]*notesRow{}
	var order []string
	for _, r := range readRuns[notesRow](t) {
		rows[r.ID] = &r
		order = append(order, r.ID)
	}
	return rows, order
}

// writeMissNotes adds to the corpus README, for each miss, what measured
// runs say about the pick's kind of plan: other corpus rows of the same run
// (model, GPU, GPU count, sequence, precision) whose plan moves from the
// published plan toward the pick (towardPick), with their measured
// throughput against the missed row's, and the curated outside notes. A
// ratio above 1 means the measured run of the pick's kind was faster, as
// parc's model says; below 1, slower, against it. Other settings of the
// runs (CUDA graphs, dispatcher, batch) may differ and are named.
func writeMissNotes(t *testing.T, b *strings.Builder, out []corpusOutcome) {
	rows, order := notesRowsByID(t)
	b.WriteString("\n## Miss notes: what measured runs say about the pick's kind of plan\n\n")
	b.WriteString("For each miss, the corpus's other measured runs of the same model, GPU, GPU count, sequence and precision\n")
	b.WriteString("whose plan moves from the published plan toward the pick (on each degree, micro batch or recompute mode where the\n")
	b.WriteString("two differ, the run has one of the two values, on at least one the pick's; elsewhere the value both share),\n")
	b.WriteString("with the measured throughput as a multiple of the missed row's: above 1 the measured run of the pick's kind was\n")
	b.WriteString("faster, as parc says; below 1 it was slower, against parc. Settings the two runs record differently are named:\n")
	b.WriteString("a later release often changed more than the plan. Then outside measurements that are not corpus rows.\n\n")
	for _, o := range out {
		if o.status == "ok" || o.pub == nil {
			continue
		}
		r := rows[o.id]
		if r == nil {
			continue
		}
		var lines []string
		mine := r.measuredTokens()
		for _, w := range pickKindRuns(r, o, rows, order) {
			v := w.measuredTokens()
			line := fmt.Sprintf("%s (%s, %s): %.0f tokens/s/GPU, %.2f× this row's %.0f", w.ID, w.Release, w.kind(), v, v/mine, mine)
			if d := settingsDiff(r, w); d != "" {
				line += "; differs in " + d
			}
			lines = append(lines, line)
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(b, "- **%s** (published %s; pick %s; published/pick %.3f):\n", o.id, o.pub, o.pick, o.ratio)
		for _, l := range lines {
			fmt.Fprintf(b, "  - %s\n", l)
		}
	}
	for _, c := range curatedNotes {
		var ids []string
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, o := range out {
			if o.status != "ok" && c.rows.MatchString(o.id) {
				ids = append(ids, o.id)
				lo, hi = math.Min(lo, o.ratio), math.Max(hi, o.ratio)
			}
		}
		if len(ids) > 0 {
			fmt.Fprintf(b, "- %s Rows (published/pick %.2f–%.2f): %s.\n", c.note, lo, hi, strings.Join(ids, ", "))
		}
	}
}

// pickKindRuns are the corpus rows of the missed row r's run (sameRun),
// other than r, whose plan moves from o's published plan toward its pick
// (towardPick) and that publish a measured tokens/s/GPU (measuredTokens),
// in file order.
func pickKindRuns(r *notesRow, o corpusOutcome, rows map[string]*notesRow, order []string) []*notesRow {
	mine := r.measuredTokens()
	var out []*notesRow
	for _, id := range order {
		w := rows[id]
		if id == o.id || !w.sameRun(r) || !towardPick(w.kind(), o.pub, o.pick) {
			continue
		}
		if v := w.measuredTokens(); v > 0 && mine > 0 {
			out = append(out, w)
		}
	}
	return out
}

// missFacts are the outside measurements a slower miss is judged by.
type missFacts struct {
	// measured is the missed row's measured tokens/s/GPU (0: none);
	// pickEst parc's estimate for its pick.
	measured, pickEst float64
	// faster and slower count the same run's rows of the pick's kind
	// (pickKindRuns) measured at least 1.10× / at most 1/1.10 of the
	// missed row's throughput.
	faster, slower int
	// knownSlow: the row's source marks its measurement abnormally slow
	// (runs.jsonl known_slow).
	knownSlow bool
	// curated: a curated outside measurement speaks to the pick's kind
	// (curatedNotes).
	curated bool
}

// Verdicts on a slower miss, from outside truth only.
const (
	// verdictModelSlow: with the published plan's measured throughput in
	// place of parc's estimate, the pick is within 10%: the miss is the
	// step-time model's error on the published plan.
	verdictModelSlow = "the model rates the published plan too slow"
	// verdictPickMeasured: the same run measured with a plan of the
	// pick's kind (another release) was at least 10% faster: the published
	// plan was slower, as parc says.
	verdictPickMeasured = "a measured run of the pick's kind was faster"
	// verdictPickAgainst: a measured run of the pick's kind was at least
	// 10% slower: against the pick.
	verdictPickAgainst = "a measured run of the pick's kind was slower"
	verdictKnownSlow   = "the source marks the published measurement slow"
	verdictCurated     = "an outside A/B measurement (miss notes) favours the pick's kind"
	// verdictUnmeasured: nothing measured speaks to the pick; the model
	// may be optimistic on a plan nobody ran.
	verdictUnmeasured = "the pick's kind is unmeasured"
)

// verdicts are what the outside measurements say about a slower miss, in
// the order above; verdictUnmeasured alone when none speaks to it.
func (f missFacts) verdicts() []string {
	var v []string
	if f.measured > 0 && f.pickEst > 0 && f.pickEst/f.measured <= 1.10 {
		v = append(v, verdictModelSlow)
	}
	if f.faster > 0 {
		v = append(v, verdictPickMeasured)
	}
	if f.slower > 0 {
		v = append(v, verdictPickAgainst)
	}
	if f.knownSlow {
		v = append(v, verdictKnownSlow)
	}
	if f.curated {
		v = append(v, verdictCurated)
	}
	if len(v) == 0 {
		v = append(v, verdictUnmeasured)
	}
	return v
}

// writeMissVerdicts adds to the corpus README every slower miss judged by
// outside truth (missFacts.verdicts), grouped by verdict.
func writeMissVerdicts(t *testing.T, b *strings.Builder, out []corpusOutcome) {
	rows, order := notesRowsByID(t)
	byVerdict := map[string][]string{}
	n := 0
	for _, o := range out {
		r := rows[o.id]
		if o.status != "slower" || o.pub == nil || r == nil {
			continue
		}
		n++
		f := missFacts{measured: r.measuredTokens(), knownSlow: r.KnownSlow != ""}
		f.pickEst = r.TokensPerSPerGPUAt(o.pickStep)
		mine := r.measuredTokens()
		for _, w := range pickKindRuns(r, o, rows, order) {
			switch v := w.measuredTokens(); {
			case v >= 1.10*mine:
				f.faster++
			case v*1.10 <= mine:
				f.slower++
			}
		}
		for _, c := range curatedNotes {
			f.curated = f.curated || c.rows.MatchString(o.id)
		}
		for _, v := range f.verdicts() {
			byVerdict[v] = append(byVerdict[v], fmt.Sprintf("%s (%.3f)", o.id, o.ratio))
		}
	}
	if n == 0 {
		return
	}
	b.WriteString("\n## Miss verdicts: which side the measurements say is wrong\n\n")
	fmt.Fprintf(b, "The %d slower misses, judged only by outside measurements (a row may have several verdicts):\n", n)
	b.WriteString("*" + verdictModelSlow + "* when parc's pick is within 10% of the published plan's measured throughput (fix the\n")
	b.WriteString("model, not the search); *" + verdictPickMeasured + "* or *" + verdictPickAgainst + "* when another release of the\n")
	b.WriteString("same run measured a plan of the pick's kind (Miss notes) at least 10% faster or slower than this row;\n")
	b.WriteString("*" + verdictKnownSlow + "* for a row whose source calls its number a regression (runs.jsonl known_slow);\n")
	b.WriteString("*" + verdictCurated + "* for a row a curated outside measurement speaks to;\n")
	b.WriteString("*" + verdictUnmeasured + "* when none of these applies: the model may be optimistic on a plan nobody ran.\n\n")
	b.WriteString("| verdict | rows | rows (published/pick) |\n|---|---:|---|\n")
	for _, v := range []string{verdictModelSlow, verdictPickMeasured, verdictPickAgainst, verdictKnownSlow, verdictCurated, verdictUnmeasured} {
		if ids := byVerdict[v]; len(ids) > 0 {
			fmt.Fprintf(b, "| %s | %d | %s |\n", v, len(ids), strings.Join(ids, ", "))
		}
	}
}

// TestMissVerdicts: a miss is put on the model only when the published
// plan's measurement brings the pick within 10%, and called unmeasured
// only when nothing measured speaks to it.
func TestMissVerdicts(t *testing.T) {
	for _, c := range []struct {
		f    missFacts
		want []string
	}{
		{missFacts{measured: 100, pickEst: 110}, []string{verdictModelSlow}},
		{missFacts{measured: 100, pickEst: 111}, []string{verdictUnmeasured}},
		{missFacts{measured: 100, pickEst: 150, faster: 2}, []string{verdictPickMeasured}},
		{missFacts{measured: 0, pickEst: 150}, []string{verdictUnmeasured}},
		{missFacts{measured: 0, pickEst: 150, curated: true}, []string{verdictCurated}},
		{missFacts{measured: 100, pickEst: 105, slower: 1, knownSlow: true}, []string{verdictModelSlow, verdictPickAgainst, verdictKnownSlow}},
	} {
		assert.Equal(t, c.want, c.f.verdicts(), "%+v", c.f)
	}
}

// settingsDiff names the settings and batch fields two rows record
// differently, sorted.
func settingsDiff(a, b *notesRow) string {
	var d []string
	for _, m := range []struct {
		x, y map[string]any
	}{{a.Settings, b.Settings}, {a.trainFields(), b.trainFields()}} {
		keys := map[string]bool{}
		for k := range m.x {
			keys[k] = true
		}
		for k := range m.y {
			keys[k] = true
		}
		for k := range keys {
			if k == "micro_batch" || k == "recompute" || k == "recompute_modules" {
				continue
			}
			if fmt.Sprint(m.x[k]) != fmt.Sprint(m.y[k]) {
				d = append(d, k)
			}
		}
	}
	slices.Sort(d)
	return strings.Join(d, ", ")
}

// TestPickKindRunsStepTime: a run of the pick's kind that publishes only a
// step time counts with its tokens/s/GPU from that step time (the unit the
// outside evidence and the calibration use), and one that publishes only
// model TFLOP/s has no tokens/s/GPU here and does not count.
func TestPickKindRunsStepTime(t *testing.T) {
	row := func(id string, ep int, measured map[string]any) *notesRow {
		gbs, mb := 1024, 1
		r := &notesRow{}
		r.ID, r.GPU, r.GPUs, r.Model, r.Measured = id, "H100-SXM", 64, []byte(`"m"`), measured
		r.Parallel.EP = &ep
		r.Train.SeqLength, r.Train.GlobalBatch, r.Train.MicroBatch, r.Train.Precision = 4096, &gbs, &mb, "bf16"
		return r
	}
	rows := map[string]*notesRow{
		"pub":    row("pub", 64, map[string]any{"tokens_per_s_per_gpu": 8000.0}),
		"step":   row("step", 8, map[string]any{"step_time_s": 4.0, "mfu": 0.4}),
		"tflops": row("tflops", 8, map[string]any{"model_tflops_per_gpu": 400.0}),
	}
	kind := func(ep int) *planKind {
		return &planKind{vals: map[string]int{"tp": 1, "pp": 1, "vpp": 1, "cp": 1, "ep": ep, "micro_batch": 1}}
	}
	o := corpusOutcome{id: "pub", status: "slower", pub: kind(64), pick: kind(8)}
	got := pickKindRuns(rows["pub"], o, rows, []string{"pub", "step", "tflops"})
	if assert.Len(t, got, 1) {
		assert.Equal(t, "step", got[0].ID)
		assert.InDelta(t, 1024*4096/4.0/64, got[0].measuredTokens(), 1e-9)
	}
}

// trainFields is the row's train block by runs.jsonl field name (an
// unrecorded field nil), every field measured.Run reads.
func (r *notesRow) trainFields() map[string]any {
	data, err := json.Marshal(r.Train)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		panic(err)
	}
	return m
}

// TestTowardPick: the miss notes take a measured run as evidence about the
// pick's kind of plan only when it moves from the published plan toward
// the pick and nowhere else.
func TestTowardPick(t *testing.T) {
	kind := func(rc string, kv ...int) *planKind {
		k := &planKind{vals: map[string]int{}, rc: rc}
		for i, key := range kindKeys {
			if i < len(kv) && kv[i] >= 0 {
				k.vals[key] = kv[i]
			}
		}
		return k
	}
	// GPT-OSS 120B on 64 B200 (25.11): published ep 64, pick pp 2 vpp 4 ep 8.
	pub := kind("selective", 1, 1, 1, 1, 64, 4)
	pick := kind("selective", 1, 2, 4, 1, 8, 4)
	for _, c := range []struct {
		w    *planKind
		want bool
	}{
		{kind("selective", 1, 1, 1, 1, 8, 4), true},   // 26.04: ep 8, pp 1 (the published plan's)
		{kind("", 1, 1, 1, 1, 8, 4), true},            // recompute unrecorded
		{kind("selective", 1, 2, 4, 1, 8, 4), true},   // the pick itself
		{kind("selective", 1, 1, 1, 1, 64, 4), false}, // the published plan again
		{kind("selective", 1, 1, 1, 1, 16, 4), false}, // ep 16: neither plan's
		{kind("selective", 2, 1, 1, 1, 8, 4), false},  // tp 2 where both have 1
		{kind("none", 1, 1, 1, 1, 8, 4), false},       // another recompute mode
		{kind("selective", 1, 1, 1, 1, 8, -1), true},  // micro batch unrecorded
		{kind("selective", 1, 1, 1, 1, 8, 2), false},  // micro batch 2
	} {
		assert.Equal(t, c.want, towardPick(c.w, pub, pick), "%s", c.w)
	}
}

// measuredTokens is a row's measured tokens/s/GPU
// (measured.Run.TokensPerSPerGPU); 0 when it publishes neither tokens/s/GPU
// nor a step time. A row with only model TFLOP/s has none here: its
// tokens/s need the FLOP count of internal/estimate's calibration.
func (r *notesRow) measuredTokens() float64 {
	v, _, err := r.TokensPerSPerGPU(0)
	if err != nil {
		return 0
	}
	return v
}

// familyName names a run (runKey) in words: the model, the GPUs, the
// sequence and the precision.
func (r *notesRow) familyName() string {
	var name string
	if json.Unmarshal(r.Model, &name) != nil {
		var m struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(r.Model, &m)
		name = m.Name
	}
	prec := r.Train.Precision
	if rc := r.Train.FP8Recipe; rc != "" && prec == "fp8" {
		prec += " " + rc
	}
	return fmt.Sprintf("%s on %d %s, sequence %d, %s", name, r.GPUs, r.GPU, r.Train.SeqLength, prec)
}

// writeMissFamilies adds to the corpus README, for each run with a miss
// (the same model, GPU, GPU count, sequence and precision: runKey), every
// measured row of that run, whatever its release and plan, with its
// measured tokens/s/GPU beside parc's estimate of the same plan with the
// row's own settings, and parc's pick for each missed row. The releases
// changed more than the plan (the dispatcher, CUDA graphs, the batch), so
// two rows' measured ratio mixes the plan with the software; where the
// same run was measured with plans whose throughputs differ by more than
// 10%, it counts the pairs parc orders as measured.
func writeMissFamilies(t *testing.T, b *strings.Builder, out []corpusOutcome) {
	rows, order := notesRowsByID(t)
	byID := map[string]corpusOutcome{}
	for _, o := range out {
		byID[o.id] = o
	}
	b.WriteString("\n## Miss families: every measured plan of the run, measured and estimated\n\n")
	b.WriteString("For each run with a miss (model, GPU, GPU count, sequence, precision), every corpus row of that run in\n")
	b.WriteString("release order: its plan, its measured tokens/s/GPU and parc's estimate of that plan with the row's own settings\n")
	b.WriteString("(the published plan's step time above), and for a missed row parc's pick and its estimate. A later release that\n")
	b.WriteString("measured the pick's kind of plan faster supports the pick; one whose plan parc rates above another's but that\n")
	b.WriteString("measured slower says the model is wrong there. Releases changed more than the plan (dispatcher, CUDA graphs,\n")
	b.WriteString("batch), so each measured ratio mixes the two. *Pairs*: rows of the run with different plans whose measured\n")
	b.WriteString("throughputs differ by more than 10%, and how many of them parc's estimates order the same way. Last, parc's\n")
	b.WriteString("error on the run's measured rows: when it spreads wider than a miss's ratio, releases moved the throughput more\n")
	b.WriteString("than the model tells plans apart on that run.\n\n")
	done := map[string]bool{}
	for _, o := range out {
		if o.status == "ok" {
			continue
		}
		r := rows[o.id]
		if r == nil || done[r.runKey()] {
			continue
		}
		key := r.runKey()
		done[key] = true
		var fam []*notesRow
		for _, id := range order {
			if w := rows[id]; w.runKey() == key {
				if _, ok := byID[id]; ok {
					fam = append(fam, w)
				}
			}
		}
		fmt.Fprintf(b, "- **%s**\n", r.familyName())
		type point struct {
			kind     string
			measured float64
			est      float64
		}
		var pts []point
		for _, w := range fam {
			wo := byID[w.ID]
			m, e := w.measuredTokens(), w.TokensPerSPerGPUAt(wo.pubStep)
			line := fmt.Sprintf("  - %s (%s): ", w.ID, w.Release)
			kind := w.kind().String()
			if wo.pub != nil {
				kind = wo.pub.String()
			}
			line += kind
			switch {
			case m > 0 && e > 0:
				line += fmt.Sprintf("; measured %.0f, parc %.0f tokens/s/GPU (%s)", m, e, signedPct(100*(e/m-1)))
				pts = append(pts, point{kind, m, e})
			case m > 0:
				line += fmt.Sprintf("; measured %.0f tokens/s/GPU, parc: %s", m, wo.status)
			default:
				line += "; no measured tokens/s/GPU"
			}
			if wo.status != "ok" && wo.pick != nil {
				line += fmt.Sprintf("; **%s** %.3f, pick %s at %.0f tokens/s/GPU", wo.status, wo.ratio, wo.pick, w.TokensPerSPerGPUAt(wo.pickStep))
			} else if wo.status != "ok" {
				line += "; **" + wo.status + "**"
			}
			b.WriteString(line + "\n")
		}
		agree, pairs := 0, 0
		for i := range pts {
			for j := i + 1; j < len(pts); j++ {
				p, q := pts[i], pts[j]
				if p.kind == q.kind || math.Abs(math.Log(p.measured/q.measured)) <= math.Log(1.1) {
					continue
				}
				pairs++
				if (p.measured > q.measured) == (p.est > q.est) {
					agree++
				}
			}
		}
		if pairs > 0 {
			fmt.Fprintf(b, "  - pairs: parc orders %d of %d as measured\n", agree, pairs)
		}
		if len(pts) > 1 {
			errs := make([]float64, len(pts))
			for i, p := range pts {
				errs[i] = 100 * (p.est/p.measured - 1)
			}
			slices.Sort(errs)
			fmt.Fprintf(b, "  - parc on this run's %d measured rows: median %s, from %s to %s\n",
				len(errs), signedPct(errs[len(errs)/2]), signedPct(errs[0]), signedPct(errs[len(errs)-1]))
		}
	}
}

// signedPct prints a percentage with its sign, rounded to a whole percent
// ("+3%", "-12%", "+0%", never "-0%").
func signedPct(x float64) string {
	r := math.Round(x)
	if r == 0 {
		r = 0 // not -0
	}
	return fmt.Sprintf("%+.0f%%", r)
}
