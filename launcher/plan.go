package launcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"parc.dev/parc/launchplan"
)

// maxWorld bounds world_size before the launcher allocates per-rank state
// (internal/layout lays out at most layout.MaxWorld = 2^22 GPUs).
const maxWorld = 1 << 22

// planOnDisk is launch.json as the launcher reads it: the groups are checked
// while they are decoded, not kept (see groupSummary).
type planOnDisk struct {
	launchplan.File
	Groups groupSummary `json:"groups"`
}

// LoadPlan reads launch.json and checks that it describes a consistent
// world. The returned File has no Groups: the launcher does not need them,
// and at 131,072 ranks they are most of the file (their members are still
// checked). Use launchplan.Decode to read them.
func LoadPlan(path string) (*launchplan.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the launch plan: %w", err)
	}
	var p planOnDisk
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s is not a valid launch plan: %w", path, err)
	}
	if err := checkPlan(&p.File, p.Groups); err != nil {
		return nil, fmt.Errorf("%s is not a consistent launch plan:\n  %w", path,
			indented{err})
	}
	return &p.File, nil
}

// CheckPlan reports every inconsistency of a launch plan at once: the format
// version, world size against the workers listed, ranks that are missing or
// repeated, local ranks and GPUs out of range, group members outside the
// world, and environment entries that would override the launcher's own.
func CheckPlan(f *launchplan.File) error {
	return checkPlan(f, summarize(f.Groups))
}

func checkPlan(f *launchplan.File, groups groupSummary) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if f.Version != launchplan.Version {
		add("version is %d, this parc reads version %d", f.Version, launchplan.Version)
	}
	if f.WorldSize < 1 || f.WorldSize > maxWorld {
		add("world_size is %d, it must be in 1..%d", f.WorldSize, maxWorld)
		return errors.Join(errs...)
	}
	if f.GPUsPerNode < 1 {
		add("gpus_per_node is %d, it must be at least 1", f.GPUsPerNode)
	}
	if f.MasterPort < 0 || f.MasterPort > 65535 {
		add("master_port is %d, it must be in 1..65535 (0 means %d)", f.MasterPort, DefaultMasterPort)
	}
	if len(f.Nodes) == 0 {
		add("the plan lists no nodes")
	}
	seenNode := map[int]bool{}
	nodeOf := make([]int32, f.WorldSize) // rank -> node index + 1; 0 = not seen
	workers := 0
	for _, n := range f.Nodes {
		if n.Index < 0 {
			add("node index %d is negative", n.Index)
		}
		if seenNode[n.Index] {
			add("node index %d is listed twice", n.Index)
		}
		seenNode[n.Index] = true
		if len(n.Workers) == 0 {
			add("node %d has no workers", n.Index)
		}
		if f.GPUsPerNode > 0 && len(n.Workers) > f.GPUsPerNode {
			add("node %d has %d workers but gpus_per_node is %d", n.Index, len(n.Workers), f.GPUsPerNode)
		}
		local := map[int]bool{}
		gpu := map[int]bool{}
		for _, w := range n.Workers {
			workers++
			if w.Rank < 0 || w.Rank >= f.WorldSize {
				add("node %d: rank %d is outside 0..%d (world_size %d)", n.Index, w.Rank, f.WorldSize-1, f.WorldSize)
			} else if other := nodeOf[w.Rank]; other != 0 {
				add("rank %d is listed on node %d and on node %d", w.Rank, other-1, n.Index)
			} else {
				nodeOf[w.Rank] = int32(n.Index) + 1
			}
			if w.LocalRank < 0 || w.LocalRank >= len(n.Workers) {
				add("node %d: rank %d has local_rank %d, outside 0..%d", n.Index, w.Rank, w.LocalRank, len(n.Workers)-1)
			} else if local[w.LocalRank] {
				add("node %d: local_rank %d is used twice", n.Index, w.LocalRank)
			}
			local[w.LocalRank] = true
			if w.GPU < 0 || (f.GPUsPerNode > 0 && w.GPU >= f.GPUsPerNode) {
				add("node %d: rank %d uses gpu %d, outside 0..%d (gpus_per_node %d)", n.Index, w.Rank, w.GPU, f.GPUsPerNode-1, f.GPUsPerNode)
			} else if gpu[w.GPU] {
				add("node %d: gpu %d is given to two workers", n.Index, w.GPU)
			}
			gpu[w.GPU] = true
		}
	}
	if workers != f.WorldSize {
		add("world_size is %d but the nodes list %d workers", f.WorldSize, workers)
	}
	missing := 0
	for r := 0; r < f.WorldSize && workers > 0; r++ {
		if nodeOf[r] == 0 {
			if missing++; missing <= 3 {
				add("rank %d is on no node", r)
			}
		}
	}
	if missing > 3 {
		add("%d ranks in all are on no node", missing)
	}
	groups.check(f.WorldSize, add)
	for _, k := range sortedKeys(f.Env) {
		if slices.Contains(launcherVars, k) {
			add("env sets %s, which the launcher sets for every worker", k)
		}
	}
	return errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// indented shows a joined error one problem per indented line.
type indented struct{ error }

func (e indented) Error() string { return strings.ReplaceAll(e.error.Error(), "\n", "\n  ") }
func (e indented) Unwrap() error { return e.error }
