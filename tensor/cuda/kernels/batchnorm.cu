// batchnorm.cu: batch normalisation over x [n, c, hw] (hw = 1 for [n, c]):
// the per-channel statistics and gradient sums, one block per channel in
// double, and the elementwise passes that apply them.
//
// The statistics follow the CPU backend: the sums of d = x − K and d², K
// the channel's first value, so that a common offset in x cannot cancel
// the variance away as E[x²] − E[x]² would.

extern "C" __global__ void pc_bn_stats(const float* __restrict__ x, float* mean, float* var, float* invstd,
                                       int n, int c, int hw, float eps) {
	__shared__ double pcBnStatsA[PC_BLOCK];
	__shared__ double pcBnStatsB[PC_BLOCK];
	if (n <= 0 || hw <= 0) return;
	// Thread t takes the channel's elements t, t + 256, … (see
	// pc_plane_walk_next), then the block's tree adds the partial sums.
	int dni = PC_BLOCK / hw, dp = PC_BLOCK % hw;
	long long stride = (long long)c * hw;
	double m = (double)n * hw;
	for (int ch = blockIdx.x; ch < c; ch += gridDim.x) {
		double shift = (double)x[(long long)ch * hw];
		double s1 = 0, s2 = 0;
		const float* xc = x + (long long)ch * hw;
		int ni, p;
		for (pc_plane_walk_init(threadIdx.x, hw, &ni, &p); ni < n; pc_plane_walk_next(&ni, &p, dni, dp, hw)) {
			double d = (double)xc[ni * stride + p] - shift;
			s1 += d;
			s2 += d * d;
		}
		pc_block_sum2(pcBnStatsA, pcBnStatsB, &s1, &s2);
		if (threadIdx.x == 0) {
			double mu = shift + s1 / m;
			double v = (s2 - s1 * s1 / m) / m;
			if (v < 0) v = 0; // round-off only
			mean[ch] = (float)mu;
			var[ch] = (float)v;
			invstd[ch] = (float)(1.0 / sqrt(v + (double)eps));
		}
	}
}

extern "C" __global__ void pc_bn_running(float* runMean, float* runVar, const float* mean, const float* var,
                                         int c, long long count, float momentum) {
	double mom = momentum, fm = (double)count;
	PC_FOR_EACH(ch, c) {
		double unbiased = (double)var[ch] * fm / (fm - 1);
		runMean[ch] = (float)((1 - mom) * (double)runMean[ch] + mom * (double)mean[ch]);
		runVar[ch] = (float)((1 - mom) * (double)runVar[ch] + mom * unbiased);
	}
}

extern "C" __global__ void pc_bn_invstd(const float* runVar, float* invstd, int c, float eps) {
	PC_FOR_EACH(ch, c) invstd[ch] = (float)(1.0 / sqrt((double)runVar[ch] + (double)eps));
}

// The scale invstd·gamma is formed in double and rounded once, as the CPU
// backend's eval forward does; x − mean is exact for x near the mean.
extern "C" __global__ void pc_bn_apply(const float* x, float* y, const float* mean, const float* invstd,
                                       const float* gamma, const float* beta, int n, int c, int hw) {
	long long total = (long long)n * c * hw;
	if (total <= 0) return;
	PC_FOR_EACH(i, total) {
		int ch = pc_channel_of(i, c, hw);
		float a = (float)((double)invstd[ch] * (double)gamma[ch]);
		y[i] = (x[i] - mean[ch]) * a + beta[ch];
	}
}

extern "C" __global__ void pc_bn_bwd_reduce(const float* __restrict__ x, const float* __restrict__ dy,
                                            const float* mean, const float* invstd, float* sumdy,
                                            float* sumdyxhat, int n, int c, int hw) {
	__shared__ double pcBnRedA[PC_BLOCK];
	__shared__ double pcBnRedB[PC_BLOCK];
	if (n <= 0 || hw <= 0) return;
	int dni = PC_BLOCK / hw, dp = PC_BLOCK % hw;
	long long stride = (long long)c * hw;
	for (int ch = blockIdx.x; ch < c; ch += gridDim.x) {
		double mu = (double)mean[ch];
		double s = 0, sx = 0;
		long long off = (long long)ch * hw;
		int ni, p;
		for (pc_plane_walk_init(threadIdx.x, hw, &ni, &p); ni < n; pc_plane_walk_next(&ni, &p, dni, dp, hw)) {
			long long e = off + ni * stride + p;
			double g = (double)dy[e];
			s += g;
			sx += g * ((double)x[e] - mu);
		}
		pc_block_sum2(pcBnRedA, pcBnRedB, &s, &sx);
		if (threadIdx.x == 0) {
			sumdy[ch] = (float)s;
			sumdyxhat[ch] = (float)(sx * (double)invstd[ch]);
		}
	}
}

// dx = p·dy + q·(x − mean) + r with the CPU backend's per-channel p, q and
// r, computed in double and rounded once: p = invstd·gamma, q =
// −p·invstd·sumdyxhat/M, r = −p·sumdy/M.
extern "C" __global__ void pc_bn_bwd_data(const float* x, const float* dy, const float* mean,
                                          const float* invstd, const float* gamma, const float* sumdy,
                                          const float* sumdyxhat, float* dx, int n, int c, int hw) {
	long long total = (long long)n * c * hw;
	if (total <= 0) return;
	double fm = (double)n * hw;
	PC_FOR_EACH(i, total) {
		int ch = pc_channel_of(i, c, hw);
		double inv = (double)invstd[ch];
		double scale = inv * (double)gamma[ch];
		float p = (float)scale;
		float q = (float)(-scale * inv * (double)sumdyxhat[ch] / fm);
		float r = (float)(-scale * (double)sumdy[ch] / fm);
		dx[i] = dy[i] * p + (x[i] - mean[ch]) * q + r;
	}
}

extern "C" __global__ void pc_bn_param_grads_acc(float* dgamma, float* dbeta, const float* sumdy,
                                                 const float* sumdyxhat, int c) {
	PC_FOR_EACH(ch, c) {
		dgamma[ch] = dgamma[ch] + sumdyxhat[ch];
		dbeta[ch] = dbeta[ch] + sumdy[ch];
	}
}
