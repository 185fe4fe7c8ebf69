package megatron

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
	"parc.dev/parc/internal/resolve"
	"parc.dev/parc/internal/spec"
	mg "parc.dev/parc/internal/targets/megatron"
	"parc.dev/parc/internal/targets/slurm"
)

// Options say what the argument list does not: the cluster.
type Options struct {
	File        string // the input's name in diagnostics
	Cluster     string // a stdlib cluster preset ("dgx_h100"); "" = dgx_h100, with a warning
	GPUsPerNode int    // 0 = the preset's (or torchrun's --nproc_per_node)
	Nodes       int    // 0 = torchrun's --nnodes, else the fewest nodes the degrees fit
	// Env is the run's environment where it matters to Megatron (e.g.
	// NVTE_CPU_OFFLOAD_V1, which validate_args reads): written to launch.env.
	Env map[string]string
	// ScriptArgs are the words a launch script is run with ($1, $2, …, $@);
	// nil: not given, and a reference to one is kept as written.
	ScriptArgs []string
}

// Result of an import.
type Result struct {
	Spec     []byte            // the CUE spec; nil when the arguments are rejected
	Diags    diag.List         // at FILE:LINE of the argument concerned
	Args     []string          // the training command's arguments as read
	Compiled []string          // what parc compile of Spec gives Megatron (nil if it does not compile)
	Diffs    []Difference      // dests the compiled arguments still set differently
	World    int               // GPUs in the job the spec describes
	Env      map[string]string // the environment parc's launch gives the workers (launch.json), when it compiles
}

// DefaultCluster is the preset used when none is given.
const DefaultCluster = "dgx_h100"

