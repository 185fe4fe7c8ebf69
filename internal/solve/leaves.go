package solve

// leafBlock is how many leaves one block of a leafStore holds.
const leafBlock = 1 << 12

// leafStore holds the search's leaves and nodes in fixed blocks, indexed by
// int32: growing it never copies or moves a leaf, so a *leaf stays valid
// while more are added (a slice doubling copied the whole search state
// several times per solve, fresh pages each time).
type leafStore struct {
	blocks [][]leaf
	n      int
}

// at is leaf i.
func (s *leafStore) at(i int32) *leaf { return &s.blocks[i/leafBlock][i%leafBlock] }

// add appends lf and returns its index.
func (s *leafStore) add(lf leaf) int32 {
	if s.n%leafBlock == 0 {
		s.blocks = append(s.blocks, make([]leaf, leafBlock))
	}
	s.blocks[s.n/leafBlock][s.n%leafBlock] = lf
	s.n++
	return int32(s.n - 1)
}

// len is the number of leaves.
func (s *leafStore) len() int { return s.n }

// any reports whether some leaf satisfies f.
func (s *leafStore) any(f func(*leaf) bool) bool {
	for i := range s.n {
		if f(s.at(int32(i))) {
			return true
		}
	}
	return false
}
