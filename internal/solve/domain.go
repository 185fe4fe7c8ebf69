package solve

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/spec"
)

// field is one of the open fields (spec.OpenField); the solver keeps a
// domain for each.
type field = spec.OpenField

const (
	fTP    = spec.OpenTP
	fCP    = spec.OpenCP
	fPP    = spec.OpenPP
	fEP    = spec.OpenEP
	fETP   = spec.OpenETP
	fVPP   = spec.OpenVPP
	fMB    = spec.OpenMicroBatch
	fRC    = spec.OpenRecompute
	fEmb   = spec.OpenAccountForEmbedding
	fLoss  = spec.OpenAccountForLoss
	fFirst = spec.OpenFirstStageLayers
	fLast  = spec.OpenLastStageLayers
	fDO    = spec.OpenDistributedOptimizer
	fFSDP  = spec.OpenFSDP
)

const nFields = spec.NumOpenFields

// recomputeModes are train.recompute's values, least recomputation first.
var recomputeModes = []string{"none", "selective", "full"}

// recompute is one recomputation choice: train.recompute and, for
// selective recomputation, train.recompute_modules (nil: not written,
// Megatron's default ["core_attn"]). A candidate's recompute value is an
// index into solver.recomputes.
type recompute struct {
	mode    string
	modules []string
	// layersImplied: full recomputation where parc chooses how many layers
	// it reruns (the spec writes neither train.recompute_method nor
	// train.recompute_layers, or leaves them open): the least number per
	// model chunk, with Megatron's block method, whose peak fits the
	// headroom (a leaf's rl).
	layersImplied bool
	// method is train.recompute_method when parc chooses it beside the
	// spec's recompute_layers ("": the spec's own, or layersImplied's).
	method string
}

// apply writes r into t. A choice whose layers parc chooses is written as
// rerunning one layer per model chunk, the least it can be: the bounds
// take it so, and evaluate replaces it by the leaf's own (recomputeLayers).
func (r recompute) apply(t *spec.Train) {
	t.Recompute = r.mode
	t.RecomputeModules = r.modules
	if r.method != "" {
		t.RecomputeMethod = r.method
	}
	if r.layersImplied {
		setRecomputeLayers(t, 1)
	}
}

// setRecomputeLayers writes full recomputation of the first k layers of
// each model chunk (Megatron's block method), or of every layer (Megatron's
// uniform method in groups of one, the default) when k ≤ 0.
func setRecomputeLayers(t *spec.Train, k int) {
	if k <= 0 {
		t.RecomputeMethod, t.RecomputeLayers = "uniform", nil
		return
	}
	t.RecomputeMethod, t.RecomputeLayers = "block", &k
}

// String is "full", "selective", "selective[mla_up_proj,mlp]" (a list
// beside another mode, which Megatron ignores, is not shown).
func (r recompute) String() string {
	if r.modules == nil || r.mode != "selective" {
		return r.mode
	}
	return r.mode + "[" + strings.Join(r.modules, ",") + "]"
}

// moduleLists are the train.recompute_modules parc tries with selective
// recomputation when train.recompute is open and the spec writes no
// modules: Megatron's default (core attention) and the lists of
// Megatron-Bridge's performance recipes — ["moe_act"] and ["layernorm",
// "moe_act"] (Qwen3 and GPT-OSS MoE recipes), ["mla_up_proj"] and
// ["mla_up_proj", "mlp"] (DeepSeek-V3 on GB200/B200 and on H100, Kimi K2);
// and ["layernorm", "mla_up_proj"], what DeepSeek-V3 itself recomputed
// (arXiv:2412.19437 §3.2.3: the RMSNorms and the MLA up-projections).
// ["mla_up_proj", "mlp", "moe"], which recomputes the whole MoE block too
// ("moe": its routing, dispatch, experts and combine rerun in the
// backward), is NVIDIA's DGX Cloud DeepSeek-V3 on 1,024 H100
// (dgxc-benchmarking v25.08, launch.sh RM='mla_up_proj mlp moe').
// On a dense model also ["mlp"]: Megatron's recompute_mlp checkpoints a
// dense MLP and keeps only its input (transformer_layer.py at d98e8a64,
// "mlp" in recompute_modules with a non-MoE mlp; --recompute-modules lists
// it among its choices), the one module besides core attention that frees
// a dense layer's activations with Transformer Engine's fused norms.
// A list the model cannot use (check's recompute-modules rule: moe_act
// needs grouped-GEMM experts, mla_up_proj multi-latent attention; "mlp"
// alone on an MoE model, whose dense MLPs are at most a few first layers)
// is not tried.
var moduleLists = [][]string{
	nil,
	{"moe_act"},
	{"layernorm", "moe_act"},
	{"mla_up_proj"},
	{"mla_up_proj", "mlp"},
	{"layernorm", "mla_up_proj"},
	{"mlp"},
	{"mla_up_proj", "mlp", "moe"},
}

