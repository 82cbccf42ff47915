// conv.cu: the convolutions as implicit GEMMs — the forward, the gradient
// with respect to the input and the one with respect to the weights — on
// gemm.cu's 64×64 tiles, each gathering its im2col operand from x or dy as
// it loads a slab, instead of materialising the lowered matrix.
//
// Shapes: x [n, c, h, w], wt [o, c, kh, kw], y [n, o, oh, ow]. Offsets
// within one sample are int (a sample holds far fewer than 2^31
// elements), offsets of whole samples long long.

// PcConv is a convolution's geometry, with the products the loaders use.
struct PcConv {
	int n, c, h, w, o, kh, kw, sh, sw, ph, pw, oh, ow;
	int khw, hw, ohw;
};

static __device__ __forceinline__ PcConv pc_conv(int n, int c, int h, int w, int o, int kh, int kw, int sh,
                                                 int sw, int ph, int pw, int oh, int ow) {
	PcConv g;
	g.n = n, g.c = c, g.h = h, g.w = w, g.o = o, g.kh = kh, g.kw = kw;
	g.sh = sh, g.sw = sw, g.ph = ph, g.pw = pw, g.oh = oh, g.ow = ow;
	g.khw = kh * kw, g.hw = h * w, g.ohw = oh * ow;
	return g;
}

// pc_tile_store_slab stores the registers of a slab in shared memory:
// element r of a at as[ak + r·akStep][ai + r·aiStep], likewise b.
static __device__ __forceinline__ void pc_tile_store_slab(float (*as)[PC_SROW], float (*bs)[PC_SROW],
                                                          const float* ra, const float* rb, int ai, int ak,
                                                          int aiStep, int akStep, int bj, int bk, int bjStep,
                                                          int bkStep) {
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		as[ak + r * akStep][ai + r * aiStep] = ra[r];
		bs[bk + r * bkStep][bj + r * bjStep] = rb[r];
	}
}

// ---- forward: M = o, N = n·ohw, K = c·khw ----
// op(a) is wt viewed o×K; op(b) is im2col(x), K×N: column (ni, oy, ox),
// depth (ci, ki, kj). A thread loads rows ai + 16r of the weights at
// depth gk (16 threads per row: the weights are contiguous along the
// depth), and of the gathered x one column — whose place in x, xs and
// (iy0, ix0), it works out once — at depths d, d + 4, d + 8, d + 12
// (a warp's columns are consecutive outputs, stride sw apart in x).
static __device__ __forceinline__ void pc_conv_fwd_load(const float* __restrict__ wt,
                                                        const float* __restrict__ xs, const PcConv& g,
                                                        int M, int K, int m0, int ai, int gk, bool colOK,
                                                        int iy0, int ix0, PcDigits d, PcDigits step4,
                                                        float* ra, float* rb) {
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		int gm = m0 + ai + 16 * r;
		ra[r] = (gm < M && gk < K) ? wt[(long long)gm * K + gk] : 0.0f;
	}
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		int iy = iy0 + d.mid, ix = ix0 + d.lo;
		float v = 0.0f;
		if (colOK && d.hi < g.c && (unsigned)iy < (unsigned)g.h && (unsigned)ix < (unsigned)g.w)
			v = xs[d.hi * g.hw + iy * g.w + ix];
		rb[r] = v;
		d = pc_digits_add(d, step4, g.kh, g.kw);
	}
}

