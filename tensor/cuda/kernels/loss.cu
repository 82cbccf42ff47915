// loss.cu: softmax cross-entropy, one block per row of logits. The row's
// maximum, its sum of exponentials and the loss are double, as on the CPU:
// shifting by the maximum keeps every exponential at most 1, and each
// gradient is rounded to float32 once, from double.

extern "C" __global__ void pc_softmax_xent(const float* __restrict__ logits, const int* __restrict__ labels,
                                           float* __restrict__ dlogits, double* __restrict__ losses, int rows,
                                           int classes, float scale) {
	__shared__ double pcXentRed[PC_BLOCK];
	double s = (double)scale;
	for (int row = blockIdx.x; row < rows; row += gridDim.x) {
		const float* x = logits + (long long)row * classes;
		double m = -INFINITY;
		for (int j = threadIdx.x; j < classes; j += PC_BLOCK) m = pc_nanmax(m, (double)x[j]);
		m = pc_block_max(pcXentRed, m);
		double sum = 0;
		for (int j = threadIdx.x; j < classes; j += PC_BLOCK) sum += exp((double)x[j] - m);
		sum = pc_block_sum(pcXentRed, sum);
		int label = labels[row];
		if (threadIdx.x == 0) losses[row] = s * (log(sum) - ((double)x[label] - m));
		if (dlogits != 0) {
			float* g = dlogits + (long long)row * classes;
			for (int j = threadIdx.x; j < classes; j += PC_BLOCK) {
				double e = exp((double)x[j] - m);
				g[j] = j == label ? (float)(s * (e / sum - 1)) : (float)(s * e / sum);
			}
		}
	}
}