// etpFollowsTP is the etp value meaning "not set: etp = tp".
const etpFollowsTP = 0

// solver holds one search.
type solver struct {
	res  *load.Result
	at   diag.Locator
	opts Options

	base spec.Spec // the user's spec, open fields at placeholder values
	open [nFields]bool
	// implied marks the pipeline-split fields the user did not write that
	// parc searches because the pipeline is its to choose (see splitImplied).
	implied [nFields]bool
	user    [nFields]cue.Value
	// allowsAll[f] is 1 when the user's constraint on f allows every value
	// of its kind, 2 when not, 0 before it is known.
	allowsAll [nFields]int8
	world     int

	// dom[f] are field f's candidate values after the user's constraint
	// (recompute: indices into recomputeModes; etp: etpFollowsTP = unset;
	// booleans: 0 and 1). The pipeline split has no product domain: see
	// splitsFor.
	dom [nFields][]int

	// splits are the pipeline splits tried, by index; splitsOf[pp] the
	// indices tried with pp stages, simplest first.
	splits   []split
	splitsOf map[int][]int32
	dupSplit map[[3]int32]bool
	// shards are the (distributed_optimizer, fsdp) pairs tried.
	shards []shard
	// layoutStages is the number of stages of the spec's own
	// parallel.layout (0: none, or one check rejects): pp must divide it,
	// and vpp is its quotient.
	layoutStages int
	// layoutsSearched: the split is parc's to choose (splitImplied) and
	// the spec writes no layout, so the generated layouts are tried too.
	layoutsSearched bool
	// layoutOpen: the user left parallel.layout open (choice.go), with the
	// constraint layoutUser; userLayouts are its layouts when it is a
	// disjunction of them (then the only ones tried), and listedLayouts
	// those that parse, as splits. vppFromLayout: the spec writes no vpp,
	// so each plan's is its layout's stages over pp.
	layoutOpen    bool
	layoutUser    cue.Value
	layoutAny     bool // layoutUser is string or _: it allows every layout
	userLayouts   []string
	listedLayouts []split
	vppFromLayout bool
	// modulesOpen: the user left train.recompute_modules open (choice.go),
	// with the constraint modulesUser; userModules are its lists when it is
	// a disjunction of them; modulesPlaceholder is the value decoded in
	// place of an open one that is not a list yet (nil: none needed).
	modulesOpen        bool
	modulesUser        cue.Value
	userModules        [][]string
	modulesPlaceholder any
	// dpOpen, spOpen: the user left parallel.dp or parallel.sp open
	// (choice.go); each plan derives it, dp within dpUser (dpAllows caches
	// its verdicts).
	dpOpen, spOpen bool
	dpUser, spUser cue.Value
	dpAllows       map[int]bool
	// methodOpen, layersOpen: the user left train.recompute_method or
	// train.recompute_layers open (choice.go), with the constraints
	// methodUser, layersUser; methodPH and layersPH are the values decoded
	// in their place.
	methodOpen, layersOpen bool
	methodUser, layersUser cue.Value
	methodPH               string
	layersPH               int
	// recomputes are the recomputation choices tried, least first;
	// modulesImplied: parc chooses train.recompute_modules (recompute is
	// open and the spec writes no modules).
	recomputes     []recompute
	modulesImplied bool
	// layersImplied: some recomputation choice has parc choose
	// train.recompute_method and train.recompute_layers
	// (recompute.layersImplied).
	layersImplied bool
	// groupChosen: parc chooses parallel.microbatch_group_size (group.go);
	// group is the user's constraint when it is open.
	groupChosen bool
	group       openGroup

	diags diag.List
	search
}

