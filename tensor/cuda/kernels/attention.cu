// attention.cu: the row-wise steps of scaled dot-product attention; its
// products are batched GEMMs (pc_sgemm_batched or cuBLAS), one batch per
// query head over the sequences, launched by tensor/cuda.
//
// probs and its gradient are rows of seq values, B·H·S of them; row r is
// query position t = r mod seq of its (sequence, head). Under the causal
// mask the row sees positions u ≤ t, and the others hold exactly 0. One
// block per row: the maximum, the exponentials' sum and the backward's
// dot product are block reductions in double (common.cu), so they depend
// on the data alone, and each output rounds once from double.

extern "C" __global__ void pc_attn_softmax(float* probs, long long rows, int seq, int causal) {
	__shared__ double pcAttnSoftmax[PC_BLOCK];
	for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
		float* p = probs + row * seq;
		int t;
		pc_divmod(row, seq, &t);
		int n = causal ? t + 1 : seq;
		double m = -INFINITY;
		for (int j = threadIdx.x; j < n; j += PC_BLOCK) m = pc_nanmax(m, (double)p[j]);
		m = pc_block_max(pcAttnSoftmax, m);
		double sum = 0;
		for (int j = threadIdx.x; j < n; j += PC_BLOCK) sum += exp((double)p[j] - m);
		sum = pc_block_sum(pcAttnSoftmax, sum);
		// Each thread rewrites only the values it read.
		for (int j = threadIdx.x; j < seq; j += PC_BLOCK) p[j] = j < n ? (float)(exp((double)p[j] - m) / sum) : 0.0f;
	}
}

extern "C" __global__ void pc_attn_softmax_bwd(const float* __restrict__ probs, float* __restrict__ dprobs,
                                               long long rows, int seq, int causal) {
	__shared__ double pcAttnSoftmaxBwd[PC_BLOCK];
	for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
		const float* p = probs + row * seq;
		float* d = dprobs + row * seq;
		int t;
		pc_divmod(row, seq, &t);
		int n = causal ? t + 1 : seq;
		double dot = 0;
		for (int j = threadIdx.x; j < n; j += PC_BLOCK) dot += (double)d[j] * (double)p[j];
		dot = pc_block_sum(pcAttnSoftmaxBwd, dot);
		for (int j = threadIdx.x; j < seq; j += PC_BLOCK)
			d[j] = j < n ? (float)((double)p[j] * ((double)d[j] - dot)) : 0.0f;
	}
}

extern "C" __global__ void pc_attn_mask(float* x, long long rows, int seq) {
	long long total = rows * seq;
	if (seq <= 0) return;
	PC_FOR_EACH(i, total) {
		int u, t;
		long long row = pc_divmod(i, seq, &u);
		pc_divmod(row, seq, &t);
		if (u > t) x[i] = 0.0f;
	}
}
