package launchplan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MaxWorld bounds world_size before a reader allocates per-rank state
// (internal/layout lays out at most 2^22 GPUs).
const MaxWorld = 1 << 22

// MaxGraceSeconds bounds grace_seconds: a day.
const MaxGraceSeconds = 86400

// DefaultMasterPort is the rendezvous port when master_port is 0 (torchrun's default).
const DefaultMasterPort = 29500

// ReservedEnv are the variables the launcher sets for every worker; a plan's
// env may not set them.
var ReservedEnv = []string{
	"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK",
	"GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE",
	"MASTER_ADDR", "MASTER_PORT",
	"TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE",
	"PARC_RESTART_ATTEMPT", "PARC_LAUNCH_PLAN", "PARC_GPU",
	"PARC_LAUNCH_SHIM", // the launcher's worker shim (launcher/shim_linux.go)
}

// ValidEnvName reports whether name can be an environment variable that a
// shell and execve pass on unchanged: a letter or _, then letters, digits
// and _ (POSIX.1-2017, 8.1). A name with '=' would split differently than it
// reads ("RANK=7" sets RANK), and NUL cannot cross execve.
func ValidEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Invalid is the error of a launch plan that decodes but is not consistent:
// every problem found, one per entry.
type Invalid struct{ Problems []string }

func (e *Invalid) Error() string { return strings.Join(e.Problems, "\n") }

// Check reports every inconsistency of a plan at once (as *Invalid): the
// format version, world size against the workers listed, ranks that are
// missing or repeated, local ranks and GPUs out of range, group members
// outside the world or repeated within a family, environment names that are
// not names or that the launcher reserves, NUL bytes, an empty program name,
// and grace_seconds out of range. Build's output always passes it.
func Check(f *File) error {
	return check(f, summarize(f.Groups))
}

// Decode reads launch.json written at this Version and checks it (Check).
func Decode(data []byte) (*File, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("launch.json: %w", err)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("launch.json is version %d; this parc reads version %d", f.Version, Version)
	}
	if err := Check(&f); err != nil {
		return nil, err
	}
	return &f, nil
}

// DecodeWithoutGroups is Decode for a reader that does not need the groups:
// they are checked while they are decoded, not kept, and the returned File
// has nil Groups. At 131,072 ranks the groups are most of the file.
func DecodeWithoutGroups(data []byte) (*File, error) {
	var p struct {
		File
		Groups groupSummary `json:"groups"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("launch.json: %w", err)
	}
	if err := check(&p.File, p.Groups); err != nil {
		return nil, err
	}
	return &p.File, nil
}

func check(f *File, groups groupSummary) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	done := func() error {
		if len(problems) == 0 {
			return nil
		}
		return &Invalid{Problems: problems}
	}
	if f.Version != Version {
		add("version is %d, this parc reads version %d", f.Version, Version)
	}
	if f.WorldSize < 1 || f.WorldSize > MaxWorld {
		add("world_size is %d, it must be in 1..%d", f.WorldSize, MaxWorld)
		return done()
	}
	if f.GPUsPerNode < 1 {
		add("gpus_per_node is %d, it must be at least 1", f.GPUsPerNode)
	}
	if f.MasterPort < 0 || f.MasterPort > 65535 {
		add("master_port is %d, it must be in 1..65535 (0 means %d)", f.MasterPort, DefaultMasterPort)
	}
	if f.GraceSeconds != nil && (*f.GraceSeconds < 0 || *f.GraceSeconds > MaxGraceSeconds) {
		add("grace_seconds is %d, it must be in 0..%d (0: SIGKILL at once)", *f.GraceSeconds, MaxGraceSeconds)
	}
	checkNodes(f, add)
	groups.check(f.WorldSize, add)
	for _, k := range slices.Sorted(maps.Keys(f.Env)) {
		switch {
		case !ValidEnvName(k):
			add("env name %q is not a variable name (a letter or _, then letters, digits and _)", k)
		case slices.Contains(ReservedEnv, k):
			add("env sets %s, which the launcher sets for every worker", k)
		}
		if strings.IndexByte(f.Env[k], 0) >= 0 {
			add("env %q: the value holds a NUL byte, which no process environment can carry", k)
		}
	}
	if len(f.Command) > 0 && f.Command[0] == "" {
		add("command[0] is empty: it must name the program workers run")
	}
	for i, a := range f.Command {
		if strings.IndexByte(a, 0) >= 0 {
			add("command[%d] holds a NUL byte, which no argument can carry", i)
		}
	}
	return done()
}

func checkNodes(f *File, add func(string, ...any)) {
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
}