// maxListed is the most values a disjunction of an open parallel.layout or
// train.recompute_modules may list: each is a plan variant the search
// multiplies by every other choice (600 module lists took 8 s to check
// before the search began).
const maxListed = 100

// written reports whether the user's spec writes the field at path, as a
// value or open.
func (sv *solver) written(path string) bool { return sv.res.Written(path) }

// newSolver decodes the spec once, with each open field at a placeholder its
// constraint allows, and computes every field's candidate values.
func newSolver(res *load.Result, opts Options) (*solver, diag.List) {
	sv := &solver{res: res, at: res.Locator(), opts: opts}
	sv.limit = opts.budget
	var ds diag.List
	vals := map[string]any{}
	open := res.Open() // with an open group size last: parc chooses it with vpp
	for _, p := range open {
		switch p {
		case spec.LayoutPath:
			ph, ok := sv.openLayout(res.User.LookupPath(cue.ParsePath(p)))
			if !ok {
				ds.Errorf(sv.at(p), p, CodeOpenNoValue, `write parallel.layout as a layout, a disjunction of layouts or string`,
					"%s is open but parc found no layout its constraint %v allows", p, sv.layoutUser)
				continue
			}
			if n := len(sv.userLayouts); n > maxListed {
				ds.Errorf(sv.at(p), p, CodeSearchTooLarge, fmt.Sprintf("list at most %d layouts, or write string and let parc place the layers", maxListed),
					"%s lists %d layouts; parc searches at most %d", p, n, maxListed)
				continue
			}
			vals[p] = ph
			continue
		case spec.DataParallelPath, spec.SequenceParallelPath, spec.RecomputeMethodPath, spec.RecomputeLayersPath:
			take := sv.openDerived
			if p == spec.RecomputeMethodPath || p == spec.RecomputeLayersPath {
				take = sv.openFullRecompute
			}
			ph, ok := take(p, res.User.LookupPath(cue.ParsePath(p)))
			if !ok {
				ds.Errorf(sv.at(p), p, CodeOpenNoValue, fmt.Sprintf("write %s as a value, a disjunction or bounds, or leave it out", p),
					"%s is open but parc found no value its constraint %v allows", p, res.User.LookupPath(cue.ParsePath(p)))
				continue
			}
			vals[p] = ph
			continue
		case spec.RecomputeModulesPath:
			ph, ok := sv.openModules(res.User.LookupPath(cue.ParsePath(p)))
			if !ok {
				ds.Errorf(sv.at(p), p, CodeOpenNoValue, `write train.recompute_modules as a list, a disjunction of lists or [...string]`,
					"%s is open but parc found no module list its constraint %v allows", p, sv.modulesUser)
				continue
			}
			if n := len(sv.userModules); n > maxListed {
				ds.Errorf(sv.at(p), p, CodeSearchTooLarge, fmt.Sprintf("list at most %d module lists, or write [...string] and let parc choose among the recipes' lists", maxListed),
					"%s lists %d module lists; parc searches at most %d", p, n, maxListed)
				continue
			}
			if ph != nil {
				vals[p], sv.modulesPlaceholder = ph, ph
			}
			continue
		}
		f, ok := spec.OpenFieldOf(p)
		if !ok && p == groupPath {
			// Open like a degree: parc chooses it (group.go).
			ph, ok := sv.openGroup(res.User.LookupPath(cue.ParsePath(p)))
			if !ok {
				ds.Errorf(sv.at(p), p, CodeOpenNoValue, "write the field as a concrete value, a disjunction (4 | 8) or bounds (>=8)",
					"%s is open but parc found no value its constraint %v allows (it tries 1–4096)", p, sv.group.user)
				continue
			}
			vals[p] = ph
			continue
		}
		if !ok {
			continue
		}
		sv.open[f] = true
		sv.user[f] = res.User.LookupPath(cue.ParsePath(p))
		ph, ok := sv.placeholder(f)
		if want := fieldKind(f); !ok && sv.user[f].IncompleteKind()&want == 0 {
			// tp: string, tp: float: no value of the field's type at all.
			ds.Errorf(sv.at(p), p, "type-mismatch", fmt.Sprintf("write %s as %s", p, kindExamples(f)),
				"%s has type %v, want %v: its constraint %v allows no value of the field's type", p, sv.user[f].IncompleteKind(), want, sv.user[f])
			continue
		}
		if !ok {
			ds.Errorf(sv.at(p), p, CodeOpenNoValue, "write the field as a concrete value, a disjunction (1 | 2 | 4 | 8) or bounds (>=2)",
				"%s is open but parc found no value its constraint %v allows (it tries %s)", p, sv.user[f], triedValues(f))
			continue
		}
		vals[p] = ph
	}
	if ds.HasErrors() {
		return nil, ds
	}
	s, dds := res.DecodeValue(fillAll(res.Plan, vals))
	ds = append(ds, dds...)
	if s == nil {
		return nil, ds
	}
	opts.instead(s) // a hint's fix (withPlan)
	sv.base = *s
	if sv.group.open {
		sv.base.Parallel.MicrobatchGroupSize = nil // the placeholder
	}
	if sv.layoutOpen {
		sv.base.Parallel.Layout = nil // the placeholder
		if !sv.open[fVPP] && !sv.written(fVPP.Path()) {
			sv.base.Parallel.VPP, sv.vppFromLayout = 1, true
		}
		if ds = append(ds, sv.layoutConflicts()...); ds.HasErrors() {
			return nil, ds
		}
	}
	if sv.modulesOpen {
		sv.base.Train.RecomputeModules = nil // the placeholder, or [] for [...string]
	}
	if sv.dpOpen {
		sv.base.Parallel.DP = nil // derived per plan
	}
	if sv.methodOpen {
		sv.base.Train.RecomputeMethod = "" // the placeholder
	}
	if sv.layersOpen {
		sv.base.Train.RecomputeLayers = nil // the placeholder
	}
	if sv.spOpen {
		sv.base.Parallel.SP = nil // on with tp > 1, per plan
	}
	sv.world = s.Cluster.Nodes * s.Cluster.GPUsPerNode
	if sv.opts.MemoryHeadroom <= 0 {
		sv.opts.MemoryHeadroom = DefaultMemoryHeadroom
		if s.Solve != nil && s.Solve.MemoryHeadroom != nil {
			sv.opts.MemoryHeadroom = *s.Solve.MemoryHeadroom
		}
	}
	if l := sv.base.Parallel.Layout; l != nil {
		if pl, err := spec.ParsePipelineLayout(*l); err == nil {
			sv.layoutStages = len(pl.Stages)
		}
	}
	sv.splitImplied()
	sv.domains()
	if ds = append(ds, sv.emptyDegrees()...); ds.HasErrors() {
		return nil, ds
	}
	return sv, ds
}

