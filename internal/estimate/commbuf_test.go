package estimate

import (
	"testing"

	"parc.dev/parc/internal/spec"
)

// The buffer sizes below are worked by hand from DeepEP's sources (hybrid-ep
// branch 94a9f8f: csrc/config.hpp size hints, deep_ep/buffer.py configs,
// csrc/deep_ep.cpp Buffer::Buffer; hybrid_ep/buffer/*.cu allocations), not
// from the Go code, for DeepSeek-V3's hidden size 7168 (bf16 tokens: 14336
// bytes) and Megatron's 20 SMs (10 channels).
func TestDeepEPBufferBytes(t *testing.T) {
	const workspace = 32 << 20
	cases := []struct {
		name      string
		n         int
		nvl, rdma float64
	}{
		// 8 ranks, one node: dispatch and combine both queue 256 tokens per
		// NVLink peer. Per token 14336 + 8 (SourceMeta) + 128·8 + 128·4 +
		// 128·4 = 16392 bytes; 10·8·256·16392 = 335,708,160, plus
		// 10·8·(2·1+3)·4 = 1,600 of counters, rounded up to 128:
		// 335,709,824; plus 192 bytes of barrier signals and pointers and
		// the 32 MiB workspace. No RDMA buffer (num_ranks ≤ 8).
		{"ep8", 8, 335709824 + 192 + workspace, 0},
		// 64 ranks: 288 tokens per NVLink peer (both configs):
		// 10·8·288·16392 = 377,671,680 + 10·8·19·4 = 6,080 → 377,677,824
		// after rounding. RDMA: 8 peers, the 128-token queue rounded up to
		// the send chunk (28 dispatch, 20 combine: 140 both),
		// 10·8·140·(16392+16)·2 = 367,539,200 + 10·8·18·2·4 = 11,520 =
		// 367,550,720, one 512 MiB NVSHMEM granule.
		{"ep64", 64, 377677824 + 192 + workspace, 1 << 29},
	}
	for _, c := range cases {
		nvl, rdma := DeepEPBufferBytes(14336, c.n, 20)
		if nvl != c.nvl || rdma != c.rdma {
			t.Errorf("%s: DeepEP buffer nvl %.0f, rdma %.0f bytes; want %.0f, %.0f", c.name, nvl, rdma, c.nvl, c.rdma)
		}
	}
	if nvl, rdma := DeepEPBufferBytes(14336, 1, 20); nvl != 0 || rdma != 0 {
		t.Errorf("one rank: %.0f + %.0f bytes, want none", nvl, rdma)
	}
}

func TestHybridEPBufferBytes(t *testing.T) {
	// DeepSeek-V3 at ep 64 on one NVL72 domain, 4096 tokens per rank, 4
	// local experts: max_num_of_tokens = 4096·64 = 262,144; bf16 tokens
	// 262,144·7168·2 = 3,758,096,384, fp32 probabilities over the domain's
	// 256 experts 262,144·256·4 = 268,435,456, fp32 scales per 128
	// elements 262,144·56·4 = 58,720,256, the routing-map all-gather
	// 256·262,144 = 67,108,864: 4,152,360,960 bytes (3.87 GiB).
	if got := HybridEPBufferBytes(4096, 7168, 4, 64, 1); got != 4152360960 {
		t.Errorf("HybridEP ep 64 on one domain: %.0f bytes, want 4,152,360,960", got)
	}
	// The same group over 8 nodes of 8 (H100): the NVLink part is the same
	// size but its probabilities cover the node's 32 experts
	// (262,144·32·4 = 33,554,432), and the RDMA part adds this rank's
	// tokens, probabilities over all 256 experts and scales
	// (4096·(14336 + 1024 + 224) = 63,832,064) and per other node (7) the
	// dispatch tokens, probabilities and scales and the combine's two
	// token and probability buffers (4096·7·(3·14336 + 3·128 + 224) =
	// 1,250,557,952).
	want := 3758096384.0 + 33554432 + 58720256 + 67108864 + 63832064 + 1250557952
	if got := HybridEPBufferBytes(4096, 7168, 4, 8, 8); got != want {
		t.Errorf("HybridEP ep 64 over 8 nodes: %.0f bytes, want %.0f", got, want)
	}
}

// TestFlexBufferInMemory: the buffer is part of every MoE stage's total,
// only with the flex dispatcher.
func TestFlexBufferInMemory(t *testing.T) {
	for _, backend := range []string{"deepep", "hybridep"} {
		s := deepSeekLayer(t, true)
		s.Parallel.PP = 2
		s.Train.GlobalBatch = 128
		s.Model.MoE.Dispatcher = "flex"
		s.Model.MoE.FlexDispatcherBackend = backend
		d := spec.Derive(s)
		e, _ := Run(s, d, nil, nil)
		if e == nil || len(e.Memory.Stages) != 2 || d.ETP != 2 {
			t.Fatalf("%s: no estimate, or expert tp %d (Megatron's default is tp, 2)", backend, d.ETP)
		}
		var want float64
		switch backend {
		case "deepep":
			// the group is tp_ep: etp·ep = 2·16 = 32 ranks
			nvl, rdma := DeepEPBufferBytes(7168*2, 32, 20)
			want = nvl + rdma
		case "hybridep":
			// 4096 tokens over sp 2 = 2048 per rank, 32 ranks on one
			// NVL72 domain, 256/16 = 16 local experts
			want = HybridEPBufferBytes(2048, 7168, 16, 32, 1)
		}
		for _, st := range e.Memory.Stages {
			if float64(st.CommBuffers) != want {
				t.Errorf("%s stage %d: buffer %d bytes, want %.0f", backend, st.Stage, st.CommBuffers, want)
			}
			if sum := st.Weights + st.Gradients + st.Optimizer + st.Activations + st.CommBuffers; sum != st.Total {
				t.Errorf("%s stage %d: parts %d, total %d", backend, st.Stage, sum, st.Total)
			}
		}
		s.Model.MoE.Dispatcher = "alltoall"
		e, _ = Run(s, spec.Derive(s), nil, nil)
		for _, st := range e.Memory.Stages {
			if st.CommBuffers != 0 {
				t.Errorf("alltoall stage %d: buffer %d bytes, want none", st.Stage, st.CommBuffers)
			}
		}
	}
}
