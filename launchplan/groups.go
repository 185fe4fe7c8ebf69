package launchplan

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
)

// groupSummary is what a reader keeps of launch.json's "groups" when it does
// not need the groups themselves (the launcher: the workers build them), only
// their check: every member is a rank of the world, and no rank is in two
// groups of one family (each family partitions the ranks it covers, as
// Megatron-Core's process groups do). At 131,072 ranks the groups are most
// of the file, so DecodeWithoutGroups reads them into this summary instead of
// [][]int (it decodes straight from the file's bytes).
type groupSummary struct {
	families, groups int
	// lowest and highest member, and where they are (family[index]).
	min, max     int
	minAt, maxAt where
	hasAnyMember bool

	// seen[r] is the family (counted from 1) and group of the last time
	// rank r was seen, for the duplicate check; it grows to the highest
	// member in 0..MaxWorld-1.
	seen    []seenAt
	repeats []repeat // the first maxRepeats ranks found twice in a family
	nRepeat int      // every one

	// members counts each listed family's members (a family listed as
	// [] has 0); firstEmpty is the first group (by family name, then
	// index, whatever the order in the file) listed with no rank.
	members    map[string]int
	firstEmpty where
	nEmpty     int
}

// partialFamilies hold only some ranks: Megatron-Core's embedding group
// is the first and last pipeline stage, the position-embedding group the
// first (parallel_state.py, default_embedding_ranks). Every other family
// partitions the whole world.
var partialFamilies = map[string]bool{"embd": true, "pos_embd": true}

// family records that a family is listed.
func (s *groupSummary) family(name string) {
	if s.members == nil {
		s.members = map[string]int{}
	}
	s.members[name] += 0
}

// emptyGroup records a group listed with no rank.
func (s *groupSummary) emptyGroup(family string, index int) {
	w := where{family, index}
	if s.nEmpty == 0 || family < s.firstEmpty.family || family == s.firstEmpty.family && index < s.firstEmpty.index {
		s.firstEmpty = w
	}
	s.nEmpty++
}

type seenAt struct{ family, group int32 }

// repeat is a rank found twice in one family: in groups first and second
// (the same group when a group lists it twice).
type repeat struct {
	family        string
	first, second int
	rank          int
}

const maxRepeats = 3

// where is a group's position: family[index].
type where struct {
	family string
	index  int
}

func (w where) String() string { return fmt.Sprintf("%s[%d]", w.family, w.index) }

// add records that group family[index] (the s.families-th family) holds rank.
func (s *groupSummary) add(family string, index, rank int) {
	s.family(family)
	s.members[family]++
	if !s.hasAnyMember || rank < s.min {
		s.min, s.minAt = rank, where{family, index}
	}
	if !s.hasAnyMember || rank > s.max {
		s.max, s.maxAt = rank, where{family, index}
	}
	s.hasAnyMember = true
	if rank < 0 || rank >= MaxWorld {
		return // reported by check as outside the world
	}
	if rank >= len(s.seen) {
		s.seen = slices.Grow(s.seen, rank+1-len(s.seen))[:rank+1]
	}
	fam := int32(s.families)
	if prev := s.seen[rank]; prev.family == fam {
		if s.nRepeat++; len(s.repeats) < maxRepeats {
			s.repeats = append(s.repeats, repeat{family: family, first: int(prev.group), second: index, rank: rank})
		}
	}
	s.seen[rank] = seenAt{family: fam, group: int32(index)}
}

// summarize is the summary of groups held in memory.
func summarize(g Groups) groupSummary {
	var s groupSummary
	for _, family := range slices.Sorted(maps.Keys(g)) {
		s.families++
		if g[family] != nil {
			s.family(family)
		}
		for i, group := range g[family] {
			s.groups++
			if len(group) == 0 {
				s.emptyGroup(family, i)
			}
			for _, r := range group {
				s.add(family, i, r)
			}
		}
	}
	return s
}

// check reports members outside 0..world-1, ranks repeated in a family,
// empty groups, and families that leave ranks out.
func (s groupSummary) check(world int, add func(string, ...any)) {
	if s.nEmpty > 0 {
		add("group %s is empty: a process group has at least one rank", s.firstEmpty)
	}
	if s.nEmpty > 1 {
		add("%d empty groups in all", s.nEmpty)
	}
	for _, f := range slices.Sorted(maps.Keys(s.members)) {
		if n := s.members[f]; !partialFamilies[f] && n < world {
			add("the %s groups hold %d of the %d ranks: every rank is in one %s group (Megatron-Core builds the family over the whole world)", f, n, world, f)
		}
	}
	if !s.hasAnyMember {
		return
	}
	if s.min < 0 {
		add("group %s holds rank %d, outside the world of %d", s.minAt, s.min, world)
	}
	if s.max >= world {
		add("group %s holds rank %d, outside the world of %d", s.maxAt, s.max, world)
	}
	for _, r := range s.repeats {
		if r.first == r.second {
			add("group %s lists rank %d twice", where{r.family, r.first}, r.rank)
		} else {
			add("rank %d is in two %s groups, %s and %s (a family's groups do not overlap)",
				r.rank, r.family, where{r.family, r.first}, where{r.family, r.second})
		}
	}
	if s.nRepeat > len(s.repeats) {
		add("%d repeated group members in all", s.nRepeat)
	}
}

