package estimate

// SOAP (train.optimizer "soap": Megatron-Core's emerging optimizers register
// the emerging_optimizers package's SOAP with their default entry,
// megatron/core/optimizer/emerging_optimizers.py at d98e8a64; the package
// at v0.3.0, the version Megatron-LM's pyproject.toml pins,
// emerging_optimizers/soap/soap.py) steps every 2-D weight but the
// embedding and output layer (those, norms and biases go to Adam). It is
// not tensor-parallel aware: it steps each rank's shard as the matrix it
// is. For an m×n weight it keeps Adam's two fp32 moments (m·n each, in the
// optimizer state parc already counts) and four fp32 matrices: the
// Kronecker factors L (m×m) and R (n×n) and their eigenbases Q_L and Q_R.
//
// Each step, with Megatron's settings (use_kl_shampoo true from
// OptimizerConfig.soap_use_kl_shampoo; the package's defaults otherwise:
// orthogonal iteration with one power step, not eigh, after the first
// step; TF32 matmuls, fp32_matmul_prec "high"), does for d in {m, n}:
//   - KL-Shampoo's factor update: Q_dᵀ·F_d for the approximate eigenvalues
//     (2d³), the correction Q_d·diag·Q_dᵀ (2d³), and its conjugation by the
//     gradient (2mn(m+n) for each factor);
//   - sorting the eigenbasis by Q_dᵀ·F_d's diagonal (2d³);
//   - one power step F_d·Q_d (2d³) and a QR of the d×d result
//     (eig.py orthogonal_iteration: torch.linalg.qr(Q).Q, which forms Q:
//     LAPACK's geqrf, 4/3·d³ for a square matrix, and orgqr, another
//     4/3·d³; LAPACK Working Note 41's operation counts);
//   - four projections of an m×n tensor onto both eigenbases (the first
//     moment out of the old basis and into the new, the gradient in, the
//     update out): 2mn(m+n) each.
// In all (32/3)(m³+n³) + 12mn(m+n) FLOPs, at the GPU's TF32 rate and the
// fitted GEMM efficiency (the QR runs in cuSOLVER, not as one GEMM: an
// approximation). The first step's eigendecomposition is not counted.

// soapMatrixBytes is the Kronecker factors and eigenbases of an m×n weight.
func soapMatrixBytes(m, n float64) float64 { return 4 * 2 * (m*m + n*n) }

// soapMatrixFLOPs is one SOAP step of an m×n weight.
func soapMatrixFLOPs(m, n float64) float64 {
	return 32.0/3*(m*m*m+n*n*n) + 12*m*n*(m+n)
}

// eachSOAPMatrix calls f with the shape of each 2-D weight SOAP steps on
// pipeline rank r's GPU (its shard under tensor or expert-tensor
// parallelism) and how many of it the GPU steps: with the layer-wise
// distributed optimizer each weight is stepped on one of the data-parallel
// ranks, so a GPU steps its share.
func (c *costModel) eachSOAPMatrix(r int, f func(m, n, count float64)) {
	c.eachLayerMatrices(r, false, func(ms []weightMatrix, times float64) {
		for _, w := range ms {
			n, _, tp := c.stepShare(w)
			rows, cols := w.shard(tp)
			f(rows, cols, times*n)
		}
	})
}

// soapStateBytes is the Kronecker factors and eigenbases rank r's GPU
// keeps; 0 without SOAP.
func (c *costModel) soapStateBytes(r int) float64 {
	if !c.set.soap {
		return 0
	}
	var b float64
	c.eachSOAPMatrix(r, func(m, n, count float64) { b += count * soapMatrixBytes(m, n) })
	return b
}

// soapStepS is rank r's SOAP step beyond Adam's elementwise update: its
// matrix work at the fitted GEMM efficiency of the TF32 rate; 0 without
// SOAP.
func (c *costModel) soapStepS(r int) float64 {
	if !c.set.soap || c.cm.r.fp32 <= 0 {
		return 0
	}
	var f float64
	c.eachSOAPMatrix(r, func(m, n, count float64) { f += count * soapMatrixFLOPs(m, n) })
	return f / (c.cm.r.fp32 * c.cal.GEMMEff)
}
