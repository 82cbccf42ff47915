// elementwise.cu: the elementwise kernels (fill, scale, add, axpy, ReLU)
// and the bias kernels of linear layers and convolutions, forward and
// backward. Each output element is one thread's; the operands of add and
// ReLU may alias the output, so nothing here is __restrict__.

extern "C" __global__ void pc_fill(float* y, long long n, float v) {
	PC_FOR_EACH(i, n) y[i] = v;
}

extern "C" __global__ void pc_scale(float* y, long long n, float alpha) {
	PC_FOR_EACH(i, n) y[i] = y[i] * alpha;
}

extern "C" __global__ void pc_add(float* y, const float* a, const float* b, long long n) {
	PC_FOR_EACH(i, n) y[i] = a[i] + b[i];
}

extern "C" __global__ void pc_axpy(float* y, const float* x, long long n, float alpha) {
	PC_FOR_EACH(i, n) y[i] = y[i] + alpha * x[i];
}

// A NaN compares false and passes; −0 becomes +0, as the CPU backend's
// bit selection gives.
extern "C" __global__ void pc_relu_fwd(const float* x, float* y, long long n) {
	PC_FOR_EACH(i, n) {
		float v = x[i];
		y[i] = v <= 0.0f ? 0.0f : v;
	}
}

// The gradient stops where y ≤ 0 (−0 included) and passes where y > 0 or
// is NaN, as torch's threshold_backward does.
extern "C" __global__ void pc_relu_bwd(const float* y, const float* dy, float* dx, long long n) {
	PC_FOR_EACH(i, n) {
		float g = dy[i];
		dx[i] = y[i] <= 0.0f ? 0.0f : g;
	}
}

extern "C" __global__ void pc_bias_rows(float* y, const float* bias, long long rows, int cols) {
	long long total = rows * cols;
	if (cols <= 0) return;
	PC_FOR_EACH(i, total) {
		int col;
		pc_divmod(i, cols, &col);
		y[i] = y[i] + bias[col];
	}
}

extern "C" __global__ void pc_bias_nchw(float* y, const float* bias, int n, int c, int hw) {
	long long total = (long long)n * c * hw;
	if (total <= 0) return;
	PC_FOR_EACH(i, total) y[i] = y[i] + bias[pc_channel_of(i, c, hw)];
}

// A block per column: its threads take rows t, t + 256, … in double, then
// the block's tree adds them up, so the sum's order is fixed. The rows of
// a linear layer's gradient are the batch (tens of rows), so a block is
// short-lived; reading one column per block is strided but small.
extern "C" __global__ void pc_col_sums_acc(const float* dy, float* dbias, int rows, int cols) {
	__shared__ double pcColSum[PC_BLOCK];
	for (int col = blockIdx.x; col < cols; col += gridDim.x) {
		double s = 0;
		for (int r = threadIdx.x; r < rows; r += PC_BLOCK) s += (double)dy[(long long)r * cols + col];
		s = pc_block_sum(pcColSum, s);
		if (threadIdx.x == 0) dbias[col] = (float)((double)dbias[col] + s);
	}
}

// A block per channel; each thread sums the elements t, t + 256, … of the
// channel's n·hw in double, and the block's tree adds those up.
extern "C" __global__ void pc_channel_sums_acc(const float* dy, float* dbias, int n, int c, int hw) {
	__shared__ double pcChanSum[PC_BLOCK];
	if (hw <= 0) return; // nothing to sum (and no division by 0)
	int dni = PC_BLOCK / hw, dp = PC_BLOCK % hw;
	long long sampleStride = (long long)c * hw;
	for (int ch = blockIdx.x; ch < c; ch += gridDim.x) {
		const float* base = dy + (long long)ch * hw;
		double s = 0;
		int ni, p;
		pc_plane_walk_init(threadIdx.x, hw, &ni, &p);
		while (ni < n) {
			s += (double)base[ni * sampleStride + p];
			pc_plane_walk_next(&ni, &p, dni, dp, hw);
		}
		s = pc_block_sum(pcChanSum, s);
		if (threadIdx.x == 0) dbias[ch] = (float)((double)dbias[ch] + s);
	}
}