extern "C" __global__ void pc_conv_fwd(const float* __restrict__ x, const float* __restrict__ wt,
                                       float* __restrict__ y, int n, int c, int h, int w, int o, int kh,
                                       int kw, int sh, int sw, int ph, int pw, int oh, int ow) {
	alignas(16) __shared__ float pcFwdA[PC_SLAB][PC_SROW];
	alignas(16) __shared__ float pcFwdB[PC_SLAB][PC_SROW];
	PcConv g = pc_conv(n, c, h, w, o, kh, kw, sh, sw, ph, pw, oh, ow);
	int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
	int m0 = blockIdx.y * PC_TILE, n0 = blockIdx.x * PC_TILE;
	int M = o, N = n * g.ohw, K = c * g.khw;

	int ai = t >> 4, ak = t & 15, bj = t & 63, bk = t >> 6;
	int gn = n0 + bj;
	bool colOK = gn < N;
	int ni = 0, oy = 0, ox = 0;
	if (colOK) {
		ni = gn / g.ohw;
		int p = gn - ni * g.ohw;
		oy = p / ow;
		ox = p - oy * ow;
	}
	const float* xs = x + (long long)ni * c * g.hw;
	int iy0 = oy * sh - ph, ix0 = ox * sw - pw;
	PcDigits kd = pc_digits(bk, kh, kw); // (ci, ki, kj) of depth bk
	PcDigits step4 = pc_digits(4, kh, kw), step16 = pc_digits(PC_SLAB, kh, kw);

	float acc[4][4];
	pc_tile_zero(acc);
	float ra[4], rb[4];
	pc_conv_fwd_load(wt, xs, g, M, K, m0, ai, ak, colOK, iy0, ix0, kd, step4, ra, rb);
	for (int k0 = 0; k0 < K; k0 += PC_SLAB) {
		pc_tile_store_slab(pcFwdA, pcFwdB, ra, rb, ai, ak, 16, 0, bj, bk, 0, 4);
		__syncthreads();
		if (k0 + PC_SLAB < K) {
			kd = pc_digits_add(kd, step16, kh, kw);
			pc_conv_fwd_load(wt, xs, g, M, K, m0, ai, k0 + PC_SLAB + ak, colOK, iy0, ix0, kd, step4, ra, rb);
		}
		pc_tile_slab(pcFwdA, pcFwdB, acc, tx, ty);
		__syncthreads();
	}

	// Output column (ni, p) of row oi is y[ni, oi, p].
	long long colOff[4];
	PC_UNROLL
	for (int j = 0; j < 4; ++j) {
		int col = n0 + 4 * tx + j;
		colOff[j] = -1;
		if (col < N) {
			int cn = col / g.ohw;
			colOff[j] = (long long)cn * o * g.ohw + (col - cn * g.ohw);
		}
	}
	PC_UNROLL
	for (int i = 0; i < 4; ++i) {
		int row = m0 + 4 * ty + i;
		if (row >= M) continue;
		PC_UNROLL
		for (int j = 0; j < 4; ++j)
			if (colOff[j] >= 0) y[colOff[j] + (long long)row * g.ohw] = acc[i][j];
	}
}

// ---- gradient of the input: M = c, N = n·hw, K = o·khw ----
// dx[ni, ci, ih, iw] = Σ_(oi, ki, kj) wt[oi, ci, ki, kj]·dy[ni, oi, oy, ox]
// where ih + ph − ki = oy·sh and iw + pw − kj = ox·sw fall in the output:
// op(a) is wt viewed c×K with depth (oi, ki, kj), op(b) gathers dy, K×N,
// column (ni, ih, iw). A thread keeps one row of op(a) (consecutive
// threads, consecutive channels: contiguous for 1×1 kernels) and one
// column of op(b) (consecutive inputs), both at depths d, d + 4, d + 8,
// d + 12 of each slab. With strides above 1 most terms fail the
// divisibility test and load nothing.
static __device__ __forceinline__ void pc_conv_bwd_data_load(const float* __restrict__ wt,
                                                             const float* __restrict__ dys,
                                                             const PcConv& g, bool rowOK, int ci,
                                                             bool colOK, int ihp, int iwp, bool unit,
                                                             PcDigits d, PcDigits step4, float* ra,
                                                             float* rb) {
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		bool kOK = d.hi < g.o;
		ra[r] = (rowOK && kOK) ? wt[(d.hi * g.c + ci) * g.khw + d.mid * g.kw + d.lo] : 0.0f;
		int yy = ihp - d.mid, xx = iwp - d.lo;
		float v = 0.0f;
		if (colOK && kOK && yy >= 0 && xx >= 0) {
			int oy = yy, ox = xx;
			bool hit = true;
			if (!unit) {
				oy = yy / g.sh;
				ox = xx / g.sw;
				hit = oy * g.sh == yy && ox * g.sw == xx;
			}
			if (hit && oy < g.oh && ox < g.ow) v = dys[d.hi * g.ohw + oy * g.ow + ox];
		}
		rb[r] = v;
		d = pc_digits_add(d, step4, g.kh, g.kw);
	}
}

