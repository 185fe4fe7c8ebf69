package megatron

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// defaultsTSV holds the default of every argparse dest of Megatron's parser
// (dest, JSON value), dumped from the parser itself (testdata/dump_defaults.py).
//
//go:embed defaults.tsv
var defaultsTSV string

// Defaults maps each argparse dest of Megatron's parser to its default: nil
// (None), bool, int64, float64, string or []any; enums by their name.
var Defaults = parseDefaults(defaultsTSV)

func parseDefaults(tsv string) map[string]any {
	m := map[string]any{}
	for line := range strings.Lines(tsv) {
		line = strings.TrimRight(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		dest, js, _ := strings.Cut(line, "\t")
		dec := json.NewDecoder(strings.NewReader(js))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			panic(fmt.Sprintf("defaults.tsv: %s: %v", dest, err))
		}
		m[dest] = fromJSON(v)
	}
	return m
}

func fromJSON(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(v), 64)
		return f
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = fromJSON(x)
		}
		return out
	}
	return v
}

// Setting is where an argument list sets a dest.
type Setting struct {
	Option string // the option string as written ("--num-layers")
	Index  int    // index of the option in the argument list
	Values []int  // indexes of the values that follow it (or of the option for --opt=value)
}

// Namespace is what Megatron's argparse parser makes of an argument list:
// every dest with its value (the default where the list does not set it),
// and where each dest was set.
type Namespace struct {
	Values map[string]any
	Set    map[string]Setting
}

// ParseError is one argument argparse would reject.
type ParseError struct {
	Index   int    // the offending element of the argument list
	Option  string // the option it belongs to, if any
	Message string // argparse's wording ("argument --x: expected one argument")
}

func (e ParseError) Error() string { return e.Message }

// Parse replays Megatron's argparse parser (allow_abbrev=False, no
// positionals) on an argument list: option strings, --opt=value, nargs,
// store_true/false, BooleanOptional --x/--no-x, int/float/str and Megatron's
// converters, choices. Unlike argparse it reports every error, not the first.
func Parse(args []string) (*Namespace, []ParseError) {
	ns := &Namespace{Values: map[string]any{}, Set: map[string]Setting{}}
	for d, v := range Defaults {
		ns.Values[d] = v
	}
	var errs []ParseError
	var unknown []int
	afterDashes := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		if afterDashes || !isOptional(w) {
			if w == "--" && !afterDashes {
				afterDashes = true
				continue
			}
			unknown = append(unknown, i)
			continue
		}
		name, explicit, hasExplicit := w, "", false
		o, ok := Options[w]
		if !ok {
			if n, v, found := strings.Cut(w, "="); found {
				if o2, ok2 := Options[n]; ok2 {
					name, explicit, hasExplicit, o, ok = n, v, true, o2, true
				}
			}
		}
		if !ok {
			unknown = append(unknown, i)
			continue
		}
		set := Setting{Option: name, Index: i}
		if o.Action == "Help" {
			errs = append(errs, ParseError{i, name, "argument " + name + ": prints the help and exits"})
			continue
		}
		if !o.TakesValues() {
			if hasExplicit {
				errs = append(errs, ParseError{i, name, fmt.Sprintf("argument %s: ignored explicit argument '%s'", name, explicit)})
				continue
			}
			switch o.Action {
			case "StoreTrue":
				ns.Values[o.Dest] = true
			case "StoreFalse":
				ns.Values[o.Dest] = false
			case "BooleanOptional":
				ns.Values[o.Dest] = !strings.HasPrefix(name, "--no-")
			}
			ns.Set[o.Dest] = set
			continue
		}
		var raw []string
		if hasExplicit {
			raw = []string{explicit}
			set.Values = []int{i}
		} else {
			j := i + 1
			for j < len(args) && !isOptional(args[j]) && args[j] != "--" {
				if o.Nargs == "" || o.Nargs == "?" {
					if len(raw) == 1 {
						break
					}
				}
				if n, err := strconv.Atoi(o.Nargs); err == nil && len(raw) == n {
					break
				}
				raw = append(raw, args[j])
				set.Values = append(set.Values, j)
				j++
			}
			i = j - 1
		}
		if msg := arityError(o, len(raw)); msg != "" {
			errs = append(errs, ParseError{set.Index, name, "argument " + name + ": " + msg})
			continue
		}
		var vals []any
		bad := false
		for k, r := range raw {
			v, err := convert(o, r)
			if err != nil {
				at := set.Index
				if k < len(set.Values) {
					at = set.Values[k]
				}
				errs = append(errs, ParseError{at, name, "argument " + name + ": " + err.Error()})
				bad = true
				continue
			}
			vals = append(vals, v)
		}
		if bad {
			continue
		}
		switch {
		case o.Nargs == "" || (o.Nargs == "?" && len(vals) == 1):
			ns.Values[o.Dest] = vals[0]
		case o.Nargs == "?":
			ns.Values[o.Dest] = nil // const: Megatron gives none of its nargs='?' options a const
		default:
			if vals == nil {
				vals = []any{}
			}
			ns.Values[o.Dest] = vals
		}
		ns.Set[o.Dest] = set
	}
	if len(unknown) > 0 {
		var words []string
		for _, i := range unknown {
			words = append(words, args[i])
		}
		for _, i := range unknown {
			errs = append(errs, ParseError{i, "", "unrecognized arguments: " + strings.Join(words, " ")})
		}
	}
	slices.SortStableFunc(errs, func(a, b ParseError) int { return a.Index - b.Index })
	return ns, errs
}

