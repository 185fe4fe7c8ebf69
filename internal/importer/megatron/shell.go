package megatron

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"parc.dev/parc/internal/check"
	"parc.dev/parc/internal/load"
)

// Word is one argument of the training command, with the line of the input
// it was written on (for an element of a bash array: the element's line).
type Word struct {
	Text string
	Line int
	Col  int   // the column (1-based, in bytes) where the word starts on Line; 0 = unknown
	at   []int // the input line of each byte of Text (a value spread over lines); nil: all on Line
	// split: the word is a later piece of one value that an unquoted
	// expansion split at its blanks (bash splits it the same way).
	split bool
}

func (w Word) lineAt(i int) int {
	if i < len(w.at) {
		return w.at[i]
	}
	return w.Line
}

// Note is something the shell reader could not do exactly as bash would.
type Note struct {
	Line int
	Col  int    // 0 = unknown
	Code string // import-unresolved, import-shell
	Msg  string
	Raw  string // for import-unresolved: the text kept as written
}

// Command is what the reader found: the training program's arguments and
// what the launcher in front of it says about the job's size.
type Command struct {
	Args    []Word
	Program string // the .py entry point, "" for a bare argument list
	// ProgramLine and ProgramCol are where the program is named (0: not
	// known, as for a command built in a variable).
	ProgramLine, ProgramCol int
	// Workdir is the directory the script changes to (cd DIR, the last one
	// before the training command, DIR absolute and known) and WorkdirLine
	// the line of that cd; "" when it changes to none.
	Workdir     string
	WorkdirLine int
	// torchrun: a torchrun-like launcher starts the program (its processes
	// per node are GPUs; srun's or mpirun's tasks per node are not).
	torchrun bool
	// Container is the container srun starts the training command in
	// (pyxis's --container-image, --container-mounts,
	// --container-workdir), nil when it names none.
	Container *Container
	// Sbatch are the batch script's #SBATCH options (sbatchDirectives).
	Sbatch []Directive
	// Scripts are the shell scripts the input runs with options
	// (bash ./run_benchmark.sh --moe-router-force-load-balancing), the
	// script's word each: the reader does not follow them, and the training
	// command may be in one.
	Scripts     []Word
	Nodes       int // torchrun --nnodes (0 = not given)
	GPUsPerNode int // torchrun --nproc_per_node / --nproc-per-node (0 = not given)
	Notes       []Note
	// Env is the environment the script gives the training command: what
	// it exports before it (export NAME=value, or export NAME after an
	// assignment) and the command's own NAME=value prefixes, each with its
	// value there. Sorted by name.
	Env []EnvVar
}

// EnvVar is one variable of the training command's environment.
type EnvVar struct {
	Name  string
	Value string
	Line  int // where the value was assigned
	Col   int
	// Unknown: the value holds an expansion the reader cannot know
	// ($PYTHONPATH, $(hostname)), or was assigned in a branch it could not
	// decide; Value is as written.
	Unknown bool
	// Array: the variable is an array, which bash does not export.
	Array bool
}

// Words is the argument list as text, the form Megatron's parser reads.
func (c Command) Words() []string {
	words := make([]string, len(c.Args))
	for i, w := range c.Args {
		words[i] = w.Text
	}
	return words
}

// Read turns an input into the training command's argument list. Two forms:
//
//   - one argument per line (parc's own megatron.args): the first non-empty
//     line that is not a leading # comment starts with "--", no line that starts with "--" has a blank in it
//     and no line ends with a backslash. Each non-empty line is one argument,
//     taken verbatim.
//   - anything else is read as a bash script (see ReadShell).
func Read(src string) Command { return readInput(src, nil) }

// readInput is Read with a script's positional parameters (ReadShellArgs;
// nil: none given).
func readInput(src string, scriptArgs []string) Command {
	if isArgsFile(src) {
		var c Command
		header := true
		for i, line := range strings.Split(src, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if header && strings.HasPrefix(line, "#") {
				continue
			}
			header = false
			if line != "" {
				c.Args = append(c.Args, Word{Text: line, Line: i + 1, Col: 1})
			}
		}
		return c
	}
	if scriptArgs != nil {
		return ReadShellArgs(src, scriptArgs)
	}
	return ReadShell(src)
}

func isArgsFile(src string) bool {
	first := true
	for line := range strings.Lines(src) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || (first && strings.HasPrefix(line, "#")) {
			continue
		}
		if first && !strings.HasPrefix(line, "--") {
			return false
		}
		first = false
		if strings.HasSuffix(line, "\\") {
			return false
		}
		if strings.HasPrefix(line, "--") && strings.ContainsAny(line, " \t") {
			return false
		}
	}
	return !first
}

// ReadShell reads a bash command line or script the way bash would expand
// the training command, without running anything:
//
//   - words, '…' and "…" quoting, backslash escapes and line continuations,
//     comments, ;, &&, ||, | and & between commands, redirections (dropped);
//   - assignments (NAME=…, export/declare/local NAME=…, arrays NAME=(…) and
//     NAME+=(…)) are applied in the order they are written; $NAME, ${NAME},
//     ${NAME[@]}, ${NAME:-default} (and -, :=, =, :+, +) and $((arithmetic))
//     expand from them, unquoted expansions are split into words;
//   - an if/elif/else whose condition is decided by what the script assigns
//     ([[ ]], [ ] and test with = == != -z -n -eq … and !, && and ||; see
//     shellcond.go), and a case whose subject and patterns (literal, * and ?)
//     are known, run only the branch bash takes; other control flow (an
//     undecidable condition, for, while, functions) is not evaluated:
//     every assignment in every branch applies, in order, and a note says so;
//   - what cannot be known without running the script — a variable the
//     script never assigns (the environment is not read), a positional
//     parameter without a default, $(command) — stays as written
//     ("$DATA_PATH") with an import-unresolved note at its line;
//   - the training command's environment (Command.Env) is what the script
//     exports before it (export NAME=value, or export NAME of an assigned
//     variable; every later value of an exported name) and the command's
//     own NAME=value prefixes.
//
// The training command is the last command that runs a .py program followed
// by options (torchrun … pretrain_gpt.py …, python …, srun … python …); its
// arguments are the words after the program. Without one, the words of the
// commands that start with an option ("--num-layers 32 …") are the list, or
// else the script another shell runs (bash -c "…", written in place or held
// in a variable) gives it. The last cd to a known absolute directory before
// it is the command's Workdir.
func ReadShell(src string) Command { return readShell(src, false, nil, nil) }

// ReadShellArgs is ReadShell with the script's positional parameters: $1,
// $2, … (and $@, $*, $#) expand to args as bash gives a script the words
// after its name.
func ReadShellArgs(src string, args []string) Command {
	return readShell(src, false, slices.Clip(args), nil)
}

