package hostlist

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts bounds how many names one expression may expand to, so that a
// malformed or hostile SLURM_JOB_NODELIST cannot exhaust memory.
const MaxHosts = 1 << 20

// maxRange is the most numbers one range may hold; Slurm 22.05 rejects
// "n[0-65536]" with "Too many hosts in range" and accepts "n[0-65535]".
const maxRange = 1 << 16

// Expand returns every host named by expr, in Slurm's order: comma-separated
// items left to right; inside one item, every bracket is a set of numbers
// ("1-4,7", zero-padded to the width of the lower bound as in "001-010") and
// several brackets form a product whose rightmost bracket varies fastest.
// Duplicates are kept, as `scontrol show hostnames` keeps them.
//
// Everything Slurm 22.05 accepts is expanded as Slurm does, and what it
// rejects is an error (text after the last bracket, "gpu[1-2]-ib", included).
// A few malformed forms that Slurm reads leniently ("n[1-]", "n[ 1]", a stray
// "]") are errors here too; Slurm never writes them into SLURM_JOB_NODELIST.
func Expand(expr string) ([]string, error) {
	items, err := parse(expr)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, it := range items {
		total += it.count()
	}
	hosts := make([]string, 0, total)
	for _, it := range items {
		hosts = it.appendAll(hosts)
	}
	return hosts, nil
}

// First returns the first host of expr without expanding the rest. The whole
// expression is still checked.
func First(expr string) (string, error) {
	items, err := parse(expr)
	if err != nil {
		return "", err
	}
	if len(items) == 0 {
		return "", fmt.Errorf("hostlist %q names no host", expr)
	}
	return items[0].first(), nil
}

// item is one comma-separated element: literal parts interleaved with
// bracketed number sets, lits[0] set[0] lits[1] set[1] ... lits[n].
type item struct {
	lits []string
	sets [][]span
}

// span is lo..hi inclusive, printed zero-padded to width digits.
type span struct {
	lo, hi uint64
	width  int
}

func (s span) size() uint64 { return s.hi - s.lo + 1 }

func setSize(set []span) uint64 {
	var n uint64
	for _, s := range set {
		n += s.size()
	}
	return n
}

func (it item) count() int {
	n := 1
	for _, set := range it.sets {
		n *= int(setSize(set))
	}
	return n
}

func (it item) first() string {
	var b strings.Builder
	b.WriteString(it.lits[0])
	for i, set := range it.sets {
		writeNum(&b, set[0].lo, set[0].width)
		b.WriteString(it.lits[i+1])
	}
	return b.String()
}

// appendAll appends every name of the item in Slurm's order. With one
// bracket that is ascending. With several, Slurm 22.05 varies the last bracket
// fastest, then the first, the second, and so on: "a[1-2]b[1-2]c[1-2]" gives
// a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 ... (checked against scontrol).
func (it item) appendAll(dst []string) []string {
	n := len(it.sets)
	if n == 0 {
		return append(dst, it.lits[0])
	}
	vals := make([][]string, n)
	for k, set := range it.sets {
		for _, s := range set {
			for v := s.lo; ; v++ {
				var b strings.Builder
				writeNum(&b, v, s.width)
				vals[k] = append(vals[k], b.String())
				if v == s.hi {
					break
				}
			}
		}
	}
	// fastest first: the last bracket, then brackets 0, 1, ..., n-2.
	fastest := make([]int, 0, n)
	fastest = append(fastest, n-1)
	for k := 0; k < n-1; k++ {
		fastest = append(fastest, k)
	}
	idx := make([]int, n)
	var b strings.Builder
	for {
		b.Reset()
		b.WriteString(it.lits[0])
		for k := range n {
			b.WriteString(vals[k][idx[k]])
			b.WriteString(it.lits[k+1])
		}
		dst = append(dst, b.String())
		carry := true
		for _, k := range fastest {
			idx[k]++
			if idx[k] < len(vals[k]) {
				carry = false
				break
			}
			idx[k] = 0
		}
		if carry {
			return dst
		}
	}
}