// emptyDegrees reports each open degree, micro batch or vpp whose
// constraint allows none of the values Megatron's rules leave it (tp: 3 | 5
// on 8 GPUs, micro_batch: >100000 with a global batch of 16): the search
// would try nothing and could only report that no plan is feasible, without
// the reason.
func (sv *solver) emptyDegrees() diag.List {
	var ds diag.List
	for _, f := range []field{fTP, fCP, fPP, fEP, fETP, fVPP, fMB} {
		if !sv.open[f] || len(sv.dom[f]) > 0 {
			continue
		}
		p := f.Path()
		var rule, among string
		switch f {
		case fMB:
			gb := sv.base.Train.GlobalBatch
			rule = fmt.Sprintf("a micro batch divides the global batch of %d (%s)", gb, check.IntList(divisors(gb)))
			among = fmt.Sprintf("the divisors of the global batch %d", gb)
		case fVPP:
			n := sv.vppCandidates()
			rule = fmt.Sprintf("vpp splits each pipeline stage's share of the %d layers, so parc tries only %s", sv.base.Model.Layers, check.IntList(n))
			among = "the values the layers allow"
		default:
			rule = fmt.Sprintf("a degree divides the number of GPUs (%s)", check.IntList(divisors(sv.world)))
			among = fmt.Sprintf("the divisors of the %d GPUs", sv.world)
		}
		ds.Errorf(sv.at(p), p, CodeOpenNoValue,
			fmt.Sprintf("write %s: int and parc chooses among %s, or allow some of them in the constraint", p, among),
			"%s is open but its constraint %v allows no value parc can use: %s", p, sv.user[f], rule)
	}
	return ds
}