// UnmarshalJSON scans {"family": [[rank, ...], ...], ...} without building
// it. encoding/json has already checked that data is valid JSON; this checks
// the shape. Families are visited in file order, so a summary's positions
// may differ from summarize's (which sorts) when several groups share the
// extreme rank; the extremes themselves are the same.
func (s *groupSummary) UnmarshalJSON(data []byte) error {
	*s = groupSummary{}
	sc := scanner{data: data}
	if sc.literal("null") {
		return sc.end()
	}
	if !sc.byte('{') {
		return fmt.Errorf("groups: want an object of group families")
	}
	if sc.byte('}') {
		return sc.end()
	}
	for {
		family, err := sc.str()
		if err != nil {
			return err
		}
		s.families++
		if !sc.byte(':') {
			return fmt.Errorf("groups: want ':' after %q", family)
		}
		if err := s.scanFamily(&sc, family); err != nil {
			return err
		}
		if sc.byte('}') {
			return sc.end()
		}
		if !sc.byte(',') {
			return fmt.Errorf("groups: want ',' or '}' after %q", family)
		}
	}
}

// scanFamily reads one family's list of groups: [[r, ...], ...] or null.
func (s *groupSummary) scanFamily(sc *scanner, family string) error {
	if sc.literal("null") {
		return nil
	}
	if !sc.byte('[') {
		return fmt.Errorf("groups.%s: want a list of groups", family)
	}
	s.family(family)
	if sc.byte(']') {
		return nil
	}
	for i := 0; ; i++ {
		s.groups++
		if err := s.scanGroup(sc, family, i); err != nil {
			return err
		}
		if sc.byte(']') {
			return nil
		}
		if !sc.byte(',') {
			return fmt.Errorf("groups.%s: want ',' or ']'", family)
		}
	}
}

// scanGroup reads one group's ranks: [r, ...] or null.
func (s *groupSummary) scanGroup(sc *scanner, family string, i int) error {
	if sc.literal("null") {
		s.emptyGroup(family, i)
		return nil
	}
	if !sc.byte('[') {
		return fmt.Errorf("groups.%s[%d]: want a list of ranks", family, i)
	}
	if sc.byte(']') {
		s.emptyGroup(family, i)
		return nil
	}
	for {
		r, ok := sc.integer()
		if !ok {
			return fmt.Errorf("groups.%s[%d]: a member is not a whole number", family, i)
		}
		s.add(family, i, r)
		if sc.byte(']') {
			return nil
		}
		if !sc.byte(',') {
			return fmt.Errorf("groups.%s[%d]: want ',' or ']'", family, i)
		}
	}
}

// scanner reads JSON tokens from valid JSON, skipping white space.
type scanner struct {
	data []byte
	i    int
}

func (sc *scanner) skip() {
	for sc.i < len(sc.data) {
		switch sc.data[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

func (sc *scanner) byte(c byte) bool {
	sc.skip()
	if sc.i < len(sc.data) && sc.data[sc.i] == c {
		sc.i++
		return true
	}
	return false
}

func (sc *scanner) literal(lit string) bool {
	sc.skip()
	if len(sc.data)-sc.i >= len(lit) && string(sc.data[sc.i:sc.i+len(lit)]) == lit {
		sc.i += len(lit)
		return true
	}
	return false
}

func (sc *scanner) end() error {
	sc.skip()
	if sc.i != len(sc.data) {
		return fmt.Errorf("groups: unexpected text after the object")
	}
	return nil
}

// str reads a JSON string (escapes decoded by encoding/json).
func (sc *scanner) str() (string, error) {
	sc.skip()
	if sc.i >= len(sc.data) || sc.data[sc.i] != '"' {
		return "", fmt.Errorf("groups: want a family name")
	}
	start := sc.i
	sc.i++
	for sc.i < len(sc.data) && sc.data[sc.i] != '"' {
		if sc.data[sc.i] == '\\' {
			sc.i++
		}
		sc.i++
	}
	sc.i++ // the closing quote
	if sc.i > len(sc.data) {
		return "", fmt.Errorf("groups: unterminated family name")
	}
	var name string
	if err := json.Unmarshal(sc.data[start:sc.i], &name); err != nil {
		return "", fmt.Errorf("groups: family name: %w", err)
	}
	return name, nil
}

// integer reads a whole number (no fraction or exponent) that fits an int32.
func (sc *scanner) integer() (int, bool) {
	sc.skip()
	neg := false
	if sc.i < len(sc.data) && sc.data[sc.i] == '-' {
		neg = true
		sc.i++
	}
	limit := math.MaxInt32
	if neg {
		limit++ // math.MinInt32
	}
	start, v := sc.i, 0
	for sc.i < len(sc.data) && sc.data[sc.i] >= '0' && sc.data[sc.i] <= '9' {
		v = v*10 + int(sc.data[sc.i]-'0')
		if v > limit {
			return 0, false
		}
		sc.i++
	}
	if sc.i == start {
		return 0, false
	}
	if sc.i < len(sc.data) && (sc.data[sc.i] == '.' || sc.data[sc.i] == 'e' || sc.data[sc.i] == 'E') {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