// readShell reads src; nested: it is the script another shell runs (bash
// -c), whose environment env holds the exporting script's variables.
func readShell(src string, nested bool, args []string, env map[string][]Word) Command {
	l := &lexer{src: src, line: 1, vars: map[string][]Word{}, unsure: map[string]bool{}, exported: map[string]bool{}, unknownValue: map[string]bool{}}
	for name, v := range env {
		l.vars[name], l.exported[name] = v, true
	}
	if args != nil {
		// Line 0: each word takes the line of the reference that expands it.
		var all []Word
		for i, a := range args {
			l.vars[strconv.Itoa(i+1)] = []Word{{Text: a}}
			all = append(all, Word{Text: a})
		}
		l.vars["@"], l.vars["*"], l.vars["#"] = all, all, []Word{{Text: strconv.Itoa(len(args))}}
		l.positional = true
	}
	var cmds [][]Word
	var marks []int           // envLog's length at each command
	var prefixes [][]envEntry // each command's own NAME=value prefixes
	for !l.eof() {
		if w := l.command(); len(w) > 0 {
			cmds = append(cmds, w)
			marks = append(marks, len(l.envLog))
			prefixes = append(prefixes, l.prefixEnv)
		}
	}
	var c Command
	best := -1
	for i, words := range cmds {
		if i2 := programIndex(words); i2 >= 0 && i2+1 < len(words) && strings.HasPrefix(words[i2+1].Text, "-") {
			best = i
		} else if i2 < 0 {
			if j := scriptIndex(words); j >= 0 && slices.ContainsFunc(words, func(w Word) bool { return strings.HasPrefix(w.Text, "-") }) {
				c.Scripts = append(c.Scripts, words[j])
			}
		}
	}
	if best >= 0 {
		words := cmds[best]
		p := programIndex(words)
		c.Program = words[p].Text
		c.ProgramLine = words[p].Line // packed, as every position until the end
		c.Args = words[p+1:]
		c.Nodes, c.GPUsPerNode = launcherSize(words[:p])
		c.torchrun = hasTorchrun(words[:p])
		c.Container = containerOf(words[:p])
		c.Env = commandEnv(l.envLog[:marks[best]], prefixes[best])
		c.Workdir, c.WorkdirLine = lastCd(cmds[:best])
	} else {
		for _, words := range cmds {
			if strings.HasPrefix(words[0].Text, "--") {
				c.Args = append(c.Args, words...)
			}
		}
	}
	if best < 0 && len(c.Args) == 0 && !nested {
		// The command may be the script another shell runs, written in
		// place (srun … bash -c "cd /opt/megatron && python pretrain_gpt.py
		// …"): the last such command gives it, every word at its place in
		// the input.
		for i := len(cmds) - 1; i >= 0 && c.Program == ""; i-- {
			words := cmds[i]
			for k := len(words) - 1; k >= 1 && c.Program == ""; k-- {
				w := words[k]
				if !shellDashC(words[k-1].Text) || !strings.Contains(w.Text, ".py") {
					continue
				}
				inner := readShell(w.Text, true, nil, l.environment())
				if inner.Program == "" {
					continue
				}
				c.Program, c.Nodes, c.GPUsPerNode, c.torchrun = inner.Program, inner.Nodes, inner.GPUsPerNode, inner.torchrun
				// The launcher around the shell (srun -N 4 … bash -c)
				// gives what the script's own command does not.
				if n, _ := launcherSize(words[:k-1]); c.Nodes == 0 {
					c.Nodes = n
				}
				c.Container = containerOf(words[:k-1])
				c.Workdir, c.WorkdirLine = lastCd(cmds[:i])
				if inner.Workdir != "" {
					c.Workdir, c.WorkdirLine = inner.Workdir, outerPos(w, inner.WorkdirLine, 1)
				}
				if inner.ProgramLine > 0 {
					c.ProgramLine = outerPos(w, inner.ProgramLine, inner.ProgramCol)
				}
				for _, a := range inner.Args {
					c.Args = append(c.Args, Word{Text: a.Text, Line: outerPos(w, a.Line, a.Col), split: a.split})
				}
				for _, n := range inner.Notes {
					n.Line, n.Col = outerPos(w, n.Line, n.Col), 0 // packed, as the rest until the end
					c.Notes = append(c.Notes, n)
				}
				env := map[string]EnvVar{}
				for _, e := range commandEnv(l.envLog[:marks[i]], prefixes[i]) {
					env[e.Name] = e
				}
				for _, e := range inner.Env {
					e.Line = outerPos(w, e.Line, e.Col)
					env[e.Name] = e
				}
				for _, name := range slices.Sorted(maps.Keys(env)) {
					c.Env = append(c.Env, env[name])
				}
			}
		}
	}
	if best < 0 && len(c.Args) == 0 && !nested {
		// The command may be built in a variable and run by another shell
		// (srun bash -c "$TRAINING_CMD", a heredoc to sbatch): the last
		// variable whose text holds a training command gives it, every
		// argument at the variable's assignment.
		for i := len(l.assigned) - 1; i >= 0 && c.Program == ""; i-- {
			val := l.vars[l.assigned[i]]
			if len(val) != 1 || !strings.Contains(val[0].Text, ".py") {
				continue
			}
			inner := readShell(val[0].Text, true, nil, l.environment())
			if inner.Program == "" {
				continue
			}
			c.Program, c.Nodes, c.GPUsPerNode = inner.Program, inner.Nodes, inner.GPUsPerNode
			for _, w := range inner.Args {
				c.Args = append(c.Args, Word{Text: w.Text, Line: val[0].Line})
			}
		}
	}
	if l.control {
		c.Notes = append(c.Notes, Note{Line: l.controlLine, Code: "import-shell", // unpacked below
			Msg: "the script's control flow (for/while/case) is not evaluated: assignments in every branch apply, in the order written"})
	}
	// Only what reaches the training command matters: each reference kept
	// as written is looked up once in the command's text, and at most
	// maxUnresolved of them are reported, then one note for the rest. A
	// real script has a few; 100,000 distinct ones took 17 s to look up one
	// by one in every argument.
	var text string
	reaches := map[string]bool{}
	reported, omitted, firstOmitted := 0, 0, 0
	for _, n := range l.notes {
		if n.Raw == "" {
			c.Notes = append(c.Notes, n)
			continue
		}
		r, known := reaches[n.Raw]
		if !known && len(reaches) < maxUnresolved {
			if text == "" {
				text = strings.Join(c.Words(), "\x00")
			}
			r, known = strings.Contains(text, n.Raw), true
			reaches[n.Raw] = r
		}
		switch {
		case known && !r:
		case known && reported < maxUnresolved:
			reported++
			c.Notes = append(c.Notes, n)
		default:
			if omitted == 0 {
				firstOmitted = n.Line
			}
			omitted++
		}
	}
	if omitted > 0 {
		c.Notes = append(c.Notes, Note{Line: firstOmitted, Code: "import-unresolved",
			Msg: fmt.Sprintf("up to %d more expansions that cannot be known are kept as written and not listed (the first %d are)", omitted, maxUnresolved)})
	}
	// The batch script's directives size the job where the command's
	// launchers do not: its nodes, and the GPUs per node (the tasks per
	// node where srun or mpirun starts the program itself).
	if !nested {
		c.Sbatch = sbatchDirectives(src)
	}
	if !nested && c.Program != "" {
		n, gpus, tasks := sbatchSize(src)
		if c.Nodes == 0 {
			c.Nodes = n
		}
		if c.GPUsPerNode == 0 {
			c.GPUsPerNode = gpus
			if gpus == 0 && !c.torchrun {
				c.GPUsPerNode = tasks
			}
		}
	}
	// Positions to lines and columns.
	if c.ProgramLine != 0 {
		c.ProgramLine, c.ProgramCol = unpack(c.ProgramLine)
	}
	if c.WorkdirLine != 0 {
		c.WorkdirLine, _ = unpack(c.WorkdirLine)
	}
	if c.Container != nil {
		c.Container.Line, _ = unpack(c.Container.Line)
	}
	for i := range c.Scripts {
		c.Scripts[i].Line, c.Scripts[i].Col = unpack(c.Scripts[i].Line)
	}
	for i := range c.Env {
		c.Env[i].Line, c.Env[i].Col = unpack(c.Env[i].Line)
	}
	for i := range c.Notes {
		c.Notes[i].Line, c.Notes[i].Col = unpack(c.Notes[i].Line)
	}
	for i := range c.Args {
		w := &c.Args[i]
		w.Line, w.Col = unpack(w.Line)
		if w.at != nil {
			at := make([]int, len(w.at))
			for j, p := range w.at {
				at[j], _ = unpack(p)
			}
			w.at = at
		}
	}
	return c
}

