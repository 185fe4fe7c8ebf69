package layout

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// megatronCase is one line of testdata/megatron/groups.jsonl (see its README).
type megatronCase struct {
	Name   string `json:"name"`
	Config struct {
		World         int    `json:"world"`
		TP            int    `json:"tp"`
		PP            int    `json:"pp"`
		CP            int    `json:"cp"`
		EP            int    `json:"ep"`
		ETP           int    `json:"etp"`
		Order         string `json:"order"`
		TieEmbeddings bool   `json:"tie_embeddings"`
		MTPLayers     int    `json:"mtp_layers"`
	} `json:"config"`
	Groups        map[string][][]int `json:"groups"`
	Error         string             `json:"error"`
	RankgenGroups map[string][][]int `json:"rankgen_groups"`
	RankgenError  string             `json:"rankgen_error"`
}

func loadMegatronCases(t *testing.T) []megatronCase {
	t.Helper()
	f, err := os.Open("testdata/megatron/groups.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []megatronCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c megatronCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 300 {
		t.Fatalf("only %d fixtures", len(out))
	}
	return out
}

// configFor places the world on nodes of up to 8 GPUs: placement does not
// change the groups.
func configFor(c megatronCase) Config {
	g := 1
	for _, d := range []int{8, 4, 2} {
		if c.Config.World%d == 0 {
			g = d
			break
		}
	}
	return Config{
		Nodes: c.Config.World / g, GPUsPerNode: g,
		TP: c.Config.TP, PP: c.Config.PP, CP: c.Config.CP, EP: c.Config.EP, ETP: c.Config.ETP,
		Order: c.Config.Order, TieEmbeddings: c.Config.TieEmbeddings, MTPLayers: c.Config.MTPLayers,
	}
}

// TestMegatronFixtures compares every family with the groups Megatron-Core
// built for the same configuration, and every rejected configuration with an
// error quoting Megatron's own message.
func TestMegatronFixtures(t *testing.T) {
	for _, c := range loadMegatronCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			l, err := New(configFor(c))
			want := c.Groups
			wantErr := ""
			switch {
			case c.Error == "":
			case strings.Contains(c.Error, "When not using pp-last rank ordering"):
				wantErr = "When not using pp-last rank ordering"
				want = c.RankgenGroups
			case strings.Contains(c.Error, "Pipeline parallel groups are expected to be the same"):
				wantErr = "Pipeline parallel groups are expected to be the same"
				want = c.RankgenGroups
			case strings.Contains(c.Error, "is not divisible"):
				wantErr = "is not divisible"
			case strings.Contains(c.Error, "haven'tspecified the order"):
				wantErr = "haven'tspecified the order"
			default:
				// initialize_model_parallel fails on an order without "tp"
				// (see the README); the RankGenerator itself decides.
				switch {
				case strings.Contains(c.RankgenError, "haven'tspecified the order"):
					wantErr = "haven'tspecified the order"
				case c.RankgenGroups != nil:
					want = c.RankgenGroups
					if c.Config.PP > 1 && !reflect.DeepEqual(c.RankgenGroups["pp"], c.RankgenGroups["expert_pp"]) {
						wantErr = "Pipeline parallel groups are expected to be the same"
					}
				default:
					t.Fatalf("unclassified fixture: %s / %s", c.Error, c.RankgenError)
				}
			}
			switch {
			case wantErr == "" && err != nil:
				t.Fatalf("error %v; Megatron builds the groups", err)
			case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
				t.Fatalf("error %v, want one quoting %q (Megatron: %q)", err, wantErr, c.Error)
			}
			if want == nil {
				if l != nil {
					t.Fatalf("got a layout for a configuration Megatron cannot lay out")
				}
				return
			}
			if l == nil {
				t.Fatalf("no layout: %v", err)
			}
			for _, name := range FamilyNames {
				w, ok := want[name]
				if !ok {
					t.Fatalf("fixture lacks %s", name)
				}
				if got := l.Family(name).Groups(); !reflect.DeepEqual(got, w) {
					t.Errorf("%s:\n got %v\nwant %v", name, got, w)
				}
			}
		})
	}
}
