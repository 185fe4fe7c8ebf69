package solve

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHeapPopsInOrder: the search's heap pops (key, index) in ascending
// order whatever its size (0, 1, ... items), after heapify, pushes and a
// reheap of what is left.
func TestHeapPopsInOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 17, 100, 1000} {
		sv := &solver{}
		for range n {
			sv.leaves.add(leaf{key: float64(rng.Intn(n/3 + 1))}) // ties
		}
		sv.heapify()
		want := []heapItem{}
		for i := range sv.leaves.len() {
			want = append(want, heapItem{sv.leaves.at(int32(i)).key, int32(i)})
		}
		// Push some more, drop a third and reheap, as completeShapes does.
		for range n / 2 {
			i := sv.leaves.add(leaf{key: float64(rng.Intn(n + 1))})
			sv.push(i)
			want = append(want, heapItem{sv.leaves.at(i).key, i})
		}
		sv.heap = slices.DeleteFunc(sv.heap, func(h heapItem) bool { return h.i%3 == 0 })
		want = slices.DeleteFunc(want, func(h heapItem) bool { return h.i%3 == 0 })
		sv.reheap()
		slices.SortFunc(want, func(a, b heapItem) int {
			if heapLess(a, b) {
				return -1
			}
			return 1
		})
		got := []heapItem{}
		for len(sv.heap) > 0 {
			i := sv.pop()
			got = append(got, heapItem{sv.leaves.at(i).key, i})
		}
		assert.Equal(t, want, got, "n=%d", n)
	}
}
