// conv_filter.cu: the gradient of a convolution's weights as an implicit
// GEMM on gemm.cu's 64×64 tiles (conv.cu's PcConv geometry), whole or
// split along its depth, and the reduction that adds the split's parts.
//
// The product is small (o × c·kh·kw: one 64×64 tile for a 1×1 64→64
// conv) and deep (n·oh·ow: 200704 for that conv at batch 64 on 56×56
// maps), so one block per tile would leave most of a GPU idle. Splitting
// the depth over gridDim.z, each block writing its partial tile to a
// workspace of its own (no atomics), then summing the parts in a fixed
// order keeps the result deterministic: it depends on the split, which
// the launcher derives from the shape and the GPU, never on timing.

// ---- gradient of the weights: M = o, N = c·khw, K = n·ohw ----
// dw[oi, (ci, ki, kj)] += Σ_(ni, oy, ox) dy[ni, oi, oy, ox]·x_col: op(a)
// is dy viewed o×K with depth (ni, oy, ox), op(b) im2col(x) transposed,
// K×N. Both are contiguous along the depth, so a thread takes one depth
// gk of each slab (16 consecutive outputs per warp row) and rows (and
// columns) bj + 16r; its four columns' (ci, ki, kj) are worked out once.
// kOK says the depth is inside the block's range (d may be past n there).
static __device__ __forceinline__ void pc_conv_bwd_filter_load(const float* __restrict__ x,
                                                               const float* __restrict__ dy,
                                                               const PcConv& g, int m0, int bj, PcDigits d,
                                                               bool kOK, const bool* colOK, const int* xoff,
                                                               const int* kiv, const int* kjv, float* ra,
                                                               float* rb) {
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

// pc_conv_bwd_filter_tile computes the block's tile of the product over
// the depths [klo, khi) and stores it in out (row stride N = c·khw): added
// to what is there when accumulate, else overwriting it (an empty range
// stores zeros). as and bs are the kernel's shared slabs.
static __device__ __forceinline__ void pc_conv_bwd_filter_tile(const float* __restrict__ x,
                                                               const float* __restrict__ dy,
                                                               float* __restrict__ out, const PcConv& g,
                                                               int klo, int khi, bool accumulate,
                                                               float (*as)[PC_SROW], float (*bs)[PC_SROW]) {
	int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
	int m0 = blockIdx.y * PC_TILE, n0 = blockIdx.x * PC_TILE;
	int M = g.o, N = g.c * g.khw, span = khi - klo;

	int kk = t & 15, bj = t >> 4;
	bool colOK[4];
	int xoff[4], kiv[4], kjv[4];
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		int col = n0 + bj + 16 * r;
		colOK[r] = col < N;
		PcDigits cd = pc_digits(colOK[r] ? col : 0, g.kh, g.kw); // (ci, ki, kj)
		xoff[r] = cd.hi * g.hw;
		kiv[r] = cd.mid;
		kjv[r] = cd.lo;
	}
	PcDigits kd = pc_digits(klo + kk, g.oh, g.ow); // (ni, oy, ox) of depth klo + kk
	PcDigits step16 = pc_digits(PC_SLAB, g.oh, g.ow);

	float acc[4][4];
	pc_tile_zero(acc);
	float ra[4], rb[4];
	pc_conv_bwd_filter_load(x, dy, g, m0, bj, kd, kk < span, colOK, xoff, kiv, kjv, ra, rb);
	for (int k0 = 0; k0 < span; k0 += PC_SLAB) {
		pc_tile_store_slab(as, bs, ra, rb, bj, kk, 16, 0, bj, kk, 16, 0);
		__syncthreads();
		if (k0 + PC_SLAB < span) {
			kd = pc_digits_add(kd, step16, g.oh, g.ow);
			pc_conv_bwd_filter_load(x, dy, g, m0, bj, kd, k0 + PC_SLAB + kk < span, colOK, xoff, kiv, kjv, ra,
			                        rb);
		}
		pc_tile_slab(as, bs, acc, tx, ty);
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
				float* p = out + (long long)row * N + col;
				*p = accumulate ? *p + acc[i][j] : acc[i][j];
			}
		}
	}
}

extern "C" __global__ void pc_conv_bwd_filter_acc(const float* __restrict__ x, const float* __restrict__ dy,
                                                  float* __restrict__ dw, int n, int c, int h, int w, int o,
                                                  int kh, int kw, int sh, int sw, int ph, int pw, int oh,
                                                  int ow) {
	alignas(16) __shared__ float pcBwdFilterA[PC_SLAB][PC_SROW];
	alignas(16) __shared__ float pcBwdFilterB[PC_SLAB][PC_SROW];
	PcConv g = pc_conv(n, c, h, w, o, kh, kw, sh, sw, ph, pw, oh, ow);
	pc_conv_bwd_filter_tile(x, dy, dw, g, 0, n * g.ohw, true, pcBwdFilterA, pcBwdFilterB);
}

extern "C" __global__ void pc_conv_bwd_filter_part(const float* __restrict__ x, const float* __restrict__ dy,
                                                   float* __restrict__ part, int n, int c, int h, int w,
                                                   int o, int kh, int kw, int sh, int sw, int ph, int pw,
                                                   int oh, int ow, int kchunk) {
	alignas(16) __shared__ float pcFilterPartA[PC_SLAB][PC_SROW];
	alignas(16) __shared__ float pcFilterPartB[PC_SLAB][PC_SROW];
	PcConv g = pc_conv(n, c, h, w, o, kh, kw, sh, sw, ph, pw, oh, ow);
	// In long long: the last part's end may pass an int before min cuts
	// it back to K.
	long long K = (long long)n * g.ohw, lo = (long long)blockIdx.z * kchunk;
	long long hi = lo + kchunk < K ? lo + kchunk : K;
	if (lo > K) lo = K;
	float* out = part + (long long)blockIdx.z * ((long long)o * c * g.khw);
	pc_conv_bwd_filter_tile(x, dy, out, g, (int)lo, (int)hi, false, pcFilterPartA, pcFilterPartB);
}

// pc_sum_parts_acc: one thread per element, each adding its parts in the
// order z = 0, 1, … onto dw's value in double and rounding once, so the
// result depends on the split alone.
extern "C" __global__ void pc_sum_parts_acc(const float* __restrict__ part, float* __restrict__ dw,
                                            long long len, int parts) {
	PC_FOR_EACH(i, len) {
		double s = dw[i];
		for (int z = 0; z < parts; ++z) s += part[(long long)z * len + i];
		dw[i] = (float)s;
	}
}