func triedValues(f field) string {
	switch f {
	case fRC:
		return `"none", "selective", "full"`
	case fEmb, fLoss, fDO, fFSDP:
		return "false and true"
	}
	return "powers of two and 1–4096"
}

// fieldKind is the CUE kind of an open field's values.
func fieldKind(f field) cue.Kind {
	switch {
	case f == fRC:
		return cue.StringKind
	case isBool(f):
		return cue.BoolKind
	}
	return cue.IntKind
}

// kindExamples is how an open field of f's kind is written.
func kindExamples(f field) string {
	switch {
	case f == fRC:
		return `one of "none", "selective", "full", a disjunction of them or string`
	case isBool(f):
		return "true, false or bool"
	}
	return "an integer, a disjunction (1 | 2 | 4 | 8), bounds (>=2) or int"
}

func isBool(f field) bool { return f == fEmb || f == fLoss || f == fDO || f == fFSDP }

// splitImplied opens the pipeline-split fields (account_for_embedding,
// account_for_loss, first_stage_layers, last_stage_layers) the user did not
// write when the pipeline is parc's to choose: pp is open, or the layers do
// not split evenly over the pp given. Experts choose pp and the split
// together (Llama 3 405B's 126 layers split over 16 stages only with one
// layer fewer on the first and the last stage); a split the user wrote,
// even as its default value, is kept.
func (sv *solver) splitImplied() {
	if sv.layoutOpen {
		// The user asks parc to place the layers: every split of it, as
		// a layout (choice.go), or the disjunction's layouts alone.
		if sv.userLayouts != nil {
			return
		}
		sv.layoutsSearched = true
		for _, f := range spec.PipelineSplitFields {
			if !sv.written(f.Path()) {
				sv.implied[f] = true
			}
		}
		return
	}
	if sv.written(spec.LayoutPath) {
		return // the layout places every layer
	}
	// An open split field asks parc to choose the split as much as an
	// open pp does: a user who writes account_for_embedding: bool has not
	// ruled out the first/last stage fields or a layout (with DeepSeek-V3's
	// 61 layers on pp = 16 only a layout places them). A field written as a
	// value keeps the split the user's.
	for _, f := range spec.PipelineSplitFields {
		if !sv.open[f] && sv.written(f.Path()) {
			return
		}
	}
	p := sv.base.Parallel
	if len(sv.splitOpened()) == 0 && !sv.open[fPP] && (p.PP <= 1 || sv.base.Model.Layers%p.PP == 0) {
		return
	}
	for _, f := range spec.PipelineSplitFields {
		if !sv.open[f] {
			sv.implied[f] = true
		}
	}
	sv.layoutsSearched = true
}

// splitOpened are the paths of the pipeline-split fields the user left
// open (splitImplied: parc then chooses among every split, layouts too).
func (sv *solver) splitOpened() []string {
	var out []string
	for _, f := range spec.PipelineSplitFields {
		if sv.open[f] {
			out = append(out, f.Path())
		}
	}
	return out
}

// duplicateShard reports whether shard sh is another's plan: Megatron-FSDP
// runs on the distributed optimizer (Megatron switches it on itself,
// arguments.py at d98e8a64: "Megatron-FSDP v1 is only compatible with
// --use-distributed-optimizer", and parc's arguments pass it with
// --use-megatron-fsdp), so FSDP without it is the plan with it when both
// are tried (counted as duplicateSharding).
func (sv *solver) duplicateShard(sh int) bool {
	return sv.shards[sh] == shard{distopt: false, fsdp: true} &&
		slices.Contains(sv.shards, shard{distopt: true, fsdp: true})
}

// searched reports whether the search chooses f: the user left it open or
// parc opened it (splitImplied).
func (sv *solver) searched(f field) bool { return sv.open[f] || sv.implied[f] }

