package estimate

// Muon's optimizer step orthogonalises each 2-D weight matrix's momentum
// with Newton-Schulz iterations (Megatron-Core's emerging optimizers,
// megatron/core/optimizer/emerging_optimizers.py at d98e8a64, the
// emerging_optimizers package's quintic iteration, --muon-num-ns-steps 5 by
// default): for an m×n matrix (m ≤ n, transposed otherwise) each step forms
// A = X·Xᵀ (2m²n FLOPs), B = b·A + c·A² (2m³) and X = a·X + B·X (2m²n), at
// the bf16 tensor-core rate (--muon-fp32-matmul-prec medium). The
// embedding, output layer, norms and biases go to Adam; the router's weight
// is 2-D and goes to Muon. The layer-wise distributed optimizer steps each
// parameter on one data-parallel rank.
//
// With tensor parallelism, --muon-tp-mode decides what a rank does with its
// shard of a column- or row-parallel weight (TensorParallelMuon in
// Megatron's emerging_optimizers.py and newton_schulz_tp in the
// emerging_optimizers package, v0.3.0, the version Megatron-LM's
// pyproject.toml pins at d98e8a64):
//   - duplicated (Megatron's default) all-gathers the fp32 momentum over the
//     tensor-parallel group and iterates on the whole matrix on every rank;
//   - blockwise iterates on the shard alone, with no collective;
//   - distributed iterates on the shard with the Gram matrix over the
//     dimension tensor parallelism does not split (X is transposed so that
//     dimension is its rows, whichever is smaller): X·Xᵀ and B·X on the
//     shard, B = b·A + c·A² on the whole Gram matrix on every rank, and an
//     all-reduce of A (bf16) at every iteration, after one of the squared
//     norm (fp32) that scales X.

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

// layerMatrices are the 2-D weights an emerging optimizer steps in one
// decoder layer; splitQKV gives the query, key and value projections apart
// (Muon's --muon-split-qkv), else as the one fused weight Megatron holds.
func (sh modelShape) layerMatrices(moe, splitQKV bool) []weightMatrix {
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
		q, kv := float64(sh.q), float64(sh.kv)
		if splitQKV {
			w = append(w, weightMatrix{rows: q, cols: h, count: 1, tpRows: true}, weightMatrix{rows: kv, cols: h, count: 2, tpRows: true})
		} else {
			w = append(w, weightMatrix{rows: q + 2*kv, cols: h, count: 1, tpRows: true})
		}
		w = append(w, weightMatrix{rows: h, cols: q, count: 1, tpCols: true})
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

// muonWork is the Newton-Schulz work of pipeline rank r's GPU at one
// optimizer step and the time of its tensor-parallel collectives (link
// names a group's link); 0 without Muon.
func (c *costModel) muonWork(r int, link func(string) string) (flops, commS float64) {
	if !c.set.muon {
		return 0, 0
	}
	mode := c.s.Train.MuonTPMode
	work := func(ms []weightMatrix) (f, t float64) {
		for _, m := range ms {
			n, group, tp := c.stepShare(m)
			switch {
			case tp <= 1 || !m.tpRows && !m.tpCols:
				f += n * nsFLOPs(m.rows, m.cols)
			case mode == "blockwise":
				f += n * nsFLOPs(m.shard(tp))
			case mode == "distributed":
				gram, shard := m.cols, m.rows/float64(tp)
				if m.tpCols {
					gram, shard = m.rows, m.cols/float64(tp)
				}
				f += n * muonSteps * (4*gram*gram*shard + 2*gram*gram*gram)
				l := link(group)
				t += n * (c.allReduceTime(4, tp, l) + muonSteps*c.allReduceTime(2*gram*gram, tp, l))
			default: // duplicated
				f += n * nsFLOPs(m.rows, m.cols)
				t += n * c.gatherTime(4*m.rows*m.cols, tp, link(group))
			}
		}
		return f, t
	}
	// --muon-split-qkv (on by default): query, key and value apart.
	c.eachLayerMatrices(r, true, func(ms []weightMatrix, times float64) {
		f, t := work(ms)
		flops += times * f
		commS += times * t
	})
	return flops, commS
}

// stepShare is weight w as a GPU steps it with an emerging
// optimizer: n, how many of it (the routed experts' local share; with the
// layer-wise distributed optimizer, which steps each weight whole on one
// data-parallel rank, divided over those ranks), and the tensor-parallel
// group that splits it ("tp", or "etp" for the routed experts) and its size.
func (c *costModel) stepShare(w weightMatrix) (n float64, group string, tp int) {
	dense, expert := 1, 1
	if c.s.Train.LayerWiseOptimizer() {
		dense, expert = c.dataParallelShards()
	}
	if w.expert {
		return w.count / float64(c.ep) / float64(expert), "etp", c.etp
	}
	return w.count / float64(dense), "tp", c.tp
}

// shard is w's shape on one rank of a tensor-parallel group of tp.
func (w weightMatrix) shard(tp int) (rows, cols float64) {
	rows, cols = w.rows, w.cols
	if w.tpRows {
		rows /= float64(tp)
	}
	if w.tpCols {
		cols /= float64(tp)
	}
	return rows, cols
}

// eachLayerMatrices calls f with the 2-D weights of each decoder layer
// pipeline rank r holds (layerMatrices), and of its MTP layers with the
// times the rank holds them.
func (c *costModel) eachLayerMatrices(r int, splitQKV bool, f func(ms []weightMatrix, times float64)) {
	for _, chunk := range c.stages[r] {
		for l := chunk.First; l < chunk.First+chunk.Count; l++ {
			f(c.sh.layerMatrices(c.sh.isMoE(l), splitQKV), 1)
		}
	}
	if r == c.pp-1 && c.sh.mtp > 0 {
		// An MTP layer is a decoder layer like the last one and its eh
		// projection (2h → h, column-parallel).
		h := float64(c.sh.h)
		f(append(c.sh.layerMatrices(c.sh.isMoE(int(c.sh.layers)-1), splitQKV), weightMatrix{rows: h, cols: 2 * h, count: 1, tpRows: true}), float64(c.sh.mtp))
	}
}

// muonStepS is muonWork's Newton-Schulz work at the GEMM efficiency of the
// bf16 peak, and its collectives.
func (c *costModel) muonStepS(r int, link func(string) string) float64 {
	flops, commS := c.muonWork(r, link)
	if c.cm.r.bf16 <= 0 {
		return commS
	}
	return flops/(c.cm.r.bf16*c.cal.GEMMEff) + commS
}
