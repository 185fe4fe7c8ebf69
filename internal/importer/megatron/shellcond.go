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
// A case … esac takes the first branch whose pattern (literal text, * and ?,
// alternatives with |) matches the subject, as bash does.
// A condition it cannot decide (a variable the script never sets, a file
// test, $(command), a glob pattern) leaves every branch applied, as before,
// with an import-shell note naming the condition.

// ifFrame is one if … fi being read.
type ifFrame struct {
	parent  bool // the enclosing code runs
	taken   bool // a branch whose condition is true has been seen
	active  bool // the branch being read runs
	isCase  bool // case … esac (subject and the position of case)
	subject string
	known   bool // the subject is known
	line    int
	unsure  bool // a branch of this if was not decided: the one being read may not run
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
		if len(l.ifs) == 0 || l.cond != nil || l.ifs[len(l.ifs)-1].isCase {
			return false
		}
		f := &l.ifs[len(l.ifs)-1]
		f.active = f.parent && !f.taken
		l.cond = &condState{line: line, keyword: kw, start: l.i}
	case "then":
		c := l.cond
		if c == nil || len(l.ifs) == 0 || l.ifs[len(l.ifs)-1].isCase {
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
		if len(l.ifs) == 0 || l.cond != nil || l.ifs[len(l.ifs)-1].isCase {
			return false
		}
		f := &l.ifs[len(l.ifs)-1]
		f.active = f.parent && !f.taken
	case "fi":
		if len(l.ifs) == 0 || l.cond != nil || l.ifs[len(l.ifs)-1].isCase {
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

// caseKeyword handles case WORD in and esac; it reports whether it did.
func (l *lexer) caseKeyword(kw string, line, at int) bool {
	switch kw {
	case "case":
		if l.cond != nil {
			return false
		}
		l.blanks()
		notes := len(l.notes)
		l.cond = &condState{} // notes a variable set in an undecided branch
		fields, _ := l.word(false)
		unsure := l.cond.unsure
		l.cond = nil
		for _, n := range l.notes[notes:] {
			if n.Code == "import-unresolved" && unsure == "" {
				unsure = "an expansion the reader cannot know (" + n.Raw + ")"
			}
		}
		l.blanks()
		_, in := l.word(false)
		a := l.active()
		f := ifFrame{parent: a, isCase: true, line: line, known: unsure == "" && len(fields) == 1 && in == "in"}
		if len(fields) == 1 {
			f.subject = fields[0].Text
		}
		if !f.known && a {
			if unsure == "" {
				unsure = "a subject the reader does not read"
			}
			l.note(line, "import-shell", "the case subject `%s` cannot be decided (%s): every branch applies, in the order written",
				strings.TrimSpace(l.src[at:l.i]), unsure)
		}
		l.ifs = append(l.ifs, f)
		l.casePat = true
	case "esac":
		if len(l.ifs) == 0 || !l.ifs[len(l.ifs)-1].isCase {
			return false
		}
		l.ifs = l.ifs[:len(l.ifs)-1]
		l.casePat = false
	default:
		return false
	}
	return true
}

// casePattern reads a case pattern list "(a|b*)" and chooses whether the
// branch after it runs; it reports whether it read one (esac is not).
func (l *lexer) casePattern() bool {
	if rest := l.src[l.i:]; strings.HasPrefix(rest, "esac") && (len(rest) == 4 || strings.IndexByte(" \t\r\n;&|)", rest[4]) >= 0) {
		return false
	}
	l.casePat = false
	f := &l.ifs[len(l.ifs)-1]
	start := l.i
	if l.peek(0) == '(' {
		l.next()
	}
	match, why := 0, ""
	for {
		l.blanks()
		at := l.i
		fields, _ := l.word(false)
		raw := l.src[at:l.i]
		r, w := casePatternMatch(f.subject, fields, raw)
		if r == 1 || (r == -1 && match == 0) {
			match, why = r, w
		}
		l.blanks()
		if l.peek(0) == '|' {
			l.next()
			continue
		}
		if l.peek(0) == ')' {
			l.next()
		} else {
			match, why = -1, "a malformed pattern list"
		}
		break
	}
	switch {
	case !f.parent || f.taken:
		f.active = false
	case !f.known:
		f.active, f.unsure = true, true
	case match == 1:
		f.active, f.taken = true, true
	case match == 0:
		f.active = false
	default:
		f.active, f.unsure = true, true
		l.note(f.line, "import-shell", "the case pattern `%s` cannot be decided (%s): its branch and the others apply, in the order written",
			strings.TrimSpace(l.src[start:l.i]), why)
	}
	return true
}

// casePatternMatch matches a case subject against one pattern: literal text,
// * and ? (bash's pattern matching; [ ] classes and quoted glob characters
// are left undecided).
func casePatternMatch(subject string, fields []Word, raw string) (int, string) {
	if len(fields) != 1 {
		return -1, "a pattern that is not one word"
	}
	p := fields[0].Text
	if strings.ContainsAny(raw, "$`[") || strings.ContainsAny(raw, "\\\"'") && strings.ContainsAny(p, "*?") {
		return -1, "an expansion, a bracket or a quoted glob character in the pattern"
	}
	if strings.ContainsAny(raw, "*?") {
		if globMatch(p, subject) {
			return 1, ""
		}
		return 0, ""
	}
	if p == subject {
		return 1, ""
	}
	return 0, ""
}

// globMatch matches s against p where * is any string and ? any character
// (the usual backtracking to the last *, linear in practice).
func globMatch(p, s string) bool {
	pr, sr := []rune(p), []rune(s)
	i, j, star, mark := 0, 0, -1, 0
	for j < len(sr) {
		switch {
		case i < len(pr) && (pr[i] == '?' || pr[i] == sr[j]):
			i++
			j++
		case i < len(pr) && pr[i] == '*':
			star, mark = i, j
			i++
		case star >= 0:
			i, mark = star+1, mark+1
			j = mark
		default:
			return false
		}
	}
	for i < len(pr) && pr[i] == '*' {
		i++
	}
	return i == len(pr)
}