// Import reads a Megatron argument list (one argument per line, or a shell
// command line or script) and writes the spec that gives Megatron the same
// arguments. Every argument the schema cannot express goes to
// launch.extra_args with an import-extra-arg warning. The spec is verified
// by compiling it and replaying Megatron's parser on both argument lists.
func Import(src []byte, o Options) Result {
	if o.File == "" {
		o.File = "-"
	}
	var r Result
	if d := load.TooLarge(o.File, src, "a launch script"); d != nil {
		r.Diags.Add(*d)
		return r
	}
	cmd, recipe := readRecipe(string(src))
	if !recipe {
		cmd = readInput(string(src), o.ScriptArgs)
	}
	if len(cmd.Args) > load.MaxListElements {
		r.Diags.Errorf(diag.Pos{File: o.File, Line: cmd.Args[load.MaxListElements].Line, Column: max(cmd.Args[load.MaxListElements].Col, 1)}, "",
			"import-too-many-arguments", "a training command has tens to a few thousand arguments: check that this is the script you meant",
			"the training command has %d arguments; parc reads at most %d (load.MaxListElements, the longest list a spec may hold)", len(cmd.Args), load.MaxListElements)
		return r
	}
	words := cmd.Words()
	r.Args = words
	lineOf := func(i int) int {
		if i >= 0 && i < len(cmd.Args) {
			return cmd.Args[i].Line
		}
		if len(cmd.Args) > 0 {
			return cmd.Args[0].Line
		}
		return 1
	}
	at := func(i int) diag.Pos {
		col := 1
		if i >= 0 && i < len(cmd.Args) && cmd.Args[i].Col > 0 {
			col = cmd.Args[i].Col
		} else if i < 0 && len(cmd.Args) > 0 && cmd.Args[0].Col > 0 {
			col = cmd.Args[0].Col
		}
		return diag.Pos{File: o.File, Line: lineOf(i), Column: col}
	}
	for _, n := range cmd.Notes {
		pos := diag.Pos{File: o.File, Line: n.Line, Column: max(n.Col, 1)}
		if n.Code == "import-expansion-limit" {
			r.Diags.Errorf(pos, "", n.Code, "write the values the command needs instead of building them by repeated references", "%s", n.Msg)
			continue
		}
		r.Diags.Warnf(pos, "", n.Code, noteHint(n.Code), "%s", n.Msg)
	}
	if r.Diags.HasErrors() {
		r.Diags = r.Diags.Sort()
		return r
	}
	if len(cmd.Args) == 0 {
		if len(cmd.Scripts) > 0 {
			// A wrapper that passes options to another script: the
			// training command is in that one.
			sc := cmd.Scripts[0]
			others := ""
			if n := len(cmd.Scripts) - 1; n > 0 {
				others = fmt.Sprintf(" (and %d more command(s) that run scripts)", n)
			}
			r.Diags.Errorf(diag.Pos{File: o.File, Line: sc.Line, Column: max(sc.Col, 1)}, "", "import-no-command",
				"import the script that runs the training program (its torchrun or python command), or the program's argument list; the reader does not follow one script into another",
				"no training command found: no command runs a .py program with options; the command here runs %s with options%s", sc.Text, others)
			return r
		}
		r.Diags.Errorf(diag.Pos{File: o.File, Line: 1, Column: 1}, "", "import-no-command",
			"give the arguments of pretrain_gpt.py: one per line, or the command line that runs it",
			"no training command found: no command runs a .py program with options, and no line starts with an option")
		return r
	}
	// The program's own place where the reader knows it, else the first
	// argument's.
	atProgram := at(0)
	if cmd.ProgramLine > 0 {
		atProgram = diag.Pos{File: o.File, Line: cmd.ProgramLine, Column: max(cmd.ProgramCol, 1)}
	}
	if inferenceProgram(cmd.Program) {
		r.Diags.Errorf(atProgram, "", "import-not-training",
			"import the arguments of the training run (pretrain_gpt.py) that made the checkpoint: parc plans training",
			"the command runs %s, which generates text from a trained model (inference, a text-generation server), not a training run: nothing is imported", cmd.Program)
		return r
	}
	if model, ok := notDecoderProgram(cmd.Program); ok {
		r.Diags.Errorf(atProgram, "", "import-not-decoder",
			"import the arguments of a pretrain_gpt.py run: parc plans decoder-only transformers, not encoder, encoder-decoder or multimodal models",
			"the training command runs %s, which trains %s: a spec describes one decoder stack (its layers, heads and sequence), so nothing is imported", cmd.Program, model)
		return r
	}
	ns, errs := mg.Parse(words)
	// A program other than pretrain_gpt.py may add options of its own to
	// Megatron's parser (an extra_args_provider): when every argument the
	// parser rejects is such an option or a value after one, the rest is
	// imported and those are carried verbatim.
	var own [][]int
	if len(errs) > 0 && cmd.Program != "" && path.Base(cmd.Program) != "pretrain_gpt.py" {
		if groups, ok := programOptions(errs, words); ok {
			// Only where the rest is a Megatron training command (it
			// gives the model): a program with arguments of its own kind
			// (a NeMo or Megatron-Bridge script) stays refused.
			if rest, ok := parseWithout(words, groups); ok && givesModel(rest) {
				ns, errs, own = rest, nil, groups
			}
		}
	}
	for _, g := range own {
		var vals []string
		for _, j := range g[1:] {
			vals = append(vals, strconv.Quote(words[j]))
		}
		with := ""
		if len(vals) > 0 {
			with = " with " + strings.Join(vals, " ")
		}
		r.Diags.Warnf(at(g[0]), "launch.extra_args", "import-program-option",
			"check that "+cmd.Program+" takes it: parc's checks and estimates do not see it",
			"%q%s is not an option of pretrain_gpt.py's parser: carried in launch.extra_args as an option %s adds (its values as written)", words[g[0]], with, cmd.Program)
	}
	for _, u := range parseErrors(errs, words, cmd.Args, cmd.Program) {
		r.Diags.Errorf(at(u.index), "", u.code, u.hint, "%s", u.msg)
	}
	if len(errs) > 0 {
		return r
	}
	for _, rej := range megatronRejects(ns) {
		r.Diags.Errorf(at(rej.index), "", "import-megatron-rejects", rej.hint, "%s", rej.msg)
	}
	if r.Diags.HasErrors() {
		r.Diags = r.Diags.Sort()
		return r
	}

	s := theSchema()
	m := &mapper{ns: ns, claimed: map[string]bool{}, s: s}
	m.explicit()
	if cmd.Program != "" && cmd.Program != "pretrain_gpt.py" {
		// The program as the input runs it (/workspace/Megatron-LM/pretrain_gpt.py).
		m.out = append(m.out, assignment{path: "launch.program", value: cmd.Program, note: "the input's training program"})
	}
	for _, a := range slurmAssignments(cmd.Sbatch) {
		m.out = append(m.out, a)
	}
	if ct := cmd.Container; ct != nil {
		if keptAsWritten(ct.Image) || keptAsWritten(ct.Workdir) || slices.ContainsFunc(ct.Mounts, keptAsWritten) {
			r.Diags.Warnf(diag.Pos{File: o.File, Line: max(ct.Line, 1), Column: 1}, "launch.container", "import-unresolved",
				"set launch.container (image, mounts, workdir) to the container the job runs in",
				"srun's container (--container-image %s) holds what cannot be known without running the script: launch.container is left out", ct.Image)
		} else {
			note := fmt.Sprintf("srun's container (line %d)", ct.Line)
			m.out = append(m.out, assignment{path: "launch.container.image", value: ct.Image, note: note, line: ct.Line, col: 1})
			if len(ct.Mounts) > 0 {
				var ms []any
				for _, x := range ct.Mounts {
					ms = append(ms, x)
				}
				m.out = append(m.out, assignment{path: "launch.container.mounts", value: ms, note: note, line: ct.Line, col: 1})
			}
			if ct.Workdir != "" {
				m.out = append(m.out, assignment{path: "launch.container.workdir", value: ct.Workdir, note: note, line: ct.Line, col: 1})
			}
		}
	}
	if cmd.Workdir != "" {
		// The program and every relative path resolve against the
		// directory the script changes to first.
		m.out = append(m.out, assignment{path: "launch.workdir", value: cmd.Workdir,
			note: fmt.Sprintf("the directory the input changes to before the training command (line %d)", cmd.WorkdirLine)})
	}
	if cmd.Program != "" && path.Base(cmd.Program) != "pretrain_gpt.py" {
		// Other entry points add options of their own; parc passes the
		// arguments to the same program.
		r.Diags.Warnf(atProgram, "launch.program", "import-program", "check the spec against that program's own options",
			"the training command runs %s, not pretrain_gpt.py: its arguments are read with pretrain_gpt.py's parser", cmd.Program)
	}
	m.generic(slices.Sorted(maps.Keys(ns.Values)))
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		m.out = append(m.out, assignment{path: "launch.env." + k, value: o.Env[k], note: "the run's environment"})
	}
	// The environment the script gives the training command (what it
	// exports, the command's NAME=value prefixes): launch.env carries it,
	// and parc's launch scripts export it to every worker.
	for _, e := range cmd.Env {
		if _, given := o.Env[e.Name]; given {
			continue
		}
		pos := diag.Pos{File: o.File, Line: e.Line, Column: max(e.Col, 1)}
		if why := envNotCarried(e); why != "" {
			r.Diags.Warnf(pos, "launch.env", "import-env",
				"set launch.env."+e.Name+" to the value the job needs, or leave it to the cluster's environment",
				"the input gives the training command %s=%q, which launch.env does not carry: %s", e.Name, e.Value, why)
			continue
		}
		m.out = append(m.out, assignment{path: "launch.env." + e.Name, value: e.Value,
			note: fmt.Sprintf("the input's environment (line %d)", e.Line), line: e.Line, col: e.Col})
	}
	if b := func(d string) bool { x, _ := ns.Values[d].(bool); return x }; ns.Values["eval_interval"] == nil && !b("full_validation") && !b("skip_train") {
		r.Diags.Warnf(at(0), "logging.eval_interval", "import-no-eval-interval", "set logging.eval_interval (parc's default is 1000)",
			"the arguments leave --eval-interval out: Megatron keeps None and stops at start-up dividing train_iters by it (training.py, get_train_valid_test_num_samples); the spec writes eval_interval: null to keep the arguments as they are")
	}
	// Dests the input sets that no field took: their arguments, verbatim.
	extra, unclaimed := map[string]bool{}, map[string]bool{}
	for d := range ns.Set {
		if !m.claimed[d] {
			extra[d], unclaimed[d] = true, true
		}
	}

	world, nodes, gpn := 0, o.Nodes, o.GPUsPerNode
	if gpn == 0 {
		gpn = cmd.GPUsPerNode
	}
	if nodes == 0 {
		nodes = cmd.Nodes
	}
	cluster := o.Cluster
	if cluster == "" {
		cluster = DefaultCluster
		r.Diags.Warnf(at(0), "cluster", "import-cluster-assumed", "name the cluster with --cluster PRESET",
			"the arguments do not say which GPUs run them: the spec uses the %s preset", cluster)
	}
	presetGPN := clusterGPUs(cluster)
	if gpn == 0 {
		gpn = presetGPN
	}
	derived := func(world int) []assignment {
		out := slices.Clone(m.out)
		if sched, ok := ns.Values["step_batch_size_schedule"].(string); ok && ns.Values["global_batch_size"] == nil {
			// The schedule gives the batch sizes (Megatron takes no
			// --global-batch-size beside it); global_batch is its first.
			seq, _ := asInt(ns.Values["seq_length"])
			if gbs, ok := firstScheduledBatch(sched, int(seq)); ok {
				out = append(out, assignment{path: "train.global_batch", value: gbs, dests: []string{"step_batch_size_schedule"},
					note: "the first size of --step-batch-size-schedule (parc writes no --global-batch-size beside it)"})
			}
		} else if ns.Values["global_batch_size"] == nil {
			// Megatron derives it: micro_batch_size · data-parallel size.
			get := func(d string) int64 { n, _ := asInt(ns.Values[d]); return max(n, 1) }
			if mp := get("tensor_model_parallel_size") * get("pipeline_model_parallel_size") * get("context_parallel_size"); int64(world)%mp == 0 {
				out = append(out, assignment{path: "train.global_batch", value: get("micro_batch_size") * (int64(world) / mp)})
			}
		}
		return out
	}
	if nodes == 0 {
		// The fewest nodes the degrees and the global batch fit, and, of
		// those tried (doubling), the first where parc's estimate fits memory.
		cands := nodeCandidates(ns, gpn)
		nodes = cands[0]
		for i, tries := 0, 0; i < len(cands) && tries < 8; tries++ {
			spec := render(derived(cands[i]*gpn), ns, cmd, map[string]bool{}, renderOptions{cluster: cluster, nodes: cands[i], gpn: gpn, presetGPN: presetGPN, preset: false, file: o.File})
			if _, ds, _ := compile(spec); !slices.Contains(ds.Codes(), "memory-exceeds-gpu") {
				nodes = cands[i]
				break
			}
			next := i + 1
			for next < len(cands) && cands[next] < 2*cands[i] {
				next++
			}
			i = next
		}
		r.Diags.Warnf(at(0), "cluster.nodes", "import-nodes-assumed", "give the job's node count with --nodes N",
			"the arguments do not say how many nodes run them: %d node(s) of %d GPUs, the fewest the parallel degrees and the global batch fit (and parc's memory estimate, where a few more nodes make it fit)", nodes, gpn)
	}
	world = nodes * gpn
	r.World = world
	m.out = derived(world)
	var spec []byte
	var compiled []string
	var cdiags diag.List
	var env map[string]string
	usePreset := true
	for range 4 {
		spec = render(m.out, ns, cmd, extra, renderOptions{cluster: cluster, nodes: nodes, gpn: gpn, presetGPN: presetGPN, preset: usePreset, file: o.File, own: own})
		compiled, cdiags, env = compile(spec)
		if compiled == nil && usePreset && hasLoadError(cdiags) {
			usePreset = false // the preset cannot take the overrides: write the model inline
			continue
		}
		if compiled == nil {
			break
		}
		cns, perrs := mg.Parse(withoutOwn(compiled, words, own))
		if len(perrs) > 0 {
			break
		}
		diffs := Compare(ns, cns, world)
		grew := false
		for d := range extra {
			if parcWrites(compiled, d) {
				// parc writes this dest itself: an extra argument would
				// conflict; a different value is reported below
				delete(extra, d)
				grew = true
			}
		}
		for _, d := range diffs {
			if _, set := ns.Set[d.Dest]; set && !extra[d.Dest] {
				if _, emitted := cns.Set[d.Dest]; !emitted {
					extra[d.Dest] = true // parc leaves it at Megatron's default: pass it through
					grew = true
				}
			}
		}
		if !grew {
			r.Diffs = diffs
			break
		}
	}
	r.Spec = spec
	r.Compiled = compiled
	r.Env = env

	// What the compile says, at the input's lines.
	lineOfPath := func(p string) int {
		for _, a := range m.out {
			if a.path == p || strings.HasPrefix(p, a.path+".") || strings.HasPrefix(a.path, p+".") {
				for _, d := range a.dests {
					if s, ok := ns.Set[d]; ok {
						return s.Index
					}
				}
			}
		}
		return -1
	}
	// A field the input's environment gives is blamed at its line; a check
	// of the whole launch.env at the line of the variable it names.
	posOf := func(d diag.Diagnostic) diag.Pos {
		for _, a := range m.out {
			if a.line == 0 {
				continue
			}
			name, env := strings.CutPrefix(a.path, "launch.env.")
			if a.path == d.Path || strings.HasPrefix(d.Path, a.path+".") ||
				env && d.Path == "launch.env" && regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).MatchString(d.Message) {
				return diag.Pos{File: o.File, Line: a.line, Column: max(a.col, 1)}
			}
		}
		return at(lineOfPath(d.Path))
	}
	for _, d := range cdiags {
		pos := posOf(d)
		if strings.HasPrefix(d.Path, "launch.extra_args") {
			pos = at(extraArgIndex(d.Message, ns))
		}
		d.File, d.Line, d.Column = pos.File, pos.Line, pos.Column
		d.EndLine, d.EndColumn = pos.Line, pos.Column
		d.Related = nil // places in the generated spec, not in the input
		r.Diags = append(r.Diags, d)
	}
	for _, d := range slices.Sorted(maps.Keys(extra)) {
		s := ns.Set[d]
		if paths := mg.SpecFields[d]; len(paths) == 1 && unclaimed[d] {
			// The schema has the field, but not this value
			// (--moe-router-score-function sqrtsoftplus:
			// model.moe.score_function takes softmax and sigmoid).
			r.Diags.Warnf(at(s.Index), "launch.extra_args", "import-extra-arg",
				"keep it as an extra argument: parc's estimates and checks do not see it",
				"%s %s is not a value %s takes: carried in launch.extra_args", s.Option, mg.Repr(ns.Values[d]), paths[0])
			continue
		}
		r.Diags.Warnf(at(s.Index), "launch.extra_args", "import-extra-arg",
			"keep it as an extra argument, or give the schema a field for it",
			"%s has no spec field: carried in launch.extra_args", s.Option)
	}
	for _, d := range r.Diffs {
		i := -1
		if s, ok := ns.Set[d.Dest]; ok {
			i = s.Index
		}
		r.Diags.Warnf(at(i), "", "import-not-round-trip", "edit the spec, or keep the original arguments for this run",
			"the spec cannot reproduce %s: the input gives Megatron %s, parc compile gives %s", d.Dest, mg.Repr(d.Want), mg.Repr(d.Got))
	}
	r.Diags = r.Diags.Sort()
	return r
}