extern "C" __global__ void pc_conv_bwd_data(const float* __restrict__ dy, const float* __restrict__ wt,
                                            float* __restrict__ dx, int n, int c, int h, int w, int o,
                                            int kh, int kw, int sh, int sw, int ph, int pw, int oh, int ow) {
	alignas(16) __shared__ float pcBwdDataA[PC_SLAB][PC_SROW];
	alignas(16) __shared__ float pcBwdDataB[PC_SLAB][PC_SROW];
	PcConv g = pc_conv(n, c, h, w, o, kh, kw, sh, sw, ph, pw, oh, ow);
	int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
	int m0 = blockIdx.y * PC_TILE, n0 = blockIdx.x * PC_TILE;
	int M = c, N = n * g.hw, K = o * g.khw;

	int ai = t & 63, kb = t >> 6; // row (and column) of the thread, first depth
	int ci = m0 + ai;
	bool rowOK = ci < M;
	int gn = n0 + ai;
	bool colOK = gn < N;
	int ni = 0, ih = 0, iw = 0;
	if (colOK) {
		ni = gn / g.hw;
		int q = gn - ni * g.hw;
		ih = q / w;
		iw = q - ih * w;
	}
	const float* dys = dy + (long long)ni * o * g.ohw;
	bool unit = sh == 1 && sw == 1;
	PcDigits kd = pc_digits(kb, kh, kw); // (oi, ki, kj) of depth kb
	PcDigits step4 = pc_digits(4, kh, kw), step16 = pc_digits(PC_SLAB, kh, kw);

	float acc[4][4];
	pc_tile_zero(acc);
	float ra[4], rb[4];
	pc_conv_bwd_data_load(wt, dys, g, rowOK, ci, colOK, ih + ph, iw + pw, unit, kd, step4, ra, rb);
	for (int k0 = 0; k0 < K; k0 += PC_SLAB) {
		pc_tile_store_slab(pcBwdDataA, pcBwdDataB, ra, rb, ai, kb, 0, 4, ai, kb, 0, 4);
		__syncthreads();
		if (k0 + PC_SLAB < K) {
			kd = pc_digits_add(kd, step16, kh, kw);
			pc_conv_bwd_data_load(wt, dys, g, rowOK, ci, colOK, ih + ph, iw + pw, unit, kd, step4, ra, rb);
		}
		pc_tile_slab(pcBwdDataA, pcBwdDataB, acc, tx, ty);
		__syncthreads();
	}

	// Output column (ni, q) of row ci is dx[ni, ci, q]; every element of
	// dx is some (row, column), so dx is overwritten whole.
	long long colOff[4];
	PC_UNROLL
	for (int j = 0; j < 4; ++j) {
		int col = n0 + 4 * tx + j;
		colOff[j] = -1;
		if (col < N) {
			int cn = col / g.hw;
			colOff[j] = (long long)cn * c * g.hw + (col - cn * g.hw);
		}
	}
	PC_UNROLL
	for (int i = 0; i < 4; ++i) {
		int row = m0 + 4 * ty + i;
		if (row >= M) continue;
		PC_UNROLL
		for (int j = 0; j < 4; ++j)
			if (colOff[j] >= 0) dx[colOff[j] + (long long)row * g.hw] = acc[i][j];
	}
}

