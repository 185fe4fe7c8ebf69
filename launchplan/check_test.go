package launchplan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockPlan is a consistent plan of nodes × gpus workers (rank = node·gpus +
// local rank) with a tp family of gpus-wide groups.
func blockPlan(nodes, gpus int) *File {
	f := &File{
		Version: Version, WorldSize: nodes * gpus, GPUsPerNode: gpus, Order: "tp-cp-ep-dp-pp",
		Groups:  Groups{"tp": {}},
		Env:     Env{"NCCL_DEBUG": "WARN"},
		Command: []string{"python3", "pretrain_gpt.py"},
	}
	for n := range nodes {
		node := Node{Index: n}
		var group []int
		for l := range gpus {
			node.Workers = append(node.Workers, Worker{Rank: n*gpus + l, LocalRank: l, GPU: l})
			group = append(group, n*gpus+l)
		}
		f.Nodes = append(f.Nodes, node)
		f.Groups["tp"] = append(f.Groups["tp"], group)
	}
	return f
}

// checkBoth runs Check and the two decoders on f and requires that all three
// agree; it returns Check's problems.
func checkBoth(t *testing.T, f *File) []string {
	t.Helper()
	data, err := json.Marshal(f)
	require.NoError(t, err)
	errCheck := Check(f)
	_, errDecode := Decode(data)
	_, errLean := DecodeWithoutGroups(data)
	if f.Version == Version {
		assert.Equal(t, errCheck, errDecode, "Decode")
	}
	assert.Equal(t, errCheck, errLean, "DecodeWithoutGroups")
	if errCheck == nil {
		return nil
	}
	var inv *Invalid
	require.ErrorAs(t, errCheck, &inv)
	return inv.Problems
}

func TestCheckReportsEverything(t *testing.T) {
	f := blockPlan(2, 2)
	f.Version = 7
	f.Nodes[0].Workers[1].LocalRank = 0
	f.Nodes[1].Workers[0].GPU = 5
	f.Groups["tp"] = [][]int{{0, 1}, {2, 9}}
	f.Env["RANK"] = "3"
	got := strings.Join(checkBoth(t, f), "\n")
	for _, w := range []string{
		"version is 7, this parc reads version 1",
		"node 0: local_rank 0 is used twice",
		"node 1: rank 2 uses gpu 5, outside 0..1 (gpus_per_node 2)",
		"group tp[1] holds rank 9, outside the world of 4",
		"env sets RANK, which the launcher sets for every worker",
	} {
		assert.Contains(t, got, w)
	}
	assert.Empty(t, checkBoth(t, blockPlan(3, 4)))
}

// Issue 12, item 3: an env name with '=' ("RANK=7") would reach execve as
// RANK=7=x, overriding RANK; any name that is not a variable name is refused.
func TestCheckEnvNames(t *testing.T) {
	for _, name := range []string{"RANK=7", "MASTER_ADDR=evil.example", "=", "", "1ABC", "A-B", "A B", "A\x00B", "É", "PATH\n"} {
		f := blockPlan(1, 2)
		f.Env[name] = "x"
		got := checkBoth(t, f)
		require.Len(t, got, 1, "%q: %v", name, got)
		assert.Contains(t, got[0], "is not a variable name", "%q", name)
	}
	for _, name := range []string{"A", "_", "a1", "NCCL_IB_HCA", "_X_9"} {
		f := blockPlan(1, 2)
		f.Env[name] = "x"
		assert.Empty(t, checkBoth(t, f), name)
	}
	f := blockPlan(1, 2)
	f.Env["OK"] = "a\x00b"
	assert.Contains(t, strings.Join(checkBoth(t, f), "\n"), `env "OK": the value holds a NUL byte`)
}

// Issue 12, item 11: a group that lists a rank twice, or two groups of one
// family that share a rank, are refused by every reader.
func TestCheckRepeatedGroupMembers(t *testing.T) {
	f := blockPlan(2, 4)
	f.Groups["dp"] = [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 3}}
	assert.Equal(t, []string{"group dp[3] lists rank 3 twice"}, checkBoth(t, f))

	f = blockPlan(2, 4)
	f.Groups["pp"] = [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 6}}
	assert.Equal(t, []string{"rank 6 is in two pp groups, pp[2] and pp[3] (a family's groups do not overlap)"}, checkBoth(t, f))

	f = blockPlan(2, 4) // ranks may repeat across families
	f.Groups["dp"] = [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}
	f.Groups["embd"] = [][]int{{0, 4}, {1, 5}}
	assert.Empty(t, checkBoth(t, f))

	f = blockPlan(1, 8)
	f.Groups["tp"] = [][]int{{0, 0, 1, 1, 2, 2, 3, 3, 4}}
	got := checkBoth(t, f)
	assert.Len(t, got, maxRepeats+1)
	assert.Equal(t, "4 repeated group members in all", got[len(got)-1])
}

