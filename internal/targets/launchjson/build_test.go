package launchjson

import (
	"bytes"
	"encoding/json"
	"parc.dev/parc/launchplan"
	"reflect"
	"testing"

	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/spec"
)

func mustLayout(t testing.TB, c layout.Config) *layout.Layout {
	t.Helper()
	l, ds := layout.New(c)
	if l == nil || ds != nil {
		t.Fatalf("%+v: %v", c, ds)
	}
	return l
}

// exampleB: world 16 on two 8-GPU nodes, tp 2, cp 2, pp 2, ep 4, etp 1 (the
// groups RankGenerator in Megatron-LM's megatron/core/parallel_state.py builds).
var exampleB = layout.Config{Nodes: 2, GPUsPerNode: 8, TP: 2, PP: 2, CP: 2, EP: 4, ETP: 1, Order: spec.OrderDefault, TieEmbeddings: true}

func TestBuild(t *testing.T) {
	env := launchplan.Env{"NCCL_DEBUG": "WARN"}
	cmd := []string{"python3", "pretrain_gpt.py", "--tensor-model-parallel-size", "2"}
	f := Build(mustLayout(t, exampleB), env, cmd, 29500)
	env["NCCL_DEBUG"], cmd[0] = "changed", "changed" // Build copies them
	if f.Version != 1 || f.WorldSize != 16 || f.GPUsPerNode != 8 || f.Order != "tp-cp-ep-dp-pp" || f.MasterPort != 29500 {
		t.Fatalf("header %+v", f)
	}
	if f.Env["NCCL_DEBUG"] != "WARN" || f.Command[0] != "python3" {
		t.Fatalf("env/command aliased: %v %v", f.Env, f.Command)
	}
	if len(f.Nodes) != 2 {
		t.Fatalf("%d nodes", len(f.Nodes))
	}
	for n, node := range f.Nodes {
		if node.Index != n || len(node.Workers) != 8 {
			t.Fatalf("node %d: %+v", n, node)
		}
		for l, w := range node.Workers {
			if w != (launchplan.Worker{Rank: 8*n + l, LocalRank: l, GPU: l}) {
				t.Fatalf("node %d worker %d: %+v", n, l, w)
			}
		}
	}
	// Example B, as Megatron-Core prints it.
	want := map[string][][]int{
		"tp":        {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}},
		"cp":        {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}},
		"dp":        {{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}},
		"dp-cp":     {{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}},
		"tp-cp":     {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}},
		"tp-dp-cp":  {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}},
		"pp":        {{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}},
		"tp-pp":     {{0, 1, 8, 9}, {2, 3, 10, 11}, {4, 5, 12, 13}, {6, 7, 14, 15}},
		"ep":        {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}},
		"etp":       {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}},
		"edp":       {{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}},
		"etp-ep-pp": {{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}},
	}
	for name, w := range want {
		if !reflect.DeepEqual(f.Groups[name], w) {
			t.Errorf("%s = %v\nwant %v", name, f.Groups[name], w)
		}
	}
	if len(f.Groups) != len(layout.FamilyNames) {
		t.Errorf("%d families", len(f.Groups))
	}
	// The format's own check (shared with the launcher) accepts what the
	// builder writes: every member in the world, no family overlapping itself.
	if err := launchplan.Check(f); err != nil {
		t.Fatalf("launchplan.Check rejects the built plan:\n%v", err)
	}
}

