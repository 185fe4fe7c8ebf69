package spec

import (
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// base is a plan on 16 GPUs (2 nodes × 8), tp=2, pp=2.
func base() *Spec {
	return &Spec{
		Model:   Model{Layers: 16, Hidden: 2048, Heads: 16, Vocab: 50257, MakeVocabDivisibleBy: 128, Activation: "gelu"},
		Cluster: Cluster{Nodes: 2, GPUsPerNode: 8, NVLinkDomain: 8},
		Parallel: Parallel{TP: 2, PP: 2, VPP: 1, CP: 1, EP: 1, Order: "tp-cp-ep-dp-pp",
			OverlapP2P: true, CPCommType: "p2p", DistributedOptimizerInstances: 1},
		Train: Train{SeqLength: 2048, MicroBatch: 2, GlobalBatch: 64},
	}
}

func TestDeriveGrid(t *testing.T) {
	// Megatron's RankGenerator on world 16, tp=2 cp=2 pp=2 ep=4 etp=1 → dp=2, edp=2.
	s := base()
	s.Parallel.CP, s.Parallel.EP, s.Parallel.ETP = 2, 4, ptr(1)
	s.Model.MoE = &MoE{Experts: 8, LayerFreq: 1}
	d := Derive(s)
	if d.World != 16 || d.DP != 2 || d.ETP != 1 || d.EDP != 2 {
		t.Fatalf("world/dp/etp/edp = %d/%d/%d/%d, want 16/2/1/2", d.World, d.DP, d.ETP, d.EDP)
	}
	// gbs 64 / (mbs 2 · dp 2) = 16 microbatches.
	if d.Microbatches != 16 {
		t.Errorf("microbatches = %d, want 16", d.Microbatches)
	}
	// etp defaults to tp; edp = 16 / (2·1·2) = 4.
	s = base()
	d = Derive(s)
	if d.ETP != 2 || d.EDP != 4 || d.DP != 4 || d.Microbatches != 8 {
		t.Errorf("defaults: etp %d edp %d dp %d M %d, want 2 4 4 8", d.ETP, d.EDP, d.DP, d.Microbatches)
	}
}

func TestDeriveSequenceParallel(t *testing.T) {
	s := base()
	if !Derive(s).SP {
		t.Error("SP should default to on with tp > 1")
	}
	s.Parallel.SP = ptr(false)
	if Derive(s).SP {
		t.Error("SP off when the user says so")
	}
	s.Parallel.TP, s.Parallel.SP = 1, ptr(true)
	if Derive(s).SP {
		t.Error("Megatron switches SP off at tp = 1")
	}
}

func TestDeriveFFN(t *testing.T) {
	for _, tc := range []struct {
		hidden int
		act    string
		want   int
	}{
		{2048, "gelu", 8192},
		{4096, "swiglu", 10880}, // int(8·4096/3/64)·64 = int(170.67)·64
		{5120, "swiglu", 13632}, // int(213.33)·64
		{8192, "swiglu", 21824}, // int(341.33)·64
		{3072, "swiglu", 8192},  // 8·3072/3 = 8192 exactly
	} {
		s := base()
		s.Model.Hidden, s.Model.Activation = tc.hidden, tc.act
		if got := Derive(s).FFNHidden; got != tc.want {
			t.Errorf("ffn(%d, %s) = %d, want %d", tc.hidden, tc.act, got, tc.want)
		}
	}
	s := base()
	s.Model.FFNHidden = ptr(1000)
	s.Model.MoE = &MoE{Experts: 4, LayerFreq: 1}
	d := Derive(s)
	if d.FFNHidden != 1000 || d.MoEFFNHidden != 1000 {
		t.Errorf("explicit ffn: %d, moe ffn %d; want 1000 both", d.FFNHidden, d.MoEFFNHidden)
	}
}

func TestDeriveHeadsVocabPositions(t *testing.T) {
	s := base()
	d := Derive(s)
	if d.KVChannels != 128 || d.QueryGroups != 16 || d.MaxPositions != 2048 {
		t.Errorf("kv %d groups %d maxpos %d, want 128 16 2048", d.KVChannels, d.QueryGroups, d.MaxPositions)
	}
	// GPT-2: 50257 padded to a multiple of 128·tp.
	for tp, want := range map[int]int{1: 50304, 2: 50432, 8: 51200} {
		s.Parallel.TP = tp
		if got := Derive(s).PaddedVocab; got != want {
			t.Errorf("padded vocab tp=%d: %d, want %d", tp, got, want)
		}
	}
	s.Model.Vocab = 50304
	s.Parallel.TP = 1
	if got := Derive(s).PaddedVocab; got != 50304 {
		t.Errorf("an already padded vocab changed: %d", got)
	}
}

func TestDeriveMoELayers(t *testing.T) {
	got := MoELayerPattern(6, 2, 1)
	want := []bool{false, false, true, false, true, false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pattern(6, freq 2, dense 1) = %v, want %v", got, want)
	}
}

func ranges(pairs ...[2]int) []LayerRange {
	out := make([]LayerRange, len(pairs))
	for i, p := range pairs {
		out[i] = LayerRange{First: p[0], Count: p[1]}
	}
	return out
}

// Expected ranges come from Megatron's get_transformer_layer_offset and
// get_num_layers_to_build, evaluated by hand.
func TestStageLayers(t *testing.T) {
	cases := []struct {
		name   string
		layers int
		p      Parallel
		want   [][]LayerRange
	}{
		{"even", 16, Parallel{PP: 2, VPP: 1}, [][]LayerRange{ranges([2]int{0, 8}), ranges([2]int{8, 8})}},
		// transformer_block.py's comment: 8 layers, 2 stages, 2 virtual stages.
		{"interleaved", 8, Parallel{PP: 2, VPP: 2}, [][]LayerRange{ranges([2]int{0, 2}, [2]int{4, 2}), ranges([2]int{2, 2}, [2]int{6, 2})}},
		// ... and 4 model chunks: stage 0 holds layers 0, 2, 4, 6.
		{"interleaved-4", 8, Parallel{PP: 2, VPP: 4}, [][]LayerRange{
			ranges([2]int{0, 1}, [2]int{2, 1}, [2]int{4, 1}, [2]int{6, 1}),
			ranges([2]int{1, 1}, [2]int{3, 1}, [2]int{5, 1}, [2]int{7, 1})}},
		// L' = 15 + 1: rank 0 holds the embedding and 7 layers.
		{"account-embedding", 15, Parallel{PP: 2, VPP: 1, AccountForEmbedding: true}, [][]LayerRange{ranges([2]int{0, 7}), ranges([2]int{7, 8})}},
		// L' = 14 + 2 = 16, chunk 4: offsets v·8 + r·4 − 1 except (0,0).
		{"account-both-vpp", 14, Parallel{PP: 2, VPP: 2, AccountForEmbedding: true, AccountForLoss: true}, [][]LayerRange{
			ranges([2]int{0, 3}, [2]int{7, 4}), ranges([2]int{3, 4}, [2]int{11, 3})}},
		// pp=1 with both flags: the single stage holds every layer.
		{"account-pp1", 16, Parallel{PP: 1, VPP: 1, AccountForEmbedding: true, AccountForLoss: true}, [][]LayerRange{ranges([2]int{0, 16})}},
		{"uneven", 16, Parallel{PP: 4, VPP: 1, FirstStageLayers: ptr(2), LastStageLayers: ptr(2)}, [][]LayerRange{
			ranges([2]int{0, 2}), ranges([2]int{2, 6}), ranges([2]int{8, 6}), ranges([2]int{14, 2})}},
		// Offsets v·8 + 1 + middle_rank·3 (total chunk 1 + 6 + 1 = 8).
		{"uneven-vpp", 16, Parallel{PP: 4, VPP: 2, FirstStageLayers: ptr(2), LastStageLayers: ptr(2)}, [][]LayerRange{
			ranges([2]int{0, 1}, [2]int{8, 1}), ranges([2]int{1, 3}, [2]int{9, 3}),
			ranges([2]int{4, 3}, [2]int{12, 3}), ranges([2]int{7, 1}, [2]int{15, 1})}},
		{"uneven-first-only", 16, Parallel{PP: 2, VPP: 1, FirstStageLayers: ptr(6)}, [][]LayerRange{ranges([2]int{0, 6}), ranges([2]int{6, 10})}},
		{"uneven-pp1-all", 16, Parallel{PP: 1, VPP: 1, FirstStageLayers: ptr(16)}, [][]LayerRange{ranges([2]int{0, 16})}},
		// pp=1, 8 + 16: Megatron builds last_stage_layers = 16 layers on the only rank.
		{"uneven-pp1-last-wins", 16, Parallel{PP: 1, VPP: 1, FirstStageLayers: ptr(8), LastStageLayers: ptr(16)}, [][]LayerRange{ranges([2]int{0, 16})}},
		// Not splittable: nil.
		{"odd", 15, Parallel{PP: 2, VPP: 1}, nil},
		{"vpp-odd", 16, Parallel{PP: 2, VPP: 3}, nil},
		{"uneven-middle", 16, Parallel{PP: 4, VPP: 1, FirstStageLayers: ptr(3), LastStageLayers: ptr(2)}, nil},
		{"uneven-pp1-partial", 16, Parallel{PP: 1, VPP: 1, FirstStageLayers: ptr(8), LastStageLayers: ptr(4)}, nil},
		{"uneven-negative", 16, Parallel{PP: 3, VPP: 1, FirstStageLayers: ptr(10), LastStageLayers: ptr(10)}, nil},
	}
	for _, tc := range cases {
		got := StageLayers(tc.layers, tc.p)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Every split StageLayers returns covers the layers once, in model order
// (chunk v·pp + r follows chunk v·pp + r − 1).
func TestStageLayersCoverage(t *testing.T) {
	for layers := 1; layers <= 24; layers++ {
		for pp := 1; pp <= 6; pp++ {
			for vpp := 1; vpp <= 4; vpp++ {
				for _, acc := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					p := Parallel{PP: pp, VPP: vpp, AccountForEmbedding: acc[0], AccountForLoss: acc[1]}
					st := StageLayers(layers, p)
					if st == nil {
						continue
					}
					next := 0
					for v := range vpp {
						for r := range pp {
							lr := st[r][v]
							if lr.First != next || lr.Count < 0 {
								t.Fatalf("L=%d pp=%d vpp=%d acc=%v: chunk (%d,%d) = %+v, expected to start at %d", layers, pp, vpp, acc, r, v, lr, next)
							}
							next += lr.Count
						}
					}
					if next != layers {
						t.Fatalf("L=%d pp=%d vpp=%d: covers %d layers", layers, pp, vpp, next)
					}
				}
			}
		}
	}
}

// A pipeline of more stages (or virtual stages) than layers has no split,
// and StageLayers says so without building its pp·vpp table: the solver asks
// with every divisor of the world size as pp, up to hundreds of thousands
// (without the early answer one hostile spec's no-feasible-plan hints took
// 40 s, each call allocating a slice per stage).
func TestStageLayersBeyondTheLayers(t *testing.T) {
	for _, p := range []Parallel{
		{PP: 800_000, VPP: 1},
		{PP: 800_000, VPP: 1, AccountForEmbedding: true, AccountForLoss: true},
		{PP: 800_000, VPP: 1, FirstStageLayers: ptr(0), LastStageLayers: ptr(0)},
		{PP: 2, VPP: 800_000},
	} {
		var got [][]LayerRange
		if n := testing.AllocsPerRun(3, func() { got = StageLayers(61, p) }); got != nil || n != 0 {
			t.Errorf("%+v: %v with %.0f allocations, want nil and none", p, got, n)
		}
	}
	// The bound is the layers plus the embedding and the loss: 2 layers
	// with both accounted split over 4 stages.
	if StageLayers(2, Parallel{PP: 4, VPP: 1, AccountForEmbedding: true, AccountForLoss: true}) == nil {
		t.Error("2 layers + embedding + loss over pp=4: no split, want one layer per stage")
	}
}