// Issue 12, item 11: an empty program name is refused with a message that
// names it (it used to fail at start as ": command not found").
func TestCheckCommand(t *testing.T) {
	f := blockPlan(1, 2)
	f.Command = []string{"", "x"}
	assert.Equal(t, []string{"command[0] is empty: it must name the program workers run"}, checkBoth(t, f))
	f.Command = []string{"python3", "a\x00b"}
	assert.Equal(t, []string{"command[1] holds a NUL byte, which no argument can carry"}, checkBoth(t, f))
	f.Command = []string{} // the launcher then needs one after --
	assert.Empty(t, checkBoth(t, f))
}

func TestCheckGraceSeconds(t *testing.T) {
	for _, g := range []int{-1, -300, MaxGraceSeconds + 1} {
		f := blockPlan(1, 2)
		f.GraceSeconds = &g
		assert.Equal(t, []string{"grace_seconds is " + itoa(g) + ", it must be in 0..86400 (0: SIGKILL at once)"}, checkBoth(t, f))
	}
	for _, g := range []int{0, 1, 330, MaxGraceSeconds} {
		f := blockPlan(1, 2)
		f.GraceSeconds = &g
		assert.Empty(t, checkBoth(t, f))
		back, err := Decode(Encode(f))
		require.NoError(t, err)
		require.NotNil(t, back.GraceSeconds)
		assert.Equal(t, g, *back.GraceSeconds)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestGroupsCoverTheWorld: a family leaves no rank out (Megatron-Core builds
// every family but the embedding groups over the whole world) and a group
// has at least one rank. Before, tp: [[0]] in a world of 2, an empty group
// and a family listed as [] all passed Decode (re-probe of issue 12 item
// 11: missing members, beside the duplicates already refused).
func TestGroupsCoverTheWorld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		groups Groups
		want   []string
	}{
		{"complete", Groups{"tp": {{0, 1}, {2, 3}}, "dp": {{0, 2}, {1, 3}}, "pos_embd": {{0}, {1}}}, nil},
		{"a rank left out", Groups{"tp": {{0, 1}, {2, 3}}, "dp": {{0, 2}, {1}}},
			[]string{"the dp groups hold 3 of the 4 ranks: every rank is in one dp group (Megatron-Core builds the family over the whole world)"}},
		{"an empty family", Groups{"tp": {}, "cp": {{0}, {1}, {2}, {3}}},
			[]string{"the tp groups hold 0 of the 4 ranks: every rank is in one tp group (Megatron-Core builds the family over the whole world)"}},
		{"empty groups", Groups{"tp": {{0, 1}, {2, 3}, {}}, "pp": {{0}, {1}, {2}, {3}, nil}},
			[]string{"group pp[4] is empty: a process group has at least one rank", "2 empty groups in all"}},
		{"embedding groups may be partial", Groups{"tp": {{0, 1}, {2, 3}}, "embd": {{0, 2}}, "pos_embd": {{0}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := blockPlan(2, 2)
			f.Groups = tc.groups
			assert.Equal(t, tc.want, checkBoth(t, f))
		})
	}
}
