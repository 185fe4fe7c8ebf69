package estimate

// Muon's optimizer step orthogonalises each 2-D weight matrix's momentum
// with Newton-Schulz iterations (Megatron-Core's emerging optimizers,
// megatron/core/optimizer/emerging_optimizers.py at d98e8a64, the
// emerging_optimizers package's quintic iteration, --muon-num-ns-steps 5 by
// default): for an m×n matrix (m ≤ n, transposed otherwise) each step forms
// A = X·Xᵀ (2m²n FLOPs), B = b·A + c·A² (2m³) and X = a·X + B·X (2m²n), at
// the bf16 tensor-core rate (--muon-fp32-matmul-prec medium). The
// embedding, output layer, norms and biases go to Adam; the router's weight
// is 2-D and goes to Muon. With tensor parallelism, --muon-tp-mode
// duplicated (Megatron's default) gathers the whole matrix and iterates on
// it on every tensor-parallel rank; blockwise and distributed iterate on
// each rank's shard (distributed's all-reduces of X·Xᵀ are not timed). The
// layer-wise distributed optimizer steps each parameter on one
// data-parallel rank.

// muonSteps is --muon-num-ns-steps' default.
const muonSteps = 5

// nsFLOPs is one Newton-Schulz orthogonalisation of an r×c matrix.
func nsFLOPs(r, c float64) float64 {
	m, n := min(r, c), max(r, c)
	return muonSteps * (4*m*m*n + 2*m*m*m)
}

// weightMatrix is one 2-D weight of a decoder layer: rows × cols, count of
// them (the routed experts), tpRows or tpCols the dimension tensor (or
// expert-tensor) parallelism splits, expert for the routed experts.
type weightMatrix struct {
	rows, cols, count float64
	tpRows, tpCols    bool
	expert            bool
}

// layerMatrices are the 2-D weights Muon steps in one decoder layer.
func (sh modelShape) layerMatrices(moe bool) []weightMatrix {
	h := float64(sh.h)
	var w []weightMatrix
	if ml := sh.mla; ml != nil {
		a, qk := float64(sh.a), float64(ml.QKHeadDim+ml.QKPosEmbHeadDim)
		if ml.QLoraRank == nil {
			w = append(w, weightMatrix{rows: a * qk, cols: h, count: 1, tpRows: true})
		} else {
			q := float64(*ml.QLoraRank)
			w = append(w, weightMatrix{rows: q, cols: h, count: 1}, weightMatrix{rows: a * qk, cols: q, count: 1, tpRows: true})
		}
		kv := float64(ml.KVLoraRank)
		w = append(w, weightMatrix{rows: kv + float64(ml.QKPosEmbHeadDim), cols: h, count: 1},
			weightMatrix{rows: a * float64(ml.QKHeadDim+ml.VHeadDim), cols: kv, count: 1, tpRows: true},
			weightMatrix{rows: h, cols: a * float64(ml.VHeadDim), count: 1, tpCols: true})
	} else {
		// --muon-split-qkv (on by default): query, key and value apart.
		q, kv := float64(sh.q), float64(sh.kv)
		w = append(w, weightMatrix{rows: q, cols: h, count: 1, tpRows: true}, weightMatrix{rows: kv, cols: h, count: 2, tpRows: true},
			weightMatrix{rows: h, cols: q, count: 1, tpCols: true})
	}
	mlp := func(f, count float64, expert bool) {
		w = append(w, weightMatrix{rows: f * float64(sh.gated), cols: h, count: count, tpRows: true, expert: expert},
			weightMatrix{rows: h, cols: f, count: count, tpCols: true, expert: expert})
	}
	if !moe {
		mlp(float64(sh.f), 1, false)
		return w
	}
	w = append(w, weightMatrix{rows: float64(sh.experts), cols: h, count: 1}) // router
	mlp(float64(sh.fe), float64(sh.experts), true)
	if sh.fs > 0 {
		mlp(float64(sh.fs), 1, false)
	}
	return w
}

// muonStepFLOPs is the Newton-Schulz work of pipeline rank r's GPU at one
// optimizer step; 0 without Muon.
func (c *costModel) muonStepFLOPs(r int) float64 {
	if !c.set.muon {
		return 0
	}
	denseShards, expertShards := 1, 1
	if c.s.Train.LayerWiseOptimizer() {
		denseShards, expertShards = c.dataParallelShards()
	}
	shardTP := c.s.Train.MuonTPMode == "blockwise" || c.s.Train.MuonTPMode == "distributed"
	work := func(ms []weightMatrix) float64 {
		var f float64
		for _, m := range ms {
			rows, cols, count, tp, shards := m.rows, m.cols, m.count, float64(c.tp), float64(denseShards)
			if m.expert {
				// The routed experts: their local share, split by
				// expert-tensor parallelism.
				count, tp, shards = count/float64(c.ep), float64(c.etp), float64(expertShards)
			}
			if shardTP && m.tpRows {
				rows /= tp
			}
			if shardTP && m.tpCols {
				cols /= tp
			}
			f += count * nsFLOPs(rows, cols) / shards
		}
		return f
	}
	var flops float64
	for _, chunk := range c.stages[r] {
		for l := chunk.First; l < chunk.First+chunk.Count; l++ {
			flops += work(c.sh.layerMatrices(c.sh.isMoE(l)))
		}
	}
	if r == c.pp-1 && c.sh.mtp > 0 {
		// An MTP layer is a decoder layer like the last one and its eh
		// projection (2h → h, column-parallel).
		h := float64(c.sh.h)
		mtp := append(c.sh.layerMatrices(c.sh.isMoE(int(c.sh.layers)-1)), weightMatrix{rows: h, cols: 2 * h, count: 1, tpRows: true})
		flops += float64(c.sh.mtp) * work(mtp)
	}
	return flops
}

// muonStepS is muonStepFLOPs at the GEMM efficiency of the bf16 peak.
func (c *costModel) muonStepS(r int) float64 {
	if c.cm.r.bf16 <= 0 {
		return 0
	}
	return c.muonStepFLOPs(r) / (c.cm.r.bf16 * c.cal.GEMMEff)
}
