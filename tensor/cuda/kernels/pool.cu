// pool.cu: max and average pooling and torch's adaptive average pooling,
// forward and backward, over x [n, c, h, w] and y [n, c, oh, ow]. Every
// kernel gives each output element to one thread. The backwards gather:
// each dx element finds the windows that hold it and adds their share of
// dy in the order the CPU backend scatters them (window rows, then
// columns), so no two threads write one element and no atomics are needed.

// pc_pool_decode splits element i of an [planes, oh, ow] tensor into its
// plane and position.
static __device__ __forceinline__ long long pc_pool_decode(long long i, int oh, int ow, int* oy, int* ox) {
	long long q = pc_divmod(i, ow, ox);
	return pc_divmod(q, oh, oy);
}

// pc_pool_windows returns the first and last (inclusive) of the n windows
// of size k, stride s and padding pad along an axis that hold input r;
// none when lo > hi.
static __device__ __forceinline__ void pc_pool_windows(int r, int k, int s, int pad, int n, int* lo, int* hi) {
	int first = r + pad - k + 1; // windows start at i·s − pad ≤ r < i·s − pad + k
	*lo = first <= 0 ? 0 : (first + s - 1) / s;
	int last = (r + pad) / s;
	*hi = last < n - 1 ? last : n - 1;
}

// pc_pool_span clips window i (size k, stride s, padding pad) to [0, n).
static __device__ __forceinline__ void pc_pool_span(int i, int k, int s, int pad, int n, int* lo, int* hi) {
	int a = i * s - pad, b = a + k;
	*lo = a < 0 ? 0 : a;
	*hi = b < n ? b : n;
}

// pc_window_argmax returns the offset in the plane of the window's maximum
// as torch's CPU kernel records it: scanning rows then columns from −∞,
// it moves on only to a strictly greater value or a NaN, so the first of
// tied maxima wins (the window's first element when all are −∞), and the
// last NaN when there are NaNs.
static __device__ __forceinline__ int pc_window_argmax(const float* xp, int w, int r0, int r1, int c0, int c1) {
	float best = -INFINITY;
	int at = r0 * w + c0;
	for (int r = r0; r < r1; ++r)
		for (int cc = c0; cc < c1; ++cc) {
			float v = xp[r * w + cc];
			if (v > best || v != v) {
				best = v;
				at = r * w + cc;
			}
		}
	return at;
}

// A NaN wins the maximum, as Go's max and torch's kernel have it.
extern "C" __global__ void pc_maxpool_fwd(const float* __restrict__ x, float* __restrict__ y, int n, int c,
                                          int h, int w, int oh, int ow, int kh, int kw, int sh, int sw,
                                          int ph, int pw) {
	long long total = (long long)n * c * oh * ow;
	if (total <= 0) return;
	PC_FOR_EACH(i, total) {
		int oy, ox;
		long long plane = pc_pool_decode(i, oh, ow, &oy, &ox);
		const float* xp = x + plane * h * w;
		int r0, r1, c0, c1;
		pc_pool_span(oy, kh, sh, ph, h, &r0, &r1);
		pc_pool_span(ox, kw, sw, pw, w, &c0, &c1);
		float m = -INFINITY;
		for (int r = r0; r < r1; ++r)
			for (int cc = c0; cc < c1; ++cc) {
				float v = xp[r * w + cc];
				if (v > m || v != v) m = v;
			}
		y[i] = m;
	}
}

extern "C" __global__ void pc_maxpool_bwd(const float* __restrict__ x, const float* __restrict__ dy,
                                          float* __restrict__ dx, int n, int c, int h, int w, int oh, int ow,
                                          int kh, int kw, int sh, int sw, int ph, int pw) {
	long long total = (long long)n * c * h * w;
	if (total <= 0) return;
	PC_FOR_EACH(i, total) {
		int r, cc;
		long long plane = pc_pool_decode(i, h, w, &r, &cc);
		const float* xp = x + plane * h * w;
		const float* gp = dy + plane * oh * ow;
		int at = r * w + cc, i0, i1, j0, j1;
		pc_pool_windows(r, kh, sh, ph, oh, &i0, &i1);
		pc_pool_windows(cc, kw, sw, pw, ow, &j0, &j1);
		float s = 0.0f;
		for (int wi = i0; wi <= i1; ++wi) {
			int r0, r1;
			pc_pool_span(wi, kh, sh, ph, h, &r0, &r1);
			for (int wj = j0; wj <= j1; ++wj) {
				int c0, c1;
				pc_pool_span(wj, kw, sw, pw, w, &c0, &c1);
				if (pc_window_argmax(xp, w, r0, r1, c0, c1) == at) s += gp[wi * ow + wj];
			}
		}
		dx[i] = s;
	}
}