// isOptional reports whether argparse takes w for an option string rather
// than a value (_parse_optional): it starts with '-', is not a lone '-', not
// a negative number (no option of Megatron's looks like one) and has no space.
func isOptional(w string) bool {
	if !strings.HasPrefix(w, "-") || w == "-" {
		return false
	}
	if _, ok := Options[w]; ok {
		return true
	}
	if n, _, ok := strings.Cut(w, "="); ok {
		if _, known := Options[n]; known {
			return true
		}
	}
	if negativeNumber(w) {
		return false
	}
	return !strings.Contains(w, " ")
}

// negativeNumber is argparse's _negative_number_matcher: ^-\d+$|^-\d*\.\d+$.
func negativeNumber(w string) bool {
	s := w[1:]
	if s == "" {
		return false
	}
	intPart, frac, dot := strings.Cut(s, ".")
	digits := func(x string) bool {
		for _, c := range x {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	if !dot {
		return digits(intPart)
	}
	return digits(intPart) && frac != "" && digits(frac)
}

func arityError(o Option, n int) string {
	switch o.Nargs {
	case "":
		if n != 1 {
			return "expected one argument"
		}
	case "+":
		if n == 0 {
			return "expected at least one argument"
		}
	case "?", "*":
	default:
		if k, _ := strconv.Atoi(o.Nargs); n != k {
			return fmt.Sprintf("expected %d arguments", k)
		}
	}
	return ""
}

// convert applies the option's type and checks its choices, as argparse does.
func convert(o Option, raw string) (any, error) {
	var v any
	var err error
	switch o.Type {
	case "int":
		v, err = PyInt(raw)
		if err != nil {
			return nil, fmt.Errorf("invalid int value: '%s'", raw)
		}
	case "float":
		v, err = PyFloat(raw)
		if err != nil {
			return nil, fmt.Errorf("invalid float value: '%s'", raw)
		}
	case "bool":
		v = raw != "" // Python's bool(str)
	case "moe_freq_type", "la_freq_type", "no_rope_freq_type":
		if strings.Contains(raw, "[") {
			v, err = EvalPattern(raw)
		} else {
			v, err = PyInt(raw)
		}
		if err != nil {
			return nil, fmt.Errorf("invalid %s value: '%s'", o.Type, raw)
		}
	case "tuple_type":
		var t []any
		for _, p := range strings.Split(strings.Trim(raw, "()"), ",") {
			n, err := PyInt(p)
			if err != nil {
				return nil, fmt.Errorf("invalid tuple_type value: '%s'", raw)
			}
			t = append(t, n)
		}
		v = t
	default: // str, enum_type_handler (by name), _parse_cuda_graph_modules_arg
		v = raw
	}
	if o.Choices != nil && !choiceOK(o, raw) {
		shown := slices.Clone(o.Choices)
		if o.Type != "int" && o.Type != "float" && o.Type != "enum_type_handler" {
			for i, c := range shown {
				shown[i] = "'" + c + "'" // Python prints the choices' repr
			}
		}
		return nil, fmt.Errorf("invalid choice: '%s' (choose from %s)", raw, strings.Join(shown, ", "))
	}
	return v, nil
}

func choiceOK(o Option, raw string) bool {
	for _, c := range o.Choices {
		if c == raw {
			return true
		}
		// enum choices are listed as Enum.name; the handler looks the name up
		if _, name, ok := strings.Cut(c, "."); ok && o.Type == "enum_type_handler" && name == raw {
			return true
		}
	}
	if o.Type == "enum_type_handler" && strings.HasPrefix(raw, "SIG") {
		return true // --exit-signal: signal.Signals by name; its choices print as numbers
	}
	if o.Type == "int" {
		n, err := PyInt(raw)
		if err == nil {
			return slices.Contains(o.Choices, strconv.FormatInt(n, 10))
		}
	}
	return false
}

// PyInt is Python's int(str): optional sign, surrounding whitespace,
// underscores between digits.
func PyInt(s string) (int64, error) {
	t, err := pyDigits(strings.TrimSpace(s))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(t, 10, 64)
}

// PyFloat is Python's float(str) for decimal numbers, inf and nan.
func PyFloat(s string) (float64, error) {
	t := strings.TrimSpace(s)
	l := strings.ToLower(strings.TrimLeft(t, "+-"))
	switch l {
	case "inf", "infinity", "nan":
		return strconv.ParseFloat(t, 64)
	}
	if strings.ContainsAny(l, "xpn") {
		return 0, fmt.Errorf("invalid float %q", s)
	}
	t, err := pyDigits(t)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(t, 64)
}

// pyDigits removes the underscores Python allows (one, between digits).
func pyDigits(s string) (string, error) {
	if !strings.Contains(s, "_") {
		return s, nil
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	for i := 0; i < len(s); i++ {
		if s[i] == '_' && (i == 0 || i == len(s)-1 || !isDigit(s[i-1]) || !isDigit(s[i+1])) {
			return "", fmt.Errorf("misplaced underscore in %q", s)
		}
	}
	return strings.ReplaceAll(s, "_", ""), nil
}

// EvalPattern evaluates the list expressions Megatron's _eval_pattern
// accepts (digits, commas, brackets, parentheses, + and *), e.g.
// "([0]*3+[1]*58)", into a flat list of ints.
func EvalPattern(s string) ([]any, error) {
	for _, c := range s {
		if !strings.ContainsRune("0123456789,[]()+*", c) {
			return nil, fmt.Errorf("invalid pattern %q", s)
		}
	}
	p := &patternParser{s: s}
	v, err := p.expr()
	if err == nil && p.i != len(s) {
		err = fmt.Errorf("invalid pattern %q", s)
	}
	if err != nil {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("pattern %q is not a list", s)
	}
	return l, nil
}

type patternParser struct {
	s string
	i int
}

const maxPattern = 1 << 20

func (p *patternParser) expr() (any, error) {
	v, err := p.term()
	for err == nil && p.i < len(p.s) && p.s[p.i] == '+' {
		p.i++
		var w any
		if w, err = p.term(); err != nil {
			break
		}
		a, ok1 := v.([]any)
		b, ok2 := w.([]any)
		switch {
		case ok1 && ok2:
			if len(a)+len(b) > maxPattern {
				return nil, fmt.Errorf("pattern too long")
			}
			v = append(slices.Clip(a), b...)
		case !ok1 && !ok2:
			v = v.(int64) + w.(int64)
		default:
			return nil, fmt.Errorf("cannot add a list and a number")
		}
	}
	return v, err
}

func (p *patternParser) term() (any, error) {
	v, err := p.atom()
	for err == nil && p.i < len(p.s) && p.s[p.i] == '*' {
		p.i++
		var w any
		if w, err = p.atom(); err != nil {
			break
		}
		a, ok1 := v.([]any)
		b, ok2 := w.([]any)
		switch {
		case ok1 && !ok2:
			v, err = repeat(a, w.(int64))
		case !ok1 && ok2:
			v, err = repeat(b, v.(int64))
		case !ok1 && !ok2:
			x, y := v.(int64), w.(int64)
			if x != 0 && (y > math.MaxInt32 || x > math.MaxInt32) {
				return nil, fmt.Errorf("number too large")
			}
			v = x * y
		default:
			return nil, fmt.Errorf("cannot multiply two lists")
		}
	}
	return v, err
}

func repeat(l []any, n int64) ([]any, error) {
	if n <= 0 {
		return []any{}, nil
	}
	if int64(len(l))*n > maxPattern {
		return nil, fmt.Errorf("pattern too long")
	}
	out := make([]any, 0, int(n)*len(l))
	for range n {
		out = append(out, l...)
	}
	return out, nil
}

func (p *patternParser) atom() (any, error) {
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("unexpected end of pattern")
	}
	switch c := p.s[p.i]; {
	case c >= '0' && c <= '9':
		j := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		return PyInt(p.s[j:p.i])
	case c == '[' || c == '(':
		closer := byte(']')
		if c == '(' {
			closer = ')'
		}
		p.i++
		var items []any
		comma := false
		for p.i < len(p.s) && p.s[p.i] != closer {
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			items = append(items, v)
			if p.i < len(p.s) && p.s[p.i] == ',' {
				comma = true
				p.i++
				continue
			}
			break
		}
		if p.i >= len(p.s) || p.s[p.i] != closer {
			return nil, fmt.Errorf("unbalanced pattern")
		}
		p.i++
		if c == '(' && !comma && len(items) == 1 {
			return items[0], nil // parenthesised expression
		}
		if items == nil {
			items = []any{}
		}
		return items, nil
	}
	return nil, fmt.Errorf("unexpected %q in pattern", p.s[p.i])
}

// Equal compares two namespace values as Python's == does (1 == 1.0).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return float64(x) == y
		}
		return false
	case float64:
		switch y := b.(type) {
		case int64:
			return x == float64(y)
		case float64:
			return x == y || (math.IsNaN(x) && math.IsNaN(y))
		}
		return false
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// Repr renders a namespace value the way Python prints it.
func Repr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		return s
	case string:
		return "'" + x + "'"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Repr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}