func noteHint(code string) string {
	if code == "import-unresolved" {
		return "assign the variable in the script, or replace it with its value; the spec keeps the text as written"
	}
	return "check the imported spec against the run you mean"
}

// parseError is one of Megatron's parser's complaints about the input's
// arguments, as the import reports it.
type parseError struct {
	index           int
	code, msg, hint string
}

// parseErrors turns the parser's errors into one diagnostic per argument at
// fault, in the parser's order. argparse reports every argument it does not
// know in one message ("unrecognized arguments: " and the lot); each unknown
// option gets its own, which names it alone with the words after it that
// are not options (its values, as argparse leaves them unparsed beside it:
// unknownArgs' groups), and a word after no unknown option gets one of its
// own: a piece of a value an unquoted expansion split (the hint says how to
// quote) or a stray word. When the program is not pretrain_gpt.py, the
// unknown options may be its own (an extra_args_provider adds them to
// Megatron's parser), and the hint says how a spec carries them.
func parseErrors(errs []mg.ParseError, words []string, args []Word, program string) []parseError {
	groups, stray, _ := unknownArgs(errs, words)
	head := map[int][]int{}
	for _, g := range groups {
		head[g[0]] = g
	}
	var out []parseError
	for _, e := range errs {
		i := e.Index
		g, isHead := head[i]
		switch {
		case isHead:
			var vals []string
			for _, j := range g[1:] {
				vals = append(vals, strconv.Quote(words[j]))
			}
			after := ""
			if len(vals) > 0 {
				after = fmt.Sprintf(" (and %s after it)", strings.Join(vals, ", "))
			}
			hint := "check the spelling against Megatron-LM's arguments.py (pretrain_gpt.py's parser)"
			if base := path.Base(program); program != "" && base != "pretrain_gpt.py" {
				hint = fmt.Sprintf("if %s adds this option to Megatron's (an extra_args_provider), take it and its values out of the input, import the rest, and give them back in the spec's launch.extra_args with the option named in launch.extension_args", program)
			}
			out = append(out, parseError{i, "import-unknown-option",
				fmt.Sprintf("Megatron's parser rejects %q%s: pretrain_gpt.py's parser has no such option", words[i], after), hint})
		case slices.Contains(stray, i):
			hint := "remove it, or give it to the option it belongs to"
			if i < len(args) && args[i].split {
				hint = "this argument is a piece of one value that an unquoted expansion split at its blanks, as bash does: quote the expansion (\"${NAME[@]}\", \"$NAME\") to keep the value one argument"
			}
			out = append(out, parseError{i, "import-unknown-option",
				fmt.Sprintf("Megatron's parser rejects %q: no option takes it as a value", words[i]), hint})
		case unrecognized(e, words):
			// a value of an unknown option: named with it
		default:
			out = append(out, parseError{i, "import-bad-argument", fmt.Sprintf("Megatron's parser rejects %q: %s", words[i], e.Message),
				"give the option the number and kind of values Megatron's parser takes"})
		}
	}
	return out
}

