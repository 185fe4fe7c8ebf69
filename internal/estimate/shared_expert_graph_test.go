package estimate

import "testing"

// TestRouterGraphHoldsSharedExpert: Megatron's partial CUDA graph of the
// router (cuda_graph_scope moe_router, transformer_engine) runs the shared
// expert inside the captured part unless the shared expert overlaps the
// all-to-all (MoELayer.forward and maybe_skip_or_early_return_by_cudagraph
// at d98e8a64; the DeepSeek-V3 GB200 guide §2.3). So the MoE block's host
// issue time drops by the shared expert's with the graph, and not when the
// shared expert overlaps, where it runs eagerly in the dispatcher.
// DeepSeek-V3's MoE layer on GB200: 4,096 tokens, EP 32, MXFP8.
func TestRouterGraphHoldsSharedExpert(t *testing.T) {
	g := presetGPU(t, "gb200_nvl72")
	cm := computeModel{r: newGPURates(g), cal: DefaultCalibration(), ab: 2, fp8: true, mainGradAccum: 4}
	ls := layerShape{T: 4096, Tsp: 4096, b: 1, s: 4096, cp: 1, tp: 1, h: 7168, fe: 2048, fs: 2048, gated: 2,
		experts: 256, topk: 8, ep: 32, etp: 1}
	host := func(c computeModel) float64 {
		f, b := c.moeBlock(ls)
		return f.host + b.host
	}
	eager := host(cm)
	graphed := cm
	graphed.graphs = cudaGraphs{router: true, preprocess: true}
	overlapped := graphed
	overlapped.sharedExpertOverlap = true
	sf, sb := cm.mlpBlock(ls, ls.T, ls.fs, ls.tp, false)
	router := eager - host(overlapped)
	if got, want := eager-host(graphed), router+sf.host+sb.host; got < 0.999*want || got > 1.001*want {
		t.Errorf("the router's graph takes %.3g s of host time off the MoE block, want the router's and preprocess's %.3g s and the shared expert's %.3g s", got, router, sf.host+sb.host)
	}
	if router <= 0 {
		t.Errorf("the router's graph takes no host time off the MoE block with the shared expert overlapped")
	}
}