// environment is what a shell the script starts inherits: its exported
// variables' last values (a value the reader cannot know stays out), with
// no place in the inner script (line 0: the reference's).
func (l *lexer) environment() map[string][]Word {
	env := map[string][]Word{}
	for name := range l.exported {
		if v, ok := l.vars[name]; ok && !l.unknownValue[name] {
			ws := make([]Word, len(v))
			for i, w := range v {
				ws[i] = Word{Text: w.Text}
			}
			env[name] = ws
		}
	}
	return env
}

// commandEnv is the environment a command runs with: the exported values
// of log (the last one of each name) and the command's own prefixes.
func commandEnv(log, prefix []envEntry) []EnvVar {
	last := map[string]envEntry{}
	for _, e := range log {
		last[e.name] = e
	}
	for _, e := range prefix {
		last[e.name] = e
	}
	env := make([]EnvVar, 0, len(last))
	for _, name := range slices.Sorted(maps.Keys(last)) {
		e := last[name]
		v := EnvVar{Name: name, Unknown: e.unknown, Array: len(e.val) != 1}
		if len(e.val) > 0 {
			v.Line = e.val[0].Line
			texts := make([]string, len(e.val))
			for i, w := range e.val {
				texts[i] = w.Text
			}
			v.Value = strings.Join(texts, " ")
		}
		env = append(env, v)
	}
	return env
}

// programIndex is the index of the first word naming a Python program.
func programIndex(words []Word) int {
	for i, w := range words {
		if strings.HasSuffix(path.Base(w.Text), ".py") && !strings.HasPrefix(w.Text, "-") {
			return i
		}
	}
	return -1
}

// lastCd is the directory of the last cd among cmds whose directory is
// absolute and known (not an expansion kept as written), with the cd's
// packed position; "" when there is none. A later cd to a directory the
// reader cannot know hides an earlier one.
func lastCd(cmds [][]Word) (string, int) {
	for i := len(cmds) - 1; i >= 0; i-- {
		w := cmds[i]
		if len(w) != 2 || w[0].Text != "cd" {
			continue
		}
		if d := w[1].Text; strings.HasPrefix(d, "/") && !keptAsWritten(d) {
			return path.Clean(d), w[0].Line
		}
		return "", 0
	}
	return "", 0
}

// keptAsWritten reports that a word holds an expansion the reader kept as
// written ($NAME, ${…}, $(…), `…`): its value is not known.
func keptAsWritten(w string) bool { return strings.ContainsAny(w, "$`") }

// shellDashC reports that a word is a shell's -c (bash -c, sh -lc): the
// next word is a script it runs.
func shellDashC(w string) bool {
	return len(w) >= 2 && w[0] == '-' && w[1] != '-' && strings.HasSuffix(w, "c") && strings.Trim(w[1:], "lxeilc") == ""
}

// outerPos is the input's position (packed, as the reader keeps them until
// it is done) of line and col (1-based) of w's text read on its own: the
// place of that byte where the reader recorded one per byte (a value spread
// over lines), else on w's line after its opening quote.
func outerPos(w Word, line, col int) int {
	off, l := 0, 1
	for off < len(w.Text) && l < line {
		if w.Text[off] == '\n' {
			l++
		}
		off++
	}
	off += max(col-1, 0)
	if w.at != nil && off < len(w.at) {
		return w.at[off]
	}
	line0, col0 := unpack(w.Line)
	return line0<<posBits | min(col0+1+off, 1<<posBits-1)
}

// scriptIndex is the index of the shell script a command runs (bash x.sh,
// ./x.sh, sbatch … x.sh), -1 if it runs none.
func scriptIndex(words []Word) int {
	for i, w := range words {
		if strings.HasSuffix(w.Text, ".sh") && !strings.HasPrefix(w.Text, "-") && !strings.Contains(w.Text, "=") {
			return i
		}
	}
	return -1
}

// launcherSize reads torchrun's (or torch.distributed.run's) node count and
// processes per node from the words in front of the program.
func launcherSize(words []Word) (nodes, perNode int) {
	// The sizes each launcher gives: torchrun's (or torch.distributed.run's,
	// deepspeed's) count processes per node itself; srun's and mpirun's
	// tasks per node are processes only where they start the program
	// without torchrun (under torchrun, srun usually starts one per node).
	var tr, sr, mp struct{ nodes, perNode, total int }
	cur := ""
	atoi := func(v string) int {
		if _, max, elastic := strings.Cut(v, ":"); elastic {
			v = max // torchrun's elastic min:max
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0
		}
		return n
	}
	for i := 0; i < len(words); i++ {
		w := words[i].Text
		if l := launcher(w); l != "" {
			cur = l
			continue
		}
		name, v, inline := strings.Cut(w, "=")
		if !strings.HasPrefix(name, "-") {
			continue
		}
		if !inline && len(name) > 2 && name[1] != '-' && (name[:2] == "-N" || name[:2] == "-n") && cur == "srun" {
			name, v, inline = name[:2], name[2:], true // srun -N4
		}
		if !inline {
			if i+1 >= len(words) {
				continue
			}
			v = words[i+1].Text
		}
		n := atoi(v)
		if n == 0 {
			continue
		}
		switch cur {
		case "torchrun":
			switch name {
			case "--nnodes", "--num_nodes", "--num-nodes":
				tr.nodes = n
			case "--nproc_per_node", "--nproc-per-node", "--num_gpus", "--num-gpus":
				tr.perNode = n
			}
		case "srun":
			switch name {
			case "-N", "--nodes":
				sr.nodes = n
			case "--ntasks-per-node":
				sr.perNode = n
			case "-n", "--ntasks":
				sr.total = n
			}
		case "mpirun":
			switch name {
			case "-np", "-n", "--np", "--n":
				mp.total = n
			case "-npernode", "--npernode", "-N", "-ppn", "--ppn":
				mp.perNode = n
			}
		}
	}
	nodes, perNode = tr.nodes, tr.perNode
	direct := cur != "torchrun" // the program runs under srun or mpirun itself
	for _, l := range []struct{ nodes, perNode, total int }{sr, mp} {
		if l.nodes == 0 && l.perNode > 0 && l.total > 0 && l.total%l.perNode == 0 {
			l.nodes = l.total / l.perNode
		}
		if l.perNode == 0 && l.nodes > 0 && l.total > 0 && l.total%l.nodes == 0 {
			l.perNode = l.total / l.nodes
		}
		if nodes == 0 {
			nodes = l.nodes
		}
		if perNode == 0 && direct {
			perNode = l.perNode
		}
	}
	return nodes, perNode
}