// unrecognized reports that the parser rejects a word of the list because
// it knows no such argument (argparse's "unrecognized arguments").
func unrecognized(e mg.ParseError, words []string) bool {
	return strings.HasPrefix(e.Message, "unrecognized arguments") && e.Index >= 0 && e.Index < len(words)
}

// unknownArgs sorts the words the parser rejects as unrecognized: groups,
// each an unknown option then the unknown words after it that are not
// options (its values), and stray, the unknown words after no unknown
// option, all by index; other reports whether it rejects anything else (a
// bad value).
func unknownArgs(errs []mg.ParseError, words []string) (groups [][]int, stray []int, other bool) {
	unknown := map[int]bool{}
	for _, e := range errs {
		if !unrecognized(e, words) {
			other = true
			continue
		}
		unknown[e.Index] = true
	}
	for _, i := range slices.Sorted(maps.Keys(unknown)) {
		switch {
		case strings.HasPrefix(words[i], "-"):
			groups = append(groups, []int{i})
		case len(groups) > 0 && slices.Contains(groups[len(groups)-1], i-1):
			groups[len(groups)-1] = append(groups[len(groups)-1], i)
		default:
			stray = append(stray, i)
		}
	}
	return groups, stray, other
}

func hasLoadError(ds diag.List) bool {
	for _, d := range ds {
		if d.Severity == diag.Error && (strings.HasPrefix(d.Code, "schema") || strings.Contains(d.Code, "conflict") || d.Code == "load") {
			return true
		}
	}
	return ds.HasErrors()
}

