package solve

import (
	"testing"

	"parc.dev/parc/internal/estimate"
)

// The solver's explanation names the collective the estimate runs on an
// axis, not one word per axis: sequence parallelism replaces the tp
// all-reduces (Megatron's reduce-scatter/all-gather around the layer), the
// distributed optimizer the gradient all-reduce.
func TestAxisWordFollowsCollective(t *testing.T) {
	for _, tc := range []struct{ ax, coll, want string }{
		{"tp", estimate.CollectiveAllReduce, "tp all-reduce"},
		{"tp", estimate.CollectiveGatherScatter, "tp all-gather/reduce-scatter"},
		{"dp", estimate.CollectiveAllReduce, "dp gradient all-reduce"},
		{"dp", estimate.CollectiveShardedDP, "dp gradient reduce-scatter and parameter all-gather"},
		{"edp", estimate.CollectiveFSDP, "expert dp FSDP gathers and reduce-scatters"},
		{"cp", estimate.CollectiveAllToAll, "cp all-to-all"},
		{"cp", estimate.CollectiveRing, "cp ring exchange"},
		{"pp", estimate.CollectiveSendRecv, "pp send/recv"},
		{"etp", estimate.CollectiveGatherScatter, "etp all-gather/reduce-scatter"},
		{"etp", "", "etp all-gather/reduce-scatter"},
		{"xyz", "", "xyz communication"},
	} {
		if got := axisWord(tc.ax, tc.coll); got != tc.want {
			t.Errorf("axisWord(%q, %q) = %q, want %q", tc.ax, tc.coll, got, tc.want)
		}
	}
}