// Container is a container srun starts a command in (pyxis's options).
type Container struct {
	Image, Workdir string
	Mounts         []string
	Line           int // the line of --container-image
}

// containerOf reads pyxis's --container-image, --container-mounts and
// --container-workdir (with = or a blank before the value) from the words
// of the launchers in front of a program; nil without an image.
func containerOf(words []Word) *Container {
	var c Container
	for i, w := range words {
		name, v, inline := strings.Cut(w.Text, "=")
		if !inline {
			if i+1 >= len(words) {
				continue
			}
			v = words[i+1].Text
		}
		switch name {
		case "--container-image":
			c.Image, c.Line = v, w.Line
		case "--container-mounts":
			c.Mounts = strings.Split(v, ",")
		case "--container-workdir":
			c.Workdir = v
		}
	}
	if c.Image == "" {
		return nil
	}
	return &c
}

// launcher is the kind of launcher a word names: "torchrun" (torchrun,
// python -m torch.distributed.run or .launch, deepspeed: processes per node
// are GPUs), "srun", "mpirun" (mpirun, mpiexec), or "".
func launcher(w string) string {
	switch b := path.Base(w); {
	case b == "torchrun" || b == "deepspeed" || w == "torch.distributed.run" || w == "torch.distributed.launch":
		return "torchrun"
	case b == "srun":
		return "srun"
	case b == "mpirun" || b == "mpiexec":
		return "mpirun"
	}
	return ""
}

// hasTorchrun reports that a torchrun-like launcher is among words.
func hasTorchrun(words []Word) bool {
	return slices.ContainsFunc(words, func(w Word) bool { return launcher(w.Text) == "torchrun" })
}

// Directive is one option of a batch script's #SBATCH lines: the option as
// written (-p, --partition), its value (HasValue: it has one, after = or a
// blank), and where the line starts.
type Directive struct {
	Option, Value string
	HasValue      bool
	Line          int
}

// sbatchShort are sbatch's one-letter options that take a value, by their
// long names.
var sbatchShort = map[string]string{"-A": "--account", "-C": "--constraint", "-J": "--job-name", "-N": "--nodes",
	"-c": "--cpus-per-task", "-d": "--dependency", "-e": "--error", "-n": "--ntasks", "-o": "--output",
	"-p": "--partition", "-q": "--qos", "-t": "--time", "-G": "--gpus"}

// sbatchDirectives are the options of a batch script's #SBATCH lines as
// sbatch reads them: lines that start with #SBATCH before the first line
// that is neither blank nor a comment (sbatch stops there), split at
// blanks, a one-letter option's value after it or glued to it (-N4), a long
// option's after = or after it; long options are given by their long names.
func sbatchDirectives(src string) []Directive {
	var out []Directive
	for n, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		rest, ok := strings.CutPrefix(line, "#SBATCH")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		if k := strings.Index(rest, " #"); k >= 0 {
			rest = rest[:k] // a comment after the options
		}
		f := strings.Fields(rest)
		for i := 0; i < len(f); i++ {
			w := f[i]
			if !strings.HasPrefix(w, "-") {
				continue
			}
			d := Directive{Option: w, Line: n + 1}
			switch {
			case strings.HasPrefix(w, "--"):
				if name, v, ok := strings.Cut(w, "="); ok {
					d.Option, d.Value, d.HasValue = name, v, true
				} else if i+1 < len(f) && !strings.HasPrefix(f[i+1], "-") {
					d.Value, d.HasValue = f[i+1], true
					i++
				}
			case len(w) > 2:
				d.Option, d.Value, d.HasValue = w[:2], strings.TrimPrefix(w[2:], "="), true
			case i+1 < len(f) && sbatchShort[w] != "":
				d.Value, d.HasValue = f[i+1], true
				i++
			}
			if long, ok := sbatchShort[d.Option]; ok {
				d.Option = long
			}
			// A quoted value may hold blanks (--job-name="my run").
			if v := d.Value; d.HasValue && v != "" && (v[0] == '"' || v[0] == '\'') {
				q := v[:1]
				for (len(v) < 2 || !strings.HasSuffix(v, q)) && i+1 < len(f) {
					i++
					v += " " + f[i]
				}
				d.Value = strings.TrimSuffix(strings.TrimPrefix(v, q), q)
			}
			out = append(out, d)
		}
	}
	return out
}

// sbatchSize reads the job's size from a batch script's #SBATCH
// directives: nodes (--nodes; a range is not a size), GPUs per node
// (--gpus-per-node, --gres=gpu:[type:]N) and tasks per node
// (--ntasks-per-node), 0 where they say none or a value the reader cannot
// know.
func sbatchSize(src string) (nodes, gpus, tasks int) {
	for _, d := range sbatchDirectives(src) {
		v := d.Value
		switch d.Option {
		case "--gres":
			g, ok := check.GresGPUs(v)
			if !ok {
				continue
			}
			v = g
		case "--gpus-per-node":
			v = v[strings.LastIndex(v, ":")+1:] // [type:]N
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			continue
		}
		switch d.Option {
		case "--nodes":
			nodes = n
		case "--gres", "--gpus-per-node":
			gpus = n
		case "--ntasks-per-node":
			tasks = n
		}
	}
	return nodes, gpus, tasks
}

type lexer struct {
	// positional: the script's positional parameters are given ($1, $@).
	positional  bool
	src         string
	i           int
	line        int
	lineStart   int // the offset of the current line's first byte
	vars        map[string][]Word
	assigned    []string // variable names in the order of their assignments
	notes       []Note
	control     bool
	controlLine int
	heredocs    []heredoc

	term    string // the operator that ended the last command ("\n", ";", "&&", "||", "|", "&", "" at the end)
	ifs     []ifFrame
	cond    *condState      // reading an if/elif condition (up to then)
	casePat bool            // a case pattern list comes next
	unsure  map[string]bool // variables assigned in a branch that was not decided

	expanded  int  // bytes (and words) the expansions have added so far (addExpanded)
	overLimit bool // an expansion was refused: maxExpansion reached

	// The environment: exported names, and a log of the values they take
	// (envLog); readShell notes the log's length at each command, and the
	// training command's environment replays the log up to it (commandEnv).
	exported      map[string]bool
	exporting     bool       // reading an export command
	pendingPrefix []envEntry // NAME=value prefixes of the command being read
	prefixEnv     []envEntry // the last command's NAME=value prefixes
	envLog        []envEntry
	unknownValue  map[string]bool // a variable's value holds an expansion kept as written
}

type envEntry struct {
	name    string
	val     []Word
	unknown bool
}

type heredoc struct {
	marker string
	strip  bool
}

// pos is the cursor's position while lexing: line<<posBits | column; Words
// and Notes hold such positions until ReadShell unpacks them.
func (l *lexer) pos() int { return l.line<<posBits | min(l.i-l.lineStart+1, 1<<posBits-1) }

const posBits = 20

func unpack(p int) (line, col int) { return p >> posBits, p & (1<<posBits - 1) }

