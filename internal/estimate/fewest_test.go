package estimate

import "testing"

// TestFewestInBlockBruteForce compares fewestInBlock with every group of a
// strided family laid out rank by rank.
func TestFewestInBlockBruteForce(t *testing.T) {
	for _, block := range []int{4, 8, 72} {
		for _, stride := range []int{1, 2, 3, 4, 8, 16, 24, 32, 64} {
			for _, size := range []int{2, 3, 4, 8, 9, 16, 32} {
				for _, outer := range []int{1, 2, 3, 4, 5, 8} {
					world := stride * size * outer
					want := size
					for base := range world {
						if base%(stride*size) >= stride {
							continue // not a group's first rank
						}
						counts := map[int]int{}
						for j := range size {
							counts[(base+j*stride)/block]++
						}
						if len(counts) < 2 {
							continue
						}
						for _, n := range counts {
							want = min(want, n)
						}
					}
					if stride >= block {
						want = 1
					}
					if got := fewestInBlock(stride, size, block, world); got != want {
						t.Errorf("block %d stride %d size %d world %d: fewestInBlock %d, groups say %d", block, stride, size, world, got, want)
					}
				}
			}
		}
	}
}
