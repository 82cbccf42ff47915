// norm.cu: LayerNorm (GPT-2) and RMSNorm (Llama) over rows of dim values,
// forward and backward, as package transformerops computes them on the
// CPU: every sum in double (a float32 sum of 4096 values loses about 12
// bits, and E[x²] − E[x]² in float32 cancels when the mean is large), the
// variance in two passes, and each output rounded once.
//
// The forwards and the input gradients give each row a block: its threads
// take the values t, t + 256, … and the block's tree adds their partial
// sums (common.cu), so the result depends on the data alone. A thread
// reads and writes only its own values, so y may alias x and dx dy. The
// parameter gradients sum over the rows instead: one block per column, as
// pc_col_sums_acc.

extern "C" __global__ void pc_layernorm_fwd(const float* x, const float* __restrict__ gamma,
                                            const float* __restrict__ beta, float* y, float* __restrict__ mean,
                                            float* __restrict__ rstd, int rows, int dim, float eps) {
	__shared__ double pcLnFwdSum[PC_BLOCK];
	for (int row = blockIdx.x; row < rows; row += gridDim.x) {
		const float* xr = x + (long long)row * dim;
		double s = 0;
		for (int j = threadIdx.x; j < dim; j += PC_BLOCK) s += (double)xr[j];
		double m = pc_block_sum(pcLnFwdSum, s) / dim;
		double q = 0;
		for (int j = threadIdx.x; j < dim; j += PC_BLOCK) {
			double c = (double)xr[j] - m;
			q += c * c;
		}
		double r = 1 / sqrt(pc_block_sum(pcLnFwdSum, q) / dim + (double)eps);
		if (threadIdx.x == 0) {
			mean[row] = (float)m;
			rstd[row] = (float)r;
		}
		float* yr = y + (long long)row * dim;
		for (int j = threadIdx.x; j < dim; j += PC_BLOCK)
			yr[j] = (float)(((double)xr[j] - m) * r * (double)gamma[j] + (double)beta[j]);
	}
}

extern "C" __global__ void pc_layernorm_bwd_data(const float* x, const float* dy, const float* __restrict__ gamma,
                                                 const float* __restrict__ mean, const float* __restrict__ rstd,
                                                 float* dx, int rows, int dim) {
	__shared__ double pcLnBwdG[PC_BLOCK];
	__shared__ double pcLnBwdGX[PC_BLOCK];
	for (int row = blockIdx.x; row < rows; row += gridDim.x) {
		long long at = (long long)row * dim;
		double m = mean[row], r = rstd[row];
		double sg = 0, sgx = 0;
		for (int j = threadIdx.x; j < dim; j += PC_BLOCK) {
			double g = (double)dy[at + j] * (double)gamma[j];
			sg += g;
			sgx += g * ((double)x[at + j] - m) * r;
		}
		pc_block_sum2(pcLnBwdG, pcLnBwdGX, &sg, &sgx);
		double a = sg / dim, b = sgx / dim;
		for (int j = threadIdx.x; j < dim; j += PC_BLOCK) {
			double xh = ((double)x[at + j] - m) * r;
			dx[at + j] = (float)(r * ((double)dy[at + j] * (double)gamma[j] - a - xh * b));
		}
	}
}

extern "C" __global__ void pc_rmsnorm_fwd(const float* x, const float* __restrict__ gamma, float* y,
                                          float* __restrict__ rstd, int rows, int dim, float eps) {
	__shared__ double pcRmsFwdSum[PC_BLOCK];
	for (int row = blockIdx.x; row < rows; row += gridDim.x) {
		const float* xr = x + (long long)row * dim;
		double q = 0;
		for (int j = threadIdx.x; j < dim; j += PC_BLOCK) q += (double)xr[j] * (double)xr[j];
		double r = 1 / sqrt(pc_block_sum(pcRmsFwdSum, q) / dim + (double)eps);
		if (threadIdx.x == 0) rstd[row] = (float)r;
		float* yr = y + (long long)row * dim;
		for (int j = threadIdx.x; j < dim; j += PC_BLOCK) yr[j] = (float)((double)xr[j] * r * (double)gamma[j]);
	}
}

extern "C" __global__ void pc_rmsnorm_bwd_data(const float* x, const float* dy, const float* __restrict__ gamma,
                                               const float* __restrict__ rstd, float* dx, int rows, int dim) {
	__shared__ double pcRmsBwdSum[PC_BLOCK];
	for (int row = blockIdx.x; row < rows; row += gridDim.x) {
		long long at = (long long)row * dim;
		double r = rstd[row];
		double sgx = 0;
		for (int j = threadIdx.x; j < dim; j += PC_BLOCK)
			sgx += (double)dy[at + j] * (double)gamma[j] * (double)x[at + j] * r;
		double b = pc_block_sum(pcRmsBwdSum, sgx) / dim;
		for (int j = threadIdx.x; j < dim; j += PC_BLOCK)
			dx[at + j] = (float)(r * ((double)dy[at + j] * (double)gamma[j] - (double)x[at + j] * r * b));
	}
}

extern "C" __global__ void pc_norm_param_grads_acc(const float* __restrict__ x, const float* __restrict__ dy,
                                                   const float* __restrict__ mean, const float* __restrict__ rstd,
                                                   float* __restrict__ dgamma, float* __restrict__ dbeta, int rows,
                                                   int dim) {
	__shared__ double pcNormGamma[PC_BLOCK];
	__shared__ double pcNormBeta[PC_BLOCK];
	for (int col = blockIdx.x; col < dim; col += gridDim.x) {
		double sg = 0, sb = 0;
		for (int r = threadIdx.x; r < rows; r += PC_BLOCK) {
			long long at = (long long)r * dim + col;
			double g = dy[at], m = mean != 0 ? (double)mean[r] : 0.0;
			sg += g * ((double)x[at] - m) * (double)rstd[r];
			sb += g;
		}
		pc_block_sum2(pcNormGamma, pcNormBeta, &sg, &sb);
		if (threadIdx.x == 0) {
			if (dgamma != 0) dgamma[col] = (float)((double)dgamma[col] + sg);
			if (dbeta != 0) dbeta[col] = (float)((double)dbeta[col] + sb);
		}
	}
}