func (l *lexer) eof() bool { return l.i >= len(l.src) }

func (l *lexer) peek(k int) byte {
	if l.i+k < len(l.src) {
		return l.src[l.i+k]
	}
	return 0
}

func (l *lexer) next() byte {
	c := l.src[l.i]
	l.i++
	if c == '\n' {
		l.line++
		l.lineStart = l.i
	}
	return c
}

func (l *lexer) note(line int, code, format string, args ...any) {
	l.notes = append(l.notes, Note{Line: line, Code: code, Msg: fmt.Sprintf(format, args...)})
}

// unresolved notes text kept as written because it cannot be expanded.
func (l *lexer) unresolved(line int, raw, why string) {
	l.notes = append(l.notes, Note{Line: line, Code: "import-unresolved", Msg: raw + " " + why + "; kept as written", Raw: raw})
}

var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true, "while": true,
	"until": true, "do": true, "done": true, "case": true, "esac": true, "function": true,
	"{": true, "}": true, "!": true, "[[": true, "]]": true, "select": true,
}

var declarers = map[string]bool{"export": true, "declare": true, "local": true, "readonly": true, "typeset": true}

// command reads one simple command up to its end (newline, ;, &, |) and
// applies its assignments; it returns the command's words.
func (l *lexer) command() []Word {
	notes := len(l.notes)
	l.exporting, l.pendingPrefix = false, nil
	words := l.simpleCommand()
	l.prefixEnv = nil
	if len(words) > 0 && !l.exporting && l.active() {
		l.prefixEnv = l.pendingPrefix
	}
	if c := l.cond; c != nil && len(words) > 0 {
		for _, n := range l.notes[notes:] {
			if n.Code == "import-unresolved" && c.unsure == "" {
				c.unsure = "an expansion the reader cannot know (" + n.Raw + ")"
			}
		}
		c.add(words, l.term)
		return nil
	}
	if !l.active() {
		return nil
	}
	return words
}

// simpleCommand reads one simple command up to its end (newline, ;, &, |)
// and applies its assignments; it returns the command's words.
func (l *lexer) simpleCommand() []Word {
	var words []Word
	prefix := true // still where NAME=value is an assignment
	declarer := false
	for {
		l.blanks()
		if l.eof() {
			l.term = ""
			return words
		}
		c := l.peek(0)
		if l.casePat && len(words) == 0 && c != '\n' && c != '#' && l.casePattern() {
			continue
		}
		switch c {
		case '\n':
			l.next()
			l.readHeredocs()
			l.term = "\n"
			return words
		case ';', '&', '|':
			l.next()
			l.term = string(c)
			if (c == '&' || c == '|' || c == ';') && l.peek(0) == c {
				l.next()
				l.term += string(c)
			}
			if l.term == ";;" && len(l.ifs) > 0 && l.ifs[len(l.ifs)-1].isCase {
				l.casePat = true
			}
			return words
		case '#':
			for !l.eof() && l.peek(0) != '\n' {
				l.next()
			}
			continue
		case '(', ')':
			l.next()
			if l.cond != nil && l.cond.unsure == "" {
				l.cond.unsure = "a parenthesis"
			}
			continue
		case '<', '>':
			l.redirect()
			if l.cond != nil && l.cond.unsure == "" {
				l.cond.unsure = "a redirection or < > comparison"
			}
			continue
		}
		if c >= '0' && c <= '9' && (l.peek(1) == '>' || l.peek(1) == '<') {
			l.next()
			l.redirect()
			continue
		}
		if prefix {
			if name, app, ok := l.assignmentStart(); ok {
				if e, ok := l.assign(name, app); ok {
					l.pendingPrefix = append(l.pendingPrefix, e)
				}
				continue
			}
		}
		line, at := l.pos(), l.i
		// [[ … ]] does not split its words
		fields, literal := l.word(!(l.cond != nil && len(words) > 0 && words[0].Text == "[["))
		if l.i == at {
			l.next()
			continue
		}
		if literal != "" && len(words) == 0 && keywords[literal] {
			if l.ifKeyword(literal, line, at) || l.caseKeyword(literal, line, at) {
				continue
			}
			if l.cond != nil && literal == "[[" {
				words = append(words, fields...)
				prefix = false
				continue
			}
			if l.cond != nil && literal == "!" {
				l.cond.negate = !l.cond.negate
				continue
			}
			if !l.active() {
				continue
			}
			l.control = true
			if l.controlLine == 0 {
				l.controlLine = line
			}
			continue
		}
		if prefix && len(words) == 0 && declarers[literal] {
			declarer = true // export NAME=… : keep reading assignments
			l.exporting = literal == "export"
			continue
		}
		if declarer && len(words) == 0 && strings.HasPrefix(literal, "-") {
			if strings.Contains(literal, "x") && !strings.HasPrefix(literal, "--") {
				l.exporting = true // declare -x, typeset -x, local -x
			}
			continue // declare -a, export -n
		}
		if l.exporting && isName(literal) && l.active() {
			// export NAME: the value it has now, and every later one.
			l.exported[literal] = true
			if v, ok := l.vars[literal]; ok {
				l.envLog = append(l.envLog, envEntry{name: literal, val: v, unknown: l.unknownValue[literal] || l.unsure[literal]})
			}
		}
		prefix = false
		words = append(words, fields...)
	}
}

// blanks skips spaces, tabs and backslash-newline continuations.
func (l *lexer) blanks() {
	for !l.eof() {
		switch {
		case l.peek(0) == ' ' || l.peek(0) == '\t' || l.peek(0) == '\r':
			l.next()
		case l.peek(0) == '\\' && l.peek(1) == '\n':
			l.next()
			l.next()
		case l.peek(0) == '\\' && l.peek(1) == '\r' && l.peek(2) == '\n':
			l.next()
			l.next()
			l.next()
		default:
			return
		}
	}
}

// redirect drops a redirection and its target (> file, 2>&1, <<EOF).
func (l *lexer) redirect() {
	op := l.next()
	isHeredoc := false
	if op == '<' && l.peek(0) == '<' {
		l.next()
		isHeredoc = true
		if l.peek(0) == '<' { // <<< here-string
			l.next()
			isHeredoc = false
		}
	}
	strip := false
	if isHeredoc && l.peek(0) == '-' {
		l.next()
		strip = true
	}
	for !l.eof() && strings.IndexByte(">&|", l.peek(0)) >= 0 {
		if l.peek(0) == '|' && op != '>' {
			break
		}
		l.next()
		if l.src[l.i-1] == '&' {
			break
		}
	}
	l.blanks()
	if l.eof() || strings.IndexByte("\n;|&", l.peek(0)) >= 0 {
		return
	}
	_, literal := l.word(false)
	if isHeredoc {
		l.heredocs = append(l.heredocs, heredoc{strings.Trim(literal, `'"`), strip})
	}
}