// The divisor is the whole window (count_include_pad); the sum runs in
// float32 in row-major order, as the CPU backend's does.
extern "C" __global__ void pc_avgpool_fwd(const float* __restrict__ x, float* __restrict__ y, int n, int c,
                                          int h, int w, int oh, int ow, int kh, int kw, int sh, int sw,
                                          int ph, int pw) {
	long long total = (long long)n * c * oh * ow;
	if (total <= 0) return;
	float div = (float)(kh * kw);
	PC_FOR_EACH(i, total) {
		int oy, ox;
		long long plane = pc_pool_decode(i, oh, ow, &oy, &ox);
		const float* xp = x + plane * h * w;
		int r0, r1, c0, c1;
		pc_pool_span(oy, kh, sh, ph, h, &r0, &r1);
		pc_pool_span(ox, kw, sw, pw, w, &c0, &c1);
		float s = 0.0f;
		for (int r = r0; r < r1; ++r)
			for (int cc = c0; cc < c1; ++cc) s += xp[r * w + cc];
		y[i] = s / div;
	}
}

extern "C" __global__ void pc_avgpool_bwd(const float* __restrict__ dy, float* __restrict__ dx, int n, int c,
                                          int h, int w, int oh, int ow, int kh, int kw, int sh, int sw,
                                          int ph, int pw) {
	long long total = (long long)n * c * h * w;
	if (total <= 0) return;
	float div = (float)(kh * kw);
	PC_FOR_EACH(i, total) {
		int r, cc;
		long long plane = pc_pool_decode(i, h, w, &r, &cc);
		const float* gp = dy + plane * oh * ow;
		int i0, i1, j0, j1;
		pc_pool_windows(r, kh, sh, ph, oh, &i0, &i1);
		pc_pool_windows(cc, kw, sw, pw, ow, &j0, &j1);
		float s = 0.0f;
		for (int wi = i0; wi <= i1; ++wi)
			for (int wj = j0; wj <= j1; ++wj) s += gp[wi * ow + wj] / div;
		dx[i] = s;
	}
}

// Adaptive cell i of an axis of in inputs pooled to out covers inputs
// floor(i·in/out) to ceil((i+1)·in/out), exclusive.
static __device__ __forceinline__ void pc_adaptive_span(int i, int in, int out, int* lo, int* hi) {
	*lo = (int)((long long)i * in / out);
	*hi = (int)(((long long)(i + 1) * in + out - 1) / out);
}

// pc_adaptive_cells returns the first and last cells (inclusive) that
// hold input r: the cells are monotone in both ends, so the first is
// floor(r·out/in) and the last the one before ceil((r+1)·out/in).
static __device__ __forceinline__ void pc_adaptive_cells(int r, int in, int out, int* lo, int* hi) {
	*lo = (int)((long long)r * out / in);
	int last = (int)(((long long)(r + 1) * out + in - 1) / in) - 1;
	*hi = last < out - 1 ? last : out - 1;
}

// The cell's sum is accumulated in double: a cell may be a whole feature
// map (global pooling).
extern "C" __global__ void pc_adaptive_avgpool_fwd(const float* __restrict__ x, float* __restrict__ y, int n,
                                                   int c, int h, int w, int oh, int ow) {
	long long total = (long long)n * c * oh * ow;
	if (total <= 0) return;
	PC_FOR_EACH(i, total) {
		int oy, ox;
		long long plane = pc_pool_decode(i, oh, ow, &oy, &ox);
		const float* xp = x + plane * h * w;
		int r0, r1, c0, c1;
		pc_adaptive_span(oy, h, oh, &r0, &r1);
		pc_adaptive_span(ox, w, ow, &c0, &c1);
		double s = 0;
		for (int r = r0; r < r1; ++r)
			for (int cc = c0; cc < c1; ++cc) s += (double)xp[r * w + cc];
		y[i] = (float)(s / (double)((r1 - r0) * (c1 - c0)));
	}
}

extern "C" __global__ void pc_adaptive_avgpool_bwd(const float* __restrict__ dy, float* __restrict__ dx, int n,
                                                   int c, int h, int w, int oh, int ow) {
	long long total = (long long)n * c * h * w;
	if (total <= 0) return;
	PC_FOR_EACH(i, total) {
		int r, cc;
		long long plane = pc_pool_decode(i, h, w, &r, &cc);
		const float* gp = dy + plane * oh * ow;
		int i0, i1, j0, j1;
		pc_adaptive_cells(r, h, oh, &i0, &i1);
		pc_adaptive_cells(cc, w, ow, &j0, &j1);
		float s = 0.0f;
		for (int ci = i0; ci <= i1; ++ci) {
			int r0, r1;
			pc_adaptive_span(ci, h, oh, &r0, &r1);
			if (r < r0 || r >= r1) continue;
			for (int cj = j0; cj <= j1; ++cj) {
				int c0, c1;
				pc_adaptive_span(cj, w, ow, &c0, &c1);
				if (cc < c0 || cc >= c1) continue;
				s += gp[ci * ow + cj] / (float)((r1 - r0) * (c1 - c0));
			}
		}
		dx[i] = s;
	}
}