// compile runs parc compile on the spec in memory: the arguments parc gives
// Megatron for it (also when a check of parc's refuses the plan, so the
// round trip is verified either way; nil when the spec does not load), and
// compile's diagnostics.
func compile(spec []byte) ([]string, diag.List, map[string]string) {
	src := compiler.Source{Path: "imported.cue", Data: spec}
	res, diags := load.Load(src)
	if res == nil || diags.HasErrors() {
		return nil, diags, nil
	}
	s, ds := res.Decode()
	if s == nil {
		return nil, append(diags, ds...), nil
	}
	p, _ := resolve.Resolve(src.Path, s, res.Locator(), nil)
	args, _ := mg.Args(p, res.Locator())
	_, files, cds := compiler.Compile(src, compiler.Options{})
	if b, ok := files[compiler.ArgsFile]; ok {
		args = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	var lj struct {
		Env map[string]string `json:"env"`
	}
	if b, ok := files[compiler.LaunchJSON]; ok {
		_ = json.Unmarshal(b, &lj)
	}
	return args, cds, lj.Env
}

// clusterGPUs reads gpus_per_node from a cluster preset (8 if unknown).
func clusterGPUs(name string) int {
	v, ok := clusterPreset(name)["gpus_per_node"]
	if !ok {
		return 8
	}
	n, _ := asInt(v)
	return int(n)
}

// nodeCandidates lists, ascending, the node counts whose GPU count the
// model-parallel sizes divide and whose data-parallel size divides the global
// batch (at least one: 1).
func nodeCandidates(ns *mg.Namespace, gpn int) []int {
	get := func(d string, def int64) int64 {
		if n, ok := asInt(ns.Values[d]); ok && n > 0 {
			return n
		}
		return def
	}
	tp, pp, cp := get("tensor_model_parallel_size", 1), get("pipeline_model_parallel_size", 1), get("context_parallel_size", 1)
	ep, etp := get("expert_model_parallel_size", 1), get("expert_tensor_parallel_size", tp)
	mbs, gbs := get("micro_batch_size", 1), get("global_batch_size", 0)
	var out []int
	for n := 1; n <= 1<<16 && len(out) < 64; n++ {
		w := int64(n * gpn)
		if w%(tp*pp*cp) != 0 || w%(etp*ep*pp) != 0 {
			continue
		}
		dp := w / (tp * pp * cp)
		if gbs > 0 && gbs%(mbs*dp) != 0 {
			continue
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		out = []int{1}
	}
	return out
}

// parcWrites reports whether the compiled arguments set dest besides the
// one time launch.extra_args does.
func parcWrites(compiled []string, dest string) bool {
	n := 0
	for _, w := range compiled {
		name, _, _ := strings.Cut(w, "=")
		if o, ok := mg.Options[name]; ok && o.Dest == dest {
			n++
		}
	}
	return n >= 2
}

var extraArgRE = regexp.MustCompile(`extra_args\[\d+\] (--[^ =]+)`)

// extraArgIndex finds the input argument a diagnostic about
// launch.extra_args[i] names ("extra_args[4] --mock-data ..."): the index
// of the option in the input, or -1.
func extraArgIndex(msg string, ns *mg.Namespace) int {
	m := extraArgRE.FindStringSubmatch(msg)
	if m == nil {
		return -1
	}
	if o, ok := mg.Options[m[1]]; ok {
		if s, ok := ns.Set[o.Dest]; ok {
			return s.Index
		}
	}
	return -1
}

type rejection struct {
	index     int // the input argument concerned
	msg, hint string
}

// megatronRejects lists what Megatron asserts about arguments a spec has
// one way to say, so parc could not write the input's form even if it
// wanted to, and Megatron stops on it: validate_args
// (megatron/training/arguments.py at d98e8a64) on the virtual pipeline
// arguments, and core_transformer_config_from_args (argument_utils.py) on
// the activation flags.
func megatronRejects(ns *mg.Namespace) []rejection {
	var out []rejection
	set := func(d string) (mg.Setting, bool) {
		s, ok := ns.Set[d]
		return s, ok && ns.Values[d] != nil
	}
	// Rule S17: --squared-relu and --quick-geglu each "assert not
	// args.swiglu".
	if sw, ok := set("swiglu"); ok && ns.Values["swiglu"] == true {
		for _, f := range mg.ActivationFlags {
			if o, ok := set(f.Dest); ok && f.Dest != "swiglu" && ns.Values[f.Dest] == true {
				out = append(out, rejection{max(sw.Index, o.Index), fmt.Sprintf("Megatron rejects %s with --swiglu: core_transformer_config_from_args asserts \"not args.swiglu\" (argument_utils.py)", o.Option),
					"keep one activation flag"})
				break
			}
		}
	}
	var given []string
	idx := -1
	for _, d := range []string{"num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank", "pipeline_model_parallel_layout"} {
		if s, ok := set(d); ok {
			given = append(given, s.Option)
			idx = max(idx, s.Index)
		}
	}
	if len(given) > 1 {
		out = append(out, rejection{idx, fmt.Sprintf("Megatron rejects %s together: \"No more than one of the following arguments can be set at the same time: --num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank, --pipeline-model-parallel-layout\" (validate_args)", strings.Join(given, " and ")),
			"keep one of them: the layout gives the virtual stages itself"})
		return out
	}
	s, ok := set("num_layers_per_virtual_pipeline_stage")
	if !ok {
		return out
	}
	_, first := set("decoder_first_pipeline_num_layers")
	_, last := set("decoder_last_pipeline_num_layers")
	if first || last {
		return append(out, rejection{s.Index, "Megatron rejects --num-layers-per-virtual-pipeline-stage with an uneven pipeline (--decoder-first/last-pipeline-num-layers): \"please use --num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel degree when enable uneven pipeline parallelism\" (validate_args)",
			"give the virtual stages with --num-virtual-stages-per-pipeline-rank"})
	}
	n, _ := asInt(ns.Values["num_layers_per_virtual_pipeline_stage"])
	layers, _ := asInt(ns.Values["num_layers"])
	pp, _ := asInt(ns.Values["pipeline_model_parallel_size"])
	for _, d := range []string{"account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"} {
		if b, _ := ns.Values[d].(bool); b {
			layers++
		}
	}
	switch {
	case pp <= 0 || n <= 0:
	case layers%pp != 0:
		out = append(out, rejection{s.Index, fmt.Sprintf("Megatron rejects --num-layers-per-virtual-pipeline-stage %d: %d layers are not divisible by pp %d (\"number of layers of the model must be divisible pipeline model parallel size\", validate_args)", n, layers, pp),
			"use a pipeline size that divides the layers"})
	case (layers/pp)%n != 0:
		out = append(out, rejection{s.Index, fmt.Sprintf("Megatron rejects --num-layers-per-virtual-pipeline-stage %d: the %d layers per pipeline stage are not divisible by it (\"number of layers per pipeline stage must be divisible number of layers per virtual pipeline stage\", validate_args)", n, layers/pp),
			fmt.Sprintf("use a divisor of %d", layers/pp)})
	}
	return out
}

// firstScheduledBatch is the global batch size of the first phase of a
// --step-batch-size-schedule ("0:384 200B:768 ..."), as Megatron reads it
// (spec.ParseBatchSchedule: entries sorted by their token threshold over the
// sequence length, K/M/B/T suffixes); for a schedule Megatron rejects, the
// first entry as written (parc vet then reports batch-schedule).
func firstScheduledBatch(sched string, seq int) (int64, bool) {
	if ps, err := spec.ParseBatchSchedule(sched, seq); err == nil {
		return ps[0].Batch, true
	}
	f := strings.Fields(sched)
	if len(f) == 0 {
		return 0, false
	}
	_, size, ok := strings.Cut(f[0], ":")
	if !ok {
		return 0, false
	}
	n, err := mg.PyInt(size)
	return n, err == nil && n > 0
}

// sbatchSizes are the #SBATCH options of the job's size and the tasks
// per node, which parc writes itself from the spec (the importer reads the
// size from them: sbatchSize).
var sbatchSizes = []string{"--nodes", "--ntasks", "--ntasks-per-node", "--gpus-per-node", "--gres", "--gpus", "--gpus-per-task"}

// slurmAssignments are the cluster.slurm fields a batch script's #SBATCH
// options give: the string fields submit.sbatch writes as those options
// (slurm.StringOptions), --cpus-per-task and
// --segment as counts, --requeue, and every other option verbatim in
// cluster.slurm.extra (a --signal too: cluster.slurm.preempt_signal_seconds
// would also make parc checkpoint on the signal, which the input's script
// may not); the job's size is parc's to write, and --exclusive is its
// default.
func slurmAssignments(ds []Directive) []assignment {
	var out []assignment
	var extra []any
	extraLine := 0
	at := func(a assignment, d Directive) assignment {
		a.line, a.col, a.note = d.Line, 1, fmt.Sprintf("the input's #SBATCH %s (line %d)", d.Option, d.Line)
		return a
	}
	for _, d := range ds {
		if slices.Contains(sbatchSizes, d.Option) {
			continue
		}
		if f := slurm.StringField(d.Option); f != "" && d.HasValue {
			out = append(out, at(assignment{path: "cluster.slurm." + f, value: d.Value}, d))
			continue
		}
		switch d.Option {
		case "--exclusive":
			if !d.HasValue {
				continue // parc's default
			}
		case "--requeue":
			out = append(out, at(assignment{path: "cluster.slurm.requeue", value: true}, d))
			continue
		case "--no-requeue":
			continue // parc's default
		case "--cpus-per-task", "--segment":
			if n, err := strconv.ParseInt(d.Value, 10, 64); err == nil && n > 0 {
				out = append(out, at(assignment{path: "cluster.slurm." + strings.ReplaceAll(strings.TrimPrefix(d.Option, "--"), "-", "_"), value: n}, d))
				continue
			}
		}
		opt := d.Option
		if d.HasValue {
			opt += "=" + d.Value
		}
		extra = append(extra, opt)
		if extraLine == 0 {
			extraLine = d.Line
		}
	}
	if len(extra) > 0 {
		out = append(out, assignment{path: "cluster.slurm.extra", value: extra, line: extraLine, col: 1,
			note: fmt.Sprintf("the input's other #SBATCH options (from line %d)", extraLine)})
	}
	return out
}

// programOptions are the groups of arguments (an option, then the words
// after it that are not options) that Megatron's parser rejects as
// unrecognized, by index; ok is false when it rejects anything else (a bad
// value, or a word after no unknown option).
func programOptions(errs []mg.ParseError, words []string) (groups [][]int, ok bool) {
	groups, stray, other := unknownArgs(errs, words)
	return groups, len(groups) > 0 && len(stray) == 0 && !other
}

// givesModel reports that an argument list sets the model's layers,
// hidden size and attention heads, as a Megatron training command does.
func givesModel(ns *mg.Namespace) bool {
	for _, d := range []string{"num_layers", "hidden_size", "num_attention_heads"} {
		if _, ok := ns.Set[d]; !ok {
			return false
		}
	}
	return true
}

// parseWithout parses words without the groups' words, with every index
// of the namespace pointing into words; ok is false when the rest does not
// parse either.
func parseWithout(words []string, groups [][]int) (*mg.Namespace, bool) {
	drop := map[int]bool{}
	for _, g := range groups {
		for _, i := range g {
			drop[i] = true
		}
	}
	var rest []string
	var orig []int
	for i, w := range words {
		if !drop[i] {
			rest = append(rest, w)
			orig = append(orig, i)
		}
	}
	ns, errs := mg.Parse(rest)
	if len(errs) > 0 {
		return nil, false
	}
	for d, st := range ns.Set {
		st.Index = orig[st.Index]
		vals := make([]int, len(st.Values))
		for k, j := range st.Values {
			vals[k] = orig[j]
		}
		st.Values = vals
		ns.Set[d] = st
	}
	return ns, true
}

// withoutOwn is the compiled arguments without the program's own options
// carried in launch.extra_args (own: their groups in words), so Megatron's
// parser reads the rest: each group's words, where they follow each other.
func withoutOwn(compiled, words []string, own [][]int) []string {
	out := slices.Clone(compiled)
	for _, g := range own {
		seq := make([]string, len(g))
		for k, i := range g {
			seq[k] = words[i]
		}
		for i := 0; i+len(seq) <= len(out); i++ {
			if slices.Equal(out[i:i+len(seq)], seq) {
				out = slices.Delete(out, i, i+len(seq))
				break
			}
		}
	}
	return out
}

// notDecoder are Megatron-LM's entry points for models that are not one
// decoder stack, with what they train (examples/t5/pretrain_t5.py,
// examples/bert/pretrain_bert.py and pretrain_vlm.py at d98e8a64;
// pretrain_ict.py and pretrain_retro.py in earlier releases). Their
// arguments (--encoder-num-layers, --decoder-seq-length, a BERT binary head)
// describe encoders a spec has no fields for, and pretrain_gpt.py's parser
// reads them as a decoder with fields missing.
var notDecoder = map[string]string{
	"pretrain_t5.py":    "T5, an encoder-decoder model",
	"pretrain_bert.py":  "BERT, an encoder model",
	"pretrain_vlm.py":   "a vision-language model (a vision encoder and a projection before the language decoder)",
	"pretrain_mimo.py":  "a MIMO multimodal model (modality encoders and projections around the language decoder)",
	"pretrain_ict.py":   "an inverse cloze task retriever (two BERT encoders)",
	"pretrain_retro.py": "RETRO, a decoder with a retrieval encoder and cross-attention",
}

// notDecoderDir are the same for entry points whose file name says nothing
// (train.py), by the example directory that holds them at d98e8a64:
// examples/multimodal/train.py trains LLaVA-style and NVLM models (a vision
// encoder before the language model: its model_provider), examples/mimo/train.py
// MIMO models.
var notDecoderDir = map[string]string{
	"multimodal/train.py": "a vision-language model (LLaVA or NVLM: a vision encoder and a projection before the language decoder)",
	"mimo/train.py":       "a MIMO multimodal model (modality encoders and projections around the language decoder)",
}

// inferenceProgram reports that a program generates text instead of
// training: Megatron-LM's inference entry points at d98e8a64
// (examples/inference/…, tools/run_text_generation_server.py,
// tools/run_*_text_generation_server*.py, tools/text_generation_cli.py,
// tools/run_inference_performance_test.py, examples/multimodal/
// run_text_generation.py, generate_samples_gpt.py), by the words their
// names and directories use.
func inferenceProgram(program string) bool {
	p := strings.ToLower(path.Clean(program))
	if strings.Contains(p, "/inference/") || strings.HasPrefix(p, "inference/") {
		return true
	}
	base := path.Base(p)
	for _, w := range []string{"inference", "text_generation", "generate"} {
		if strings.Contains(base, w) {
			return true
		}
	}
	return false
}

// notDecoderProgram says what program trains when it is one of notDecoder's
// or notDecoderDir's entry points.
func notDecoderProgram(program string) (string, bool) {
	if m, ok := notDecoder[path.Base(program)]; ok {
		return m, true
	}
	p := path.Clean(program)
	for suffix, m := range notDecoderDir {
		if p == suffix || strings.HasSuffix(p, "/"+suffix) {
			return m, true
		}
	}
	return "", false
}

// envNotCarried says why a variable of the training command's environment
// cannot go to launch.env: the reader does not know its value, or parc's
// launch scripts set it themselves ("" = it can).
func envNotCarried(e EnvVar) string {
	switch {
	case e.Array:
		return "it is an array, which bash does not export"
	case e.Unknown:
		return "its value holds what the reader cannot know without running the script (a variable it never assigns, $(command), a branch it cannot decide)"
	case slices.Contains(check.ReservedEnv, e.Name):
		return "parc's launch scripts set it themselves (" + strings.Join(check.ReservedEnv, ", ") + ")"
	}
	return ""
}