// ---- gradient of the weights: M = o, N = c·khw, K = n·ohw ----
// dw[oi, (ci, ki, kj)] += Σ_(ni, oy, ox) dy[ni, oi, oy, ox]·x_col: op(a)
// is dy viewed o×K with depth (ni, oy, ox), op(b) im2col(x) transposed,
// K×N. Both are contiguous along the depth, so a thread takes one depth
// gk of each slab (16 consecutive outputs per warp row) and rows (and
// columns) bj + 16r; its four columns' (ci, ki, kj) are worked out once.
static __device__ __forceinline__ void pc_conv_bwd_filter_load(const float* __restrict__ x,
                                                               const float* __restrict__ dy,
                                                               const PcConv& g, int m0, int bj, PcDigits d,
                                                               const bool* colOK, const int* xoff,
                                                               const int* kiv, const int* kjv, float* ra,
                                                               float* rb) {
	bool kOK = d.hi < g.n;
	int p = d.mid * g.ow + d.lo;
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		int oi = m0 + bj + 16 * r;
		ra[r] = (kOK && oi < g.o) ? dy[((long long)d.hi * g.o + oi) * g.ohw + p] : 0.0f;
	}
	const float* xs = x + (long long)(kOK ? d.hi : 0) * g.c * g.hw;
	int iyb = d.mid * g.sh - g.ph, ixb = d.lo * g.sw - g.pw;
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		int iy = iyb + kiv[r], ix = ixb + kjv[r];
		float v = 0.0f;
		if (kOK && colOK[r] && (unsigned)iy < (unsigned)g.h && (unsigned)ix < (unsigned)g.w)
			v = xs[xoff[r] + iy * g.w + ix];
		rb[r] = v;
	}
}

extern "C" __global__ void pc_conv_bwd_filter_acc(const float* __restrict__ x, const float* __restrict__ dy,
                                                  float* __restrict__ dw, int n, int c, int h, int w, int o,
                                                  int kh, int kw, int sh, int sw, int ph, int pw, int oh,
                                                  int ow) {
	alignas(16) __shared__ float pcBwdFilterA[PC_SLAB][PC_SROW];
	alignas(16) __shared__ float pcBwdFilterB[PC_SLAB][PC_SROW];
	PcConv g = pc_conv(n, c, h, w, o, kh, kw, sh, sw, ph, pw, oh, ow);
	int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
	int m0 = blockIdx.y * PC_TILE, n0 = blockIdx.x * PC_TILE;
	int M = o, N = c * g.khw, K = n * g.ohw;

	int kk = t & 15, bj = t >> 4;
	bool colOK[4];
	int xoff[4], kiv[4], kjv[4];
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		int col = n0 + bj + 16 * r;
		colOK[r] = col < N;
		PcDigits cd = pc_digits(colOK[r] ? col : 0, kh, kw); // (ci, ki, kj)
		xoff[r] = cd.hi * g.hw;
		kiv[r] = cd.mid;
		kjv[r] = cd.lo;
	}
	PcDigits kd = pc_digits(kk, oh, ow); // (ni, oy, ox) of depth kk
	PcDigits step16 = pc_digits(PC_SLAB, oh, ow);

	float acc[4][4];
	pc_tile_zero(acc);
	float ra[4], rb[4];
	pc_conv_bwd_filter_load(x, dy, g, m0, bj, kd, colOK, xoff, kiv, kjv, ra, rb);
	for (int k0 = 0; k0 < K; k0 += PC_SLAB) {
		pc_tile_store_slab(pcBwdFilterA, pcBwdFilterB, ra, rb, bj, kk, 16, 0, bj, kk, 16, 0);
		__syncthreads();
		if (k0 + PC_SLAB < K) {
			kd = pc_digits_add(kd, step16, oh, ow);
			pc_conv_bwd_filter_load(x, dy, g, m0, bj, kd, colOK, xoff, kiv, kjv, ra, rb);
		}
		pc_tile_slab(pcBwdFilterA, pcBwdFilterB, acc, tx, ty);
		__syncthreads();
	}

	PC_UNROLL
	for (int i = 0; i < 4; ++i) {
		int row = m0 + 4 * ty + i;
		if (row >= M) continue;
		PC_UNROLL
		for (int j = 0; j < 4; ++j) {
			int col = n0 + 4 * tx + j;
			if (col < N) {
				float* p = dw + (long long)row * N + col;
				*p = *p + acc[i][j];
			}
		}
	}
}