// allowed reports whether value c unifies with the user's constraint on f.
func (sv *solver) allowed(f field, c any) bool {
	if !sv.open[f] {
		return true
	}
	uv := sv.user[f]
	if sv.allowsAll[f] == 0 {
		// A constraint as general as its kind (`tp: int`) allows every
		// value of it: one subsumption instead of a unification a value.
		sv.allowsAll[f] = 2
		top := map[bool]string{true: "int", false: "string"}[f != fRC]
		if isBool(f) {
			top = "bool"
		}
		if uv.Subsume(uv.Context().CompileString(top)) == nil {
			sv.allowsAll[f] = 1
		}
	}
	if sv.allowsAll[f] == 1 {
		return true
	}
	return allows(uv, c)
}

// placeholder finds a value the user's constraint on f allows.
func (sv *solver) placeholder(f field) (any, bool) {
	switch {
	case f == fRC:
		for _, m := range recomputeModes {
			if sv.allowed(f, m) {
				return m, true
			}
		}
		return nil, false
	case isBool(f):
		for _, b := range []bool{false, true} {
			if sv.allowed(f, b) {
				return b, true
			}
		}
		return nil, false
	}
	for _, v := range intPlaceholders {
		if sv.allowed(f, v) {
			return v, true
		}
	}
	return nil, false
}

// intPlaceholders are the values tried, in order, for an open integer
// field's placeholder: the powers of two, then 3–4096.
var intPlaceholders = func() []int {
	var out []int
	for v := 1; v <= 1<<22; v *= 2 {
		out = append(out, v)
	}
	for v := 3; v <= 4096; v++ {
		if v&(v-1) != 0 {
			out = append(out, v)
		}
	}
	return out
}()

// domains fills sv.dom: an open field's values are those the rules could
// ever accept (the world's divisors for a degree, the layer count's divisors
// for vpp, the global batch's for micro_batch) that the user's constraint
// allows; a field the user set has its one value.
func (sv *solver) domains() {
	s := &sv.base
	divW := divisors(sv.world)
	fixed := func(f field, v int) {
		sv.dom[f] = []int{v}
	}
	pick := func(f field, cands []int) {
		for _, c := range cands {
			if sv.allowed(f, c) {
				sv.dom[f] = append(sv.dom[f], c)
			}
		}
	}
	for _, f := range []field{fTP, fCP, fPP, fEP} {
		if !sv.open[f] {
			fixed(f, sv.fixedValue(f))
			continue
		}
		pick(f, divW)
	}
	switch {
	case !sv.open[fETP]:
		fixed(fETP, etpFollowsTP)
		if s.Parallel.ETP != nil {
			fixed(fETP, *s.Parallel.ETP)
		}
	case s.Model.MoE == nil:
		// etp shapes only the (unused) expert grid of a dense model: every
		// value gives the same plan, so take etp = tp.
		sv.dom[fETP] = []int{etpFollowsTP}
	default:
		pick(fETP, divW)
	}
	switch {
	case !sv.open[fVPP] && sv.layoutStages > 0 && !sv.written(fVPP.Path()):
		// Megatron derives vpp from the layout: its stages over pp.
		sv.dom[fVPP] = divisors(sv.layoutStages)
	case sv.vppFromLayout:
		// Each plan's layout gives its vpp (choice.go).
		sv.dom[fVPP] = sv.vppCandidates()
		if sv.userLayouts != nil {
			// The divisors of the listed layouts' stage counts.
			sv.dom[fVPP] = nil
			for _, v := range upTo(sv.base.Model.Layers + 2) {
				if slices.ContainsFunc(sv.listedLayouts, func(l split) bool { return l.stages%v == 0 }) {
					sv.dom[fVPP] = append(sv.dom[fVPP], v)
				}
			}
		}
	case !sv.open[fVPP]:
		fixed(fVPP, s.Parallel.VPP)
	default:
		pick(fVPP, sv.vppCandidates())
	}
	if sv.open[fMB] {
		pick(fMB, divisors(s.Train.GlobalBatch))
	} else {
		fixed(fMB, s.Train.MicroBatch)
	}
	sv.recomputeDomain()
	for _, f := range []field{fEmb, fLoss, fDO, fFSDP} {
		switch {
		case sv.open[f]:
			for i, b := range []bool{false, true} {
				if sv.allowed(f, b) {
					sv.dom[f] = append(sv.dom[f], i)
				}
			}
		case sv.implied[f]:
			sv.dom[f] = []int{0, 1}
		default:
			fixed(f, btoi(sv.boolValue(f)))
		}
	}
	if sv.opts.trying == fixDistributedOptimizer {
		sv.dom[fDO] = []int{1}
	}
	sv.shards = nil
	for _, do := range sv.dom[fDO] {
		for _, fs := range sv.dom[fFSDP] {
			sv.shards = append(sv.shards, shard{distopt: do == 1, fsdp: fs == 1})
		}
	}
	sv.splitsOf = map[int][]int32{}
	sv.dupSplit = map[[3]int32]bool{}
	for _, pp := range sv.dom[fPP] {
		sv.splitsOf[pp] = sv.splitsFor(pp)
	}
}

