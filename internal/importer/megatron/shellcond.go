package megatron

import (
	"strconv"
	"strings"
)

// The reader takes the branch of an if/elif/else that bash would take when
// the condition is decided by what the script itself assigns: [[ … ]],
// [ … ] and test with string = == !=, -z, -n, integer -eq -ne -lt -le -gt
// -ge and !, joined by && and || (bash's `if` and `test` builtins, bash(1)
// "CONDITIONAL EXPRESSIONS" and the POSIX test(1) rules by argument count).
// A condition it cannot decide (a variable the script never sets, a file
// test, $(command), a glob pattern) leaves every branch applied, as before,
// with an import-shell note naming the condition.

// ifFrame is one if … fi being read.
type ifFrame struct {
	parent bool // the enclosing code runs
	taken  bool // a branch whose condition is true has been seen
	active bool // the branch being read runs
	unsure bool // a branch of this if was not decided: the one being read may not run
}

// condState is an if/elif condition being read (up to then).
type condState struct {
	line    int    // the position of if/elif
	keyword string // if or elif
	start   int    // the offset after the keyword
	started bool
	val     int    // -1 undecided, 0 false, 1 true
	op      string // the operator before the next command
	negate  bool   // ! before the current command
	unsure  string // why the current command cannot be decided
	reason  string // why the condition cannot be decided
}

func (l *lexer) active() bool { return len(l.ifs) == 0 || l.ifs[len(l.ifs)-1].active }

// undecided reports whether the code being read runs only in a branch that
// was not decided; what it assigns is then not known exactly.
func (l *lexer) undecided() bool {
	for _, f := range l.ifs {
		if f.unsure {
			return true
		}
	}
	return false
}

// ifKeyword handles if, elif, then, else and fi; it reports whether it did.
func (l *lexer) ifKeyword(kw string, line, at int) bool {
	switch kw {
	case "if":
		if l.cond != nil {
			return false
		}
		a := l.active()
		l.ifs = append(l.ifs, ifFrame{parent: a, active: a})
		l.cond = &condState{line: line, keyword: kw, start: l.i}
	case "elif":
		if len(l.ifs) == 0 || l.cond != nil {
			return false
		}
		f := &l.ifs[len(l.ifs)-1]
		f.active = f.parent && !f.taken
		l.cond = &condState{line: line, keyword: kw, start: l.i}
	case "then":
		c := l.cond
		if c == nil || len(l.ifs) == 0 {
			return false
		}
		l.cond = nil
		f := &l.ifs[len(l.ifs)-1]
		if !c.started {
			c.val, c.reason = -1, "no condition read"
		}
		switch {
		case !f.parent || f.taken:
			f.active = false
		case c.val == 1:
			f.active, f.taken = true, true
		case c.val == 0:
			f.active = false
		default:
			f.active, f.unsure = true, true
			text := strings.ReplaceAll(l.src[c.start:at], "\\\n", " ")
			text = strings.TrimRight(strings.Join(strings.Fields(text), " "), ";")
			l.note(c.line, "import-shell", "the condition `%s` of this %s cannot be decided (%s): its branch and the others apply, in the order written", text, c.keyword, c.reason)
		}
	case "else":
		if len(l.ifs) == 0 || l.cond != nil {
			return false
		}
		f := &l.ifs[len(l.ifs)-1]
		f.active = f.parent && !f.taken
	case "fi":
		if len(l.ifs) == 0 || l.cond != nil {
			return false
		}
		l.ifs = l.ifs[:len(l.ifs)-1]
	default:
		return false
	}
	return true
}

// condAdd adds one command of a condition, joined to the ones before it by
// the operator between them (&& and || have equal precedence, left to right).
func (c *condState) add(words []Word, term string) {
	r, why := testCommand(words)
	if c.unsure != "" {
		r, why = -1, c.unsure
	}
	c.unsure = ""
	if c.negate && r >= 0 {
		r = 1 - r
	}
	c.negate = false
	switch {
	case !c.started || c.op == "\n" || c.op == ";" || c.op == "":
		c.val = r
	case c.op == "&&":
		switch {
		case c.val == 1:
			c.val = r
		case c.val == -1 && r == 0:
			c.val = 0
		}
	case c.op == "||":
		switch {
		case c.val == 0:
			c.val = r
		case c.val == -1 && r == 1:
			c.val = 1
		}
	default:
		c.val, why = -1, "a pipeline or background command"
	}
	if c.val == -1 && c.reason == "" {
		c.reason = why
	}
	c.started = true
	c.op = term
}

// testCommand decides a [[ … ]], [ … ] or test command: 1 true, 0 false,
// -1 undecided with the reason.
func testCommand(words []Word) (int, string) {
	var args []string
	for _, w := range words {
		args = append(args, w.Text)
	}
	dbl := false
	switch {
	case args[0] == "[[" && len(args) > 1 && args[len(args)-1] == "]]":
		dbl, args = true, args[1:len(args)-1]
	case args[0] == "[" && len(args) > 1 && args[len(args)-1] == "]":
		args = args[1 : len(args)-1]
	case args[0] == "test":
		args = args[1:]
	default:
		return -1, "the command " + strconv.Quote(args[0]) + " is not a test the reader evaluates"
	}
	return testArgs(args, dbl)
}

func testArgs(args []string, dbl bool) (int, string) {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	not := func(r int, why string) (int, string) {
		if r < 0 {
			return r, why
		}
		return 1 - r, why
	}
	switch len(args) {
	case 0:
		if dbl {
			return -1, "an empty [[ ]]"
		}
		return 0, ""
	case 1:
		return b(args[0] != ""), ""
	case 2:
		switch args[0] {
		case "!":
			return b(args[1] == ""), ""
		case "-z":
			return b(args[1] == ""), ""
		case "-n":
			return b(args[1] != ""), ""
		}
		return -1, "the test " + args[0] + " (files and options are not read)"
	case 3:
		x, op, y := args[0], args[1], args[2]
		switch op {
		case "=", "==", "!=":
			if dbl && strings.ContainsAny(y, `*?[\`) {
				return -1, "a pattern match"
			}
			if op == "!=" {
				return b(x != y), ""
			}
			return b(x == y), ""
		case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			m, ok1 := integer(x)
			n, ok2 := integer(y)
			if !ok1 || !ok2 {
				return -1, "an integer comparison of " + strconv.Quote(x) + " and " + strconv.Quote(y)
			}
			switch op {
			case "-eq":
				return b(m == n), ""
			case "-ne":
				return b(m != n), ""
			case "-lt":
				return b(m < n), ""
			case "-le":
				return b(m <= n), ""
			case "-gt":
				return b(m > n), ""
			}
			return b(m >= n), ""
		}
		if x == "!" {
			return not(testArgs(args[1:], dbl))
		}
		return -1, "the operator " + op
	case 4:
		if args[0] == "!" {
			return not(testArgs(args[1:], dbl))
		}
	}
	return -1, "a compound test expression"
}

// integer parses a decimal integer as test and [[ ]] both read it (a
// leading zero is octal in [[ ]], so it is left undecided).
func integer(s string) (int64, bool) {
	t := strings.TrimLeft(s, "+-")
	if t == "" || len(t) > 1 && t[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