// readHeredocs skips the bodies of the here-documents of the line just ended.
func (l *lexer) readHeredocs() {
	for _, h := range l.heredocs {
		for !l.eof() {
			end := strings.IndexByte(l.src[l.i:], '\n')
			line := l.src[l.i:]
			if end >= 0 {
				line = l.src[l.i : l.i+end]
			}
			for range len(line) {
				l.next()
			}
			if !l.eof() {
				l.next()
			}
			t := strings.TrimRight(line, "\r")
			if h.strip {
				t = strings.TrimLeft(t, "\t")
			}
			if t == h.marker {
				break
			}
		}
	}
	l.heredocs = nil
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameChar(c byte) bool  { return isNameStart(c) || c >= '0' && c <= '9' }

// assignmentStart recognises NAME= or NAME+= at the cursor and consumes it.
func (l *lexer) assignmentStart() (name string, appendTo, ok bool) {
	if !isNameStart(l.peek(0)) {
		return "", false, false
	}
	j := l.i
	for j < len(l.src) && isNameChar(l.src[j]) {
		j++
	}
	if j < len(l.src) && l.src[j] == '=' {
		name = l.src[l.i:j]
		l.i = j + 1
		return name, false, true
	}
	if j+1 < len(l.src) && l.src[j] == '+' && l.src[j+1] == '=' {
		name = l.src[l.i:j]
		l.i = j + 2
		return name, true, true
	}
	return "", false, false
}

// assign reads the value of NAME= (a word, or an array in parentheses) and
// returns it as an environment entry (ok false in a branch bash does not
// take); an exported NAME's value goes to the environment's log.
func (l *lexer) assign(name string, appendTo bool) (envEntry, bool) {
	notes := len(l.notes)
	var val []Word
	if l.peek(0) == '(' {
		l.next()
		for {
			l.blanks()
			if l.eof() {
				break
			}
			c := l.peek(0)
			if c == ')' {
				l.next()
				break
			}
			if c == '\n' {
				l.next()
				continue
			}
			if c == '#' {
				for !l.eof() && l.peek(0) != '\n' {
					l.next()
				}
				continue
			}
			at := l.i
			fields, _ := l.word(true)
			val = append(val, fields...)
			if l.i == at {
				l.next() // an operator inside the list: skip it
			}
		}
	} else {
		line := l.pos()
		fields, _ := l.word(false)
		val = []Word{{Text: "", Line: line}}
		if len(fields) > 0 {
			// A scalar assignment is one word: "${ARR[@]}" in it joins
			// the elements with blanks, as bash does.
			w := fields[0]
			if len(fields) > 1 {
				var text strings.Builder
				at := make([]int, 0, len(w.Text))
				for k, f := range fields {
					if k > 0 {
						text.WriteByte(' ')
						at = append(at, f.Line)
					}
					text.WriteString(f.Text)
					for i := range len(f.Text) {
						at = append(at, f.lineAt(i))
					}
				}
				w = Word{Text: text.String(), Line: w.Line, at: at}
			}
			val = []Word{w}
		}
	}
	if !l.active() {
		return envEntry{}, false // in a branch bash does not take
	}
	if l.undecided() {
		l.unsure[name] = true
	}
	unknown := slices.ContainsFunc(l.notes[notes:], func(n Note) bool { return n.Code == "import-unresolved" })
	if appendTo {
		// No other variable shares the array's storage (every value is
		// built afresh), so appending in place keeps NAME+=(…) line after
		// line linear.
		val = append(l.vars[name], val...)
		unknown = unknown || l.unknownValue[name]
	}
	l.vars[name] = val
	l.assigned = append(l.assigned, name)
	if unknown {
		l.unknownValue[name] = true
	} else {
		delete(l.unknownValue, name)
	}
	e := envEntry{name: name, val: val, unknown: unknown || l.unsure[name]}
	if l.exporting {
		l.exported[name] = true
	}
	if l.exported[name] {
		l.envLog = append(l.envLog, e)
	}
	return e, true
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// fieldBuilder collects the fields one shell word expands to.
type fieldBuilder struct {
	fields  []Word
	cur     strings.Builder
	at      []int // the line of each byte of cur
	has     bool  // the current field exists (even if empty: "")
	line    int
	literal strings.Builder // the word with quotes removed, before expansion
	split   bool
	piece   bool // the current field starts with a later piece of a split value
}

func (f *fieldBuilder) add(s string, line int) {
	if !f.has || (f.cur.Len() == 0 && s != "") {
		f.line = line
	}
	f.cur.WriteString(s)
	for range len(s) {
		f.at = append(f.at, line)
	}
	f.has = true
}

// addWord adds the bytes [from, to) of an expanded value, each with its line.
func (f *fieldBuilder) addWord(w Word, from, to int) {
	if !f.has || (f.cur.Len() == 0 && to > from) {
		f.line = w.lineAt(from)
	}
	f.cur.WriteString(w.Text[from:to])
	for i := from; i < to; i++ {
		f.at = append(f.at, w.lineAt(i))
	}
	f.has = true
}

func (f *fieldBuilder) end() {
	if f.has {
		f.fields = append(f.fields, Word{Text: f.cur.String(), Line: f.line, at: f.at, split: f.piece})
	}
	f.cur.Reset()
	f.at = nil
	f.has = false
	f.piece = false
}

// addExpanded adds an expansion's value; unquoted values are split on blanks.
func (f *fieldBuilder) addExpanded(vals []Word, quoted bool) {
	for k, v := range vals {
		if k > 0 {
			f.end()
		}
		if quoted || !f.split {
			f.addWord(v, 0, len(v.Text))
			continue
		}
		blank := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }
		t := v.Text
		if t == "" {
			continue
		}
		if blank(t[0]) {
			f.end()
		}
		first := true
		for i := 0; i < len(t); {
			for i < len(t) && blank(t[i]) {
				i++
			}
			if i >= len(t) {
				break
			}
			j := i
			for j < len(t) && !blank(t[j]) {
				j++
			}
			if !first {
				f.end()
				f.piece = true
			}
			f.addWord(v, i, j)
			first = false
			i = j
		}
		if blank(t[len(t)-1]) {
			f.end()
		}
	}
}

// word reads one shell word at the cursor and returns its fields after
// expansion (split says whether unquoted expansions are split, as for
// command words; assignment values are not split) and its text with quotes
// removed and nothing expanded (to recognise keywords).
func (l *lexer) word(split bool) ([]Word, string) {
	f := &fieldBuilder{split: split}
	start := l.pos()
	f.line = start
	for !l.eof() {
		c := l.peek(0)
		switch c {
		case ' ', '\t', '\r', '\n', ';', '&', '|', '<', '>', '(', ')':
			f.end()
			return f.fields, f.literal.String()
		case '\\':
			p := l.pos()
			l.next()
			if l.eof() {
				f.add("\\", p)
				continue
			}
			d := l.next()
			if d == '\n' {
				continue
			}
			f.add(string(d), p)
			f.literal.WriteByte(d)
		case '\'':
			line := l.pos()
			l.next()
			j := strings.IndexByte(l.src[l.i:], '\'')
			if j < 0 {
				l.note(line, "import-shell", "unterminated ' quote")
				j = len(l.src) - l.i
			}
			s := l.src[l.i : l.i+j]
			for range j {
				l.next()
			}
			if !l.eof() {
				l.next()
			}
			f.add(s, line)
			f.literal.WriteString(s)
		case '"':
			l.doubleQuoted(f)
		case '$':
			l.dollar(f, false)
		case '`':
			line := l.pos()
			l.next()
			j := strings.IndexByte(l.src[l.i:], '`')
			if j < 0 {
				j = len(l.src) - l.i
			}
			s := "`" + l.src[l.i:l.i+j] + "`"
			for range j {
				l.next()
			}
			if !l.eof() {
				l.next()
			}
			l.unresolved(line, s, "(command substitution) is not run")
			f.add(s, line)
		default:
			p := l.pos()
			l.next()
			f.add(string(c), p)
			f.literal.WriteByte(c)
		}
	}
	f.end()
	return f.fields, f.literal.String()
}

func (l *lexer) doubleQuoted(f *fieldBuilder) {
	line := l.pos()
	l.next()
	f.add("", line)
	for {
		if l.eof() {
			l.note(line, "import-shell", `unterminated " quote`)
			return
		}
		c := l.peek(0)
		switch c {
		case '"':
			l.next()
			return
		case '\\':
			l.next()
			if l.eof() {
				continue
			}
			d := l.next()
			switch d {
			case '\n':
			case '$', '`', '"', '\\':
				f.add(string(d), l.pos())
				f.literal.WriteByte(d)
			default:
				f.add("\\"+string(d), l.pos())
				f.literal.WriteString("\\" + string(d))
			}
		case '$':
			l.dollar(f, true)
		default:
			p := l.pos()
			l.next()
			f.add(string(c), p)
			f.literal.WriteByte(c)
		}
	}
}

// dollar expands the $-expression at the cursor into f.
func (l *lexer) dollar(f *fieldBuilder, quoted bool) {
	line := l.pos()
	start := l.i
	l.next() // $
	switch c := l.peek(0); {
	case c == '(' && l.peek(1) == '(':
		l.next()
		l.next()
		body, ok := l.until("))")
		raw := l.src[start:l.i]
		if ok {
			if v, err := l.arith(body, line); err == nil {
				f.add(strconv.FormatInt(v, 10), line)
				return
			}
		}
		l.unresolved(line, raw, "(arithmetic) cannot be evaluated")
		f.add(raw, line)
	case c == '(':
		l.next()
		l.matching('(', ')')
		raw := l.src[start:l.i]
		l.unresolved(line, raw, "(command substitution) is not run")
		f.add(raw, line)
	case c == '{':
		l.next()
		l.braced(f, quoted, start, line)
	case isNameStart(c):
		j := l.i
		for !l.eof() && isNameChar(l.peek(0)) {
			l.next()
		}
		l.expandVar(f, l.src[j:l.i], false, quoted, l.src[start:l.i], line)
	case c >= '0' && c <= '9' || c == '@' || c == '*' || c == '#' || c == '?' || c == '$' || c == '!' || c == '-':
		l.next()
		l.expandVar(f, string(c), false, quoted, l.src[start:l.i], line)
	default:
		f.add("$", line)
	}
}

// until reads up to the delimiter (not included in the result) and skips it.
func (l *lexer) until(delim string) (string, bool) {
	j := strings.Index(l.src[l.i:], delim)
	if j < 0 {
		s := l.src[l.i:]
		for !l.eof() {
			l.next()
		}
		return s, false
	}
	s := l.src[l.i : l.i+j]
	for range j + len(delim) {
		l.next()
	}
	return s, true
}

// matching skips to the closer that balances an opener already read,
// stepping over quotes.
func (l *lexer) matching(open, close byte) {
	depth := 1
	for !l.eof() {
		c := l.next()
		switch c {
		case '\\':
			if !l.eof() {
				l.next()
			}
		case '\'':
			for !l.eof() && l.next() != '\'' {
			}
		case '"':
			for !l.eof() {
				d := l.next()
				if d == '\\' && !l.eof() {
					l.next()
				} else if d == '"' {
					break
				}
			}
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return
			}
		}
	}
}