// recomputeDomain fills sv.recomputes and dom[fRC]: the spec's own choice
// when train.recompute is set; else every mode the user's constraint
// allows, selective with each applicable module list of moduleLists when
// the spec writes no train.recompute_modules (with the spec's list when it
// does).
func (sv *solver) recomputeDomain() {
	t := sv.base.Train
	sv.recomputes = nil
	if sv.opts.trying == fixFullRecompute {
		// Full recomputation as the spec's recompute_method and
		// recompute_layers (or their defaults) say.
		sv.recomputes = []recompute{{mode: "full"}}
		sv.dom[fRC] = []int{0}
		return
	}
	// parc chooses train.recompute_modules when recompute is open and the
	// spec writes none; the layers full recomputation reruns when recompute
	// or either field is open and the spec leaves both fields out or open,
	// or writes the block method and leaves the layers open.
	sv.modulesImplied = sv.open[fRC] && !sv.written(spec.RecomputeModulesPath)
	chooseLayers := (sv.open[fRC] || sv.methodOpen || sv.layersOpen) &&
		((!sv.written(spec.RecomputeMethodPath) || sv.methodOpen) && (!sv.written(spec.RecomputeLayersPath) || sv.layersOpen) ||
			sv.layersOpen && t.RecomputeMethod == "block")
	modes := []string{t.Recompute}
	if sv.open[fRC] {
		modes = nil
		for _, m := range recomputeModes {
			if sv.allowed(fRC, m) && (m != "full" || sv.fullRecomputeAllowed()) {
				modes = append(modes, m)
			}
		}
	}
	for _, m := range modes {
		switch {
		case m == "full" && chooseLayers:
			sv.recomputes = append(sv.recomputes, recompute{mode: m, layersImplied: true})
		case m == "full" && sv.methodOpen:
			// The spec's layers, with either method.
			for _, meth := range []string{"uniform", "block"} {
				if allows(sv.methodUser, meth) {
					sv.recomputes = append(sv.recomputes, recompute{mode: m, method: meth})
				}
			}
		case m == "selective" && (sv.modulesOpen || sv.modulesImplied):
			for _, mods := range sv.chosenModules() {
				sv.recomputes = append(sv.recomputes, recompute{mode: m, modules: mods})
			}
		default:
			sv.recomputes = append(sv.recomputes, recompute{mode: m, modules: t.RecomputeModules})
		}
	}
	sv.layersImplied = slices.ContainsFunc(sv.recomputes, func(r recompute) bool { return r.layersImplied })
	selective := 0
	for i, r := range sv.recomputes {
		sv.dom[fRC] = append(sv.dom[fRC], i)
		selective += btoi(r.mode == "selective")
	}
	// Only Megatron's default applies (a dense model without MLA): parc
	// chose nothing the spec did not say.
	sv.modulesImplied = sv.modulesImplied && selective > 1
}

// modulesApply reports whether check accepts r's module list for the
// model (the recompute-modules rule).
func (sv *solver) modulesApply(r recompute) bool {
	s := sv.base
	r.apply(&s.Train)
	for _, x := range check.VerdictWith(&s, spec.Derive(&s), diag.NoPos, sv.opts.checkOptions()) {
		if x.Severity == diag.Error && x.Code == "recompute-modules" {
			return false
		}
	}
	return true
}