func writeNum(b *strings.Builder, v uint64, width int) {
	d := strconv.FormatUint(v, 10)
	for i := len(d); i < width; i++ {
		b.WriteByte('0')
	}
	b.WriteString(d)
}

// parse splits expr at commas outside brackets and parses each item.
func parse(expr string) ([]item, error) {
	var items []item
	total := uint64(0)
	depth := 0
	start := 0
	flush := func(end int) error {
		text := strings.TrimSpace(expr[start:end])
		start = end + 1
		if text == "" {
			return nil // "a,,b" and a trailing comma name no extra host
		}
		it, err := parseItem(text)
		if err != nil {
			return fmt.Errorf("hostlist %q: %w", expr, err)
		}
		n := uint64(1)
		for _, set := range it.sets {
			n *= setSize(set)
			if n > MaxHosts {
				break
			}
		}
		total += n
		if total > MaxHosts {
			return fmt.Errorf("hostlist %q names more than %d hosts", expr, MaxHosts)
		}
		items = append(items, it)
		return nil
	}
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '[':
			if depth > 0 {
				return nil, fmt.Errorf("hostlist %q: nested '[' at byte %d", expr, i)
			}
			depth++
		case ']':
			if depth == 0 {
				return nil, fmt.Errorf("hostlist %q: ']' without '[' at byte %d", expr, i)
			}
			depth--
		case ',', ' ', '\t', '\n':
			if depth == 0 {
				if err := flush(i); err != nil {
					return nil, err
				}
			} else if c != ',' {
				return nil, fmt.Errorf("hostlist %q: space inside brackets at byte %d", expr, i)
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("hostlist %q: '[' is never closed", expr)
	}
	if err := flush(len(expr)); err != nil {
		return nil, err
	}
	return items, nil
}

// parseItem parses one host pattern such as "gpu-[001-004,010]-ib".
func parseItem(text string) (item, error) {
	var it item
	for {
		open := strings.IndexByte(text, '[')
		if open < 0 {
			it.lits = append(it.lits, text)
			break
		}
		closing := strings.IndexByte(text, ']') // parse() guarantees it follows open
		it.lits = append(it.lits, text[:open])
		set, err := parseSet(text[open+1 : closing])
		if err != nil {
			return item{}, err
		}
		it.sets = append(it.sets, set)
		text = text[closing+1:]
	}
	if len(it.sets) == 0 && it.lits[0] == "" {
		return item{}, fmt.Errorf("empty host name")
	}
	if len(it.sets) > 0 && it.lits[len(it.lits)-1] != "" {
		// Slurm 22.05: "Invalid hostlist: gpu[1-2]-ib".
		return item{}, fmt.Errorf("%q: text after the last ']' is not allowed", it.first())
	}
	return it, nil
}

// parseSet parses the inside of one bracket: "001-004,010".
func parseSet(body string) ([]span, error) {
	if body == "" {
		return nil, fmt.Errorf("empty brackets []")
	}
	var set []span
	for _, part := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		l, err := number(lo, part)
		if err != nil {
			return nil, err
		}
		h, err := number(hi, part)
		if err != nil {
			return nil, err
		}
		if h < l {
			return nil, fmt.Errorf("range %q runs backwards", part)
		}
		if h-l >= maxRange {
			return nil, fmt.Errorf("range %q names more than %d hosts", part, maxRange)
		}
		set = append(set, span{lo: l, hi: h, width: len(lo)})
	}
	return set, nil
}

func number(digits, part string) (uint64, error) {
	if digits == "" {
		return 0, fmt.Errorf("range %q is missing a number", part)
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("range %q holds %q, which is not a number", part, digits[i])
		}
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("range %q: number %s is too large", part, digits)
	}
	return v, nil
}