// braced expands ${…}: ${NAME}, ${NAME[@]}, ${NAME[*]}, ${NAME[i]} and the
// default operators -, :-, =, :=, +, :+; anything else stays as written.
func (l *lexer) braced(f *fieldBuilder, quoted bool, start, line int) {
	j := l.i
	for !l.eof() && isNameChar(l.peek(0)) {
		l.next()
	}
	name := l.src[j:l.i]
	if name == "" && !l.eof() && strings.IndexByte("@*#?$!", l.peek(0)) >= 0 && l.peek(1) == '}' {
		name = string(l.next())
	}
	all, index := false, -1
	if l.peek(0) == '[' {
		k := strings.IndexByte(l.src[l.i:], ']')
		if k > 0 {
			sub := l.src[l.i+1 : l.i+k]
			switch sub {
			case "@", "*":
				all = true
			default:
				if n, err := strconv.Atoi(sub); err == nil && n >= 0 {
					index = n
				} else {
					name = ""
				}
			}
			for range k + 1 {
				l.next()
			}
		}
	}
	op := ""
	for _, o := range []string{":-", ":=", ":+", ":?", "-", "=", "+", "?"} {
		if strings.HasPrefix(l.src[l.i:], o) {
			op = o
			break
		}
	}
	if name == "" || (op == "" && l.peek(0) != '}') {
		l.matching('{', '}')
		raw := l.src[start:l.i]
		l.unresolved(line, raw, "is not expanded (only the ${NAME}, ${NAME[@]} and ${NAME:-default} forms are)")
		f.add(raw, line)
		return
	}
	var alt []Word
	if op != "" {
		for range len(op) {
			l.next()
		}
		alt = l.operand(quoted)
	}
	if l.peek(0) == '}' {
		l.next()
	}
	raw := l.src[start:l.i]
	vals, set := l.lookup(name, all, index)
	empty := !set || (len(vals) == 1 && vals[0].Text == "") || len(vals) == 0
	switch op {
	case "":
		l.emit(f, vals, set, quoted, raw, name, line)
	case ":-", "-":
		if (op == ":-" && empty) || (op == "-" && !set) {
			l.addExpanded(f, alt, quoted, raw, line)
		} else {
			l.addExpanded(f, vals, quoted, raw, line)
		}
	case ":=", "=":
		if (op == ":=" && empty) || (op == "=" && !set) {
			l.vars[name] = alt
			l.addExpanded(f, alt, quoted, raw, line)
		} else {
			l.addExpanded(f, vals, quoted, raw, line)
		}
	case ":+", "+":
		if (op == ":+" && !empty) || (op == "+" && set) {
			l.addExpanded(f, alt, quoted, raw, line)
		}
	default: // :? and ?
		l.emit(f, vals, set, quoted, raw, name, line)
	}
}

// operand reads the word after a ${NAME:-…} operator, up to the closing
// brace, expanding what is in it.
func (l *lexer) operand(quoted bool) []Word {
	g := &fieldBuilder{split: false}
	line := l.pos()
	g.add("", line)
	for !l.eof() && l.peek(0) != '}' {
		c := l.peek(0)
		switch c {
		case '\\':
			l.next()
			if !l.eof() {
				d := l.next()
				if d != '\n' {
					g.add(string(d), l.pos())
				}
			}
		case '\'':
			if quoted {
				l.next()
				g.add("'", l.pos())
				continue
			}
			l.next()
			for !l.eof() && l.peek(0) != '\'' {
				g.add(string(l.next()), l.pos())
			}
			if !l.eof() {
				l.next()
			}
		case '"':
			l.doubleQuoted(g)
		case '$':
			l.dollar(g, true)
		default:
			g.add(string(l.next()), l.pos())
		}
	}
	g.end()
	if len(g.fields) == 0 {
		return []Word{{Text: "", Line: line}}
	}
	return g.fields
}