// fullRecomputeAllowed reports whether check accepts full recomputation
// beside the spec's kernel settings: Megatron rejects it with per-layer
// CUDA graphs (the kernel-options rule on train.recompute).
func (sv *solver) fullRecomputeAllowed() bool {
	s := sv.base
	s.Train.Recompute = "full"
	for _, x := range check.VerdictWith(&s, spec.Derive(&s), diag.NoPos, sv.opts.checkOptions()) {
		if x.Severity == diag.Error && x.Code == "kernel-options" && x.Path == "train.recompute" {
			return false
		}
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func (sv *solver) fixedValue(f field) int {
	p := sv.base.Parallel
	switch f {
	case fTP:
		return p.TP
	case fCP:
		return p.CP
	case fPP:
		return p.PP
	case fEP:
		return p.EP
	}
	panic(fmt.Sprintf("solve: fixedValue(%d)", f))
}

func (sv *solver) boolValue(f field) bool {
	s := &sv.base
	switch f {
	case fEmb:
		return s.Parallel.AccountForEmbedding
	case fLoss:
		return s.Parallel.AccountForLoss
	case fDO:
		return s.Train.DistributedOptimizer
	case fFSDP:
		return s.Train.FSDP
	}
	panic(fmt.Sprintf("solve: boolValue(%d)", f))
}

// vppCandidates are the values an open vpp may take before the user's
// constraint: with the split searched, a vpp divides some stage's layer
// count, at most layers + 2 (the embedding and the loss accounted for);
// else the divisors of vppBound.
func (sv *solver) vppCandidates() []int {
	if sv.searched(fFirst) || sv.searched(fEmb) || sv.searched(fLoss) || sv.searched(fLast) {
		return upTo(sv.base.Model.Layers + 2)
	}
	return divisors(sv.vppBound())
}

// vppBound is a number every valid vpp divides when the split is fixed: the
// (accounted) layer count of an even split, the gcd of the given first/last
// stage sizes and the layer count of an uneven one.
func (sv *solver) vppBound() int {
	p, L := sv.base.Parallel, sv.base.Model.Layers
	if p.FirstStageLayers == nil && p.LastStageLayers == nil {
		if p.AccountForEmbedding {
			L++
		}
		if p.AccountForLoss {
			L++
		}
		return max(L, 1)
	}
	g := L
	for _, v := range []*int{p.FirstStageLayers, p.LastStageLayers} {
		if v != nil && *v > 0 {
			g = gcd(g, *v)
		}
	}
	return max(g, 1)
}

// openValue is what a candidate's value of f is written as in CUE; ok is
// false when the field stays unwritten (an implied split field the plan
// does not set).
func (sv *solver) openValue(f field, lf *leaf) (any, bool) {
	sp, sh := sv.splits[lf.split], sv.shards[lf.shard]
	switch f {
	case fTP:
		return int(lf.tp), true
	case fCP:
		return int(lf.cp), true
	case fPP:
		return int(lf.pp), true
	case fEP:
		return int(lf.ep), true
	case fETP:
		if lf.etp == etpFollowsTP {
			return int(lf.tp), true
		}
		return int(lf.etp), true
	case fVPP:
		return int(lf.vpp), true
	case fMB:
		return int(lf.mb), true
	case fRC:
		return sv.recomputes[lf.rc].mode, true
	case fEmb:
		return sp.emb, sv.open[f] || sp.emb
	case fLoss:
		return sp.loss, sv.open[f] || sp.loss
	case fFirst:
		return sp.first, sp.first > 0
	case fLast:
		return sp.last, sp.last > 0
	case fDO:
		return sh.distopt, true
	case fFSDP:
		return sh.fsdp, true
	}
	panic(fmt.Sprintf("solve: openValue(%d)", f))
}

func divisors(n int) []int {
	if n < 1 {
		return nil
	}
	var lo, hi []int
	for d := 1; d*d <= n; d++ {
		if n%d == 0 {
			lo = append(lo, d)
			if d*d != n {
				hi = append(hi, n/d)
			}
		}
	}
	slices.Reverse(hi)
	return append(lo, hi...)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