// Every layout of small clusters builds a plan launchplan.Check accepts:
// Megatron-Core's groups of one family never share a rank.
func TestBuildPassesCheck(t *testing.T) {
	n := 0
	for _, c := range []struct{ nodes, gpus int }{{1, 8}, {2, 8}, {4, 4}} {
		world := c.nodes * c.gpus
		for tp := 1; tp <= c.gpus; tp *= 2 {
			for pp := 1; tp*pp <= world; pp *= 2 {
				for cp := 1; tp*pp*cp <= world; cp *= 2 {
					for ep := 1; ep <= world/(tp*pp*cp); ep *= 2 {
						l, ds := layout.New(layout.Config{Nodes: c.nodes, GPUsPerNode: c.gpus, TP: tp, PP: pp, CP: cp, EP: ep, ETP: 1,
							Order: spec.OrderDefault, TieEmbeddings: pp > 1})
						if l == nil || ds != nil {
							continue
						}
						n++
						if err := launchplan.Check(Build(l, nil, []string{"python3"}, 0)); err != nil {
							t.Fatalf("%+v: %v", l, err)
						}
					}
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d layouts built", n)
	}
}

// TestEncodeMatchesEncodingJSON: Encode's value is byte for byte the one
// encoding/json gives once whitespace is removed, for awkward strings and
// nil fields too.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	full := Build(mustLayout(t, exampleB), launchplan.Env{
		"B": "x<y>&z", "A": "quote \" backslash \\ newline \n tab \t", "U": "héllo \u2028 \x01", "E": "",
	}, []string{"python3", "-c", "print('<&>')"}, 0)
	full.MasterAddr = "node-001"
	files := map[string]*launchplan.File{
		"full":       full,
		"empty":      {},
		"nil groups": {Version: 1, Nodes: []launchplan.Node{{Index: 0}}, Groups: launchplan.Groups{"tp": {nil, {}}}, Env: launchplan.Env{}, Command: []string{}},
		"pp-dp":      Build(mustLayout(t, layout.Config{Nodes: 4, GPUsPerNode: 4, TP: 2, PP: 2, CP: 1, EP: 2, ETP: 1, Order: spec.OrderPPDP}), nil, nil, 1),
	}
	for name, f := range files {
		got := launchplan.Encode(f)
		var compact bytes.Buffer
		if err := json.Compact(&compact, got); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", name, err, got)
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(compact.Bytes(), want) {
			t.Errorf("%s:\n got %s\nwant %s", name, compact.Bytes(), want)
		}
		if !bytes.Equal(launchplan.Encode(f), got) {
			t.Errorf("%s: not deterministic", name)
		}
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	f := Build(mustLayout(t, exampleB), launchplan.Env{"X": "1"}, []string{"a"}, 29500)
	g, err := launchplan.Decode(launchplan.Encode(f))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f, g) {
		t.Fatalf("round trip differs")
	}
	if _, err := launchplan.Decode([]byte(`{"version": 2}`)); err == nil {
		t.Fatal("version 2 accepted")
	}
	if _, err := launchplan.Decode([]byte(`{"version": `)); err == nil {
		t.Fatal("truncated file accepted")
	}
}

func TestEncodeLayout(t *testing.T) {
	f := Build(mustLayout(t, layout.Config{Nodes: 2, GPUsPerNode: 2, TP: 2, PP: 2, CP: 1, EP: 1, Order: spec.OrderDefault, TieEmbeddings: true}), launchplan.Env{"A": "1"}, []string{"python3", "x.py"}, 29500)
	got := string(launchplan.Encode(f))
	want := `{
  "version": 1,
  "world_size": 4,
  "gpus_per_node": 2,
  "order": "tp-cp-ep-dp-pp",
  "master_port": 29500,
  "nodes": [
    {"index":0,"workers":[{"rank":0,"local_rank":0,"gpu":0},{"rank":1,"local_rank":1,"gpu":1}]},
    {"index":1,"workers":[{"rank":2,"local_rank":0,"gpu":0},{"rank":3,"local_rank":1,"gpu":1}]}
  ],
  "groups": {
    "cp": [[0],[1],[2],[3]],
    "dp": [[0],[1],[2],[3]],
    "dp-cp": [[0],[1],[2],[3]],
    "edp": [[0],[1],[2],[3]],
    "embd": [[0,2],[1,3]],
    "ep": [[0],[1],[2],[3]],
    "etp": [[0,1],[2,3]],
    "etp-ep": [[0,1],[2,3]],
    "etp-ep-pp": [[0,1,2,3]],
    "pos_embd": [[0],[1]],
    "pp": [[0,2],[1,3]],
    "tp": [[0,1],[2,3]],
    "tp-cp": [[0,1],[2,3]],
    "tp-dp": [[0,1],[2,3]],
    "tp-dp-cp": [[0,1],[2,3]],
    "tp-pp": [[0,1,2,3]]
  },
  "env": {
    "A": "1"
  },
  "command": ["python3", "x.py"]
}
`
	if got != want {
		t.Fatalf("got\n%s", got)
	}
}