func (l *lexer) lookup(name string, all bool, index int) ([]Word, bool) {
	if l.cond != nil && l.unsure[name] && l.cond.unsure == "" {
		l.cond.unsure = "$" + name + " is assigned in a branch that was not decided"
	}
	v, ok := l.vars[name]
	if !ok {
		return nil, false
	}
	switch {
	case all:
		return v, true
	case index >= 0:
		if index < len(v) {
			return v[index : index+1], true
		}
		return nil, false
	case len(v) == 0:
		return []Word{{Text: "", Line: 0}}, true
	default:
		return v[:1], true
	}
}

// emit adds a variable's value, or keeps the reference and notes it.
func (l *lexer) emit(f *fieldBuilder, vals []Word, set, quoted bool, raw, name string, line int) {
	if !set {
		l.unresolved(line, raw, "is not assigned in the input (the environment is not read)")
		f.add(raw, line)
		return
	}
	vals = slices.Clone(vals)
	for i := range vals {
		if vals[i].Line == 0 {
			vals[i].Line = line
		}
	}
	l.addExpanded(f, vals, quoted, raw, line)
}

// maxExpansion bounds what the script's expansions may add up to, in bytes
// (each word counts wordCost more): eight times the largest input parc reads
// (load.MaxInputBytes). A real launch script expands to a few kilobytes;
// one that doubles a value by references (A=$A$A, A=(${A[@]} ${A[@]})) or
// appends to it line after line would otherwise take time and memory
// exponential or quadratic in its length. Past the bound nothing more is
// expanded: the reference stays as written and the import fails
// (import-expansion-limit).
const maxExpansion = 8 * load.MaxInputBytes

// maxUnresolved is how many references kept as written (import-unresolved)
// an import lists; the rest are counted in one more note.
const maxUnresolved = 100

// wordCost is what one expanded word counts toward maxExpansion beside its
// bytes: about what the reader holds for it (a Word and its line table).
const wordCost = 64

// addExpanded adds an expansion's value to f, unless the script's
// expansions would then add up to more than maxExpansion: the reference
// raw is kept as written instead, and the first time a note says so.
func (l *lexer) addExpanded(f *fieldBuilder, vals []Word, quoted bool, raw string, line int) {
	size := 0
	for _, v := range vals {
		size += len(v.Text) + wordCost
	}
	if l.expanded+size > maxExpansion {
		if !l.overLimit {
			l.overLimit = true
			ref := raw
			if len(ref) > 60 {
				ref = strings.ToValidUTF8(ref[:57], "") + "..."
			}
			l.notes = append(l.notes, Note{Line: line, Code: "import-expansion-limit",
				Msg: fmt.Sprintf("expanding %s would make the script's expansions add up to more than %d MiB (a value doubled by references, or appended to line after line): the reader stops expanding and keeps the references as written", ref, maxExpansion>>20)})
		}
		f.add(raw, line)
		return
	}
	l.expanded += size
	if slices.ContainsFunc(vals, func(v Word) bool { return v.Line == 0 }) {
		// A word from no line of the input (a positional parameter)
		// takes the reference's.
		vals = slices.Clone(vals)
		for i := range vals {
			if vals[i].Line == 0 {
				vals[i].Line = line
			}
		}
	}
	f.addExpanded(vals, quoted)
}

func (l *lexer) expandVar(f *fieldBuilder, name string, all, quoted bool, raw string, line int) {
	vals, set := l.lookup(name, all, -1)
	if name == "@" || name == "*" {
		// Every positional parameter, where the input gives them.
		vals, set = l.lookup(name, true, -1)
		set = set && l.positional
	}
	l.emit(f, vals, set, quoted, raw, name, line)
}

// arith evaluates $((…)) with integers, variables, + - * / % and parentheses.
func (l *lexer) arith(s string, line int) (int64, error) {
	a := &arithParser{s: s, lookup: func(name string) (int64, bool) {
		v, ok := l.vars[name]
		if !ok || len(v) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v[0].Text), 10, 64)
		return n, err == nil
	}}
	v, err := a.expr()
	a.space()
	if err == nil && a.i != len(a.s) {
		err = fmt.Errorf("unexpected %q", a.s[a.i:])
	}
	return v, err
}

type arithParser struct {
	s      string
	i      int
	lookup func(string) (int64, bool)
}

func (a *arithParser) space() {
	for a.i < len(a.s) && (a.s[a.i] == ' ' || a.s[a.i] == '\t') {
		a.i++
	}
}

func (a *arithParser) expr() (int64, error) {
	v, err := a.term()
	for err == nil {
		a.space()
		if a.i >= len(a.s) || (a.s[a.i] != '+' && a.s[a.i] != '-') {
			break
		}
		op := a.s[a.i]
		a.i++
		var w int64
		if w, err = a.term(); err == nil {
			if op == '+' {
				v += w
			} else {
				v -= w
			}
		}
	}
	return v, err
}

func (a *arithParser) term() (int64, error) {
	v, err := a.factor()
	for err == nil {
		a.space()
		if a.i >= len(a.s) || strings.IndexByte("*/%", a.s[a.i]) < 0 {
			break
		}
		op := a.s[a.i]
		a.i++
		var w int64
		if w, err = a.factor(); err != nil {
			break
		}
		switch op {
		case '*':
			v *= w
		default:
			if w == 0 {
				return 0, fmt.Errorf("division by zero")
			}
			if op == '/' {
				v /= w
			} else {
				v %= w
			}
		}
	}
	return v, err
}

func (a *arithParser) factor() (int64, error) {
	a.space()
	if a.i >= len(a.s) {
		return 0, fmt.Errorf("unexpected end")
	}
	c := a.s[a.i]
	switch {
	case c == '(':
		a.i++
		v, err := a.expr()
		a.space()
		if err == nil && (a.i >= len(a.s) || a.s[a.i] != ')') {
			err = fmt.Errorf("missing )")
		}
		a.i++
		return v, err
	case c == '-' || c == '+':
		a.i++
		v, err := a.factor()
		if c == '-' {
			v = -v
		}
		return v, err
	case c >= '0' && c <= '9':
		j := a.i
		for a.i < len(a.s) && a.s[a.i] >= '0' && a.s[a.i] <= '9' {
			a.i++
		}
		return strconv.ParseInt(a.s[j:a.i], 10, 64)
	case c == '$' || isNameStart(c):
		if c == '$' {
			a.i++
		}
		brace := a.i < len(a.s) && a.s[a.i] == '{'
		if brace {
			a.i++
		}
		j := a.i
		for a.i < len(a.s) && isNameChar(a.s[a.i]) {
			a.i++
		}
		name := a.s[j:a.i]
		if brace {
			if a.i >= len(a.s) || a.s[a.i] != '}' {
				return 0, fmt.Errorf("bad ${")
			}
			a.i++
		}
		v, ok := a.lookup(name)
		if !ok {
			return 0, fmt.Errorf("%s is not a known integer", name)
		}
		return v, nil
	}
	return 0, fmt.Errorf("unexpected %q", c)
}
