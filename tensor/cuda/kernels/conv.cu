// conv.cu: the convolutions as implicit GEMMs — the forward and the
// gradient with respect to the input here, the one with respect to the
// weights in conv_filter.cu — on gemm.cu's 64×64 tiles, each gathering its
// im2col operand from x or dy as it loads a slab, instead of materialising
// the lowered matrix.
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

// ---- gradient of the input: M = c, N = n·hw, K = o·khw, by phase ----
// dx[ni, ci, ih, iw] = Σ_(oi, ki, kj) wt[oi, ci, ki, kj]·dy[ni, oi, oy, ox]
// over the taps with ih + ph − ki = oy·sh and iw + pw − kj = ox·sw in the
// output. Only the taps ki ≡ ih + ph (mod sh) can hit one, so the inputs
// are split into sh·sw phases (ry, rx) = ((ih + ph) mod sh, (iw + pw) mod
// sw), one per blockIdx.z, and each phase is a GEMM of its own over just
// its taps: M = c, N = the phase's n·hy·wx inputs, K = o·kha·kwa with
// ki = ry + a·sh (a < kha), kj = rx + b·sw (b < kwa). With qy = (ih + ph −
// ry)/sh, tap a reads output row qy − a: no division, no wasted term (a
// stride-2 layer would otherwise do 4× the arithmetic, mostly on zeros).
// Stride 1 is one phase, the whole GEMM. The terms that remain are added
// in the same order as over all taps, so the result is the same.

// PcPhase is one phase of the input gradient: its residues, its first
// input row and column, how many rows and columns it has, its taps per
// kernel row and column, and the output row and column its first input
// row and column start the taps from.
struct PcPhase {
	int ry, rx, ih0, iw0, hy, wx, kha, kwa, qy0, qx0;
};

// pc_phase_axis sets one axis of a phase: r the residue, i0 the first
// input of [0, size) with (i + pad) mod s = r, cnt how many there are,
// taps how many of the kernel's k taps are ≡ r (mod s), and q0 = (i0 +
// pad − r)/s (≥ 0: i0 + pad − r is a multiple of s above −s).
static __device__ __forceinline__ void pc_phase_axis(int r, int size, int k, int s, int pad, int* i0, int* cnt,
                                                     int* taps, int* q0) {
	*i0 = ((r - pad) % s + s) % s;
	*cnt = *i0 < size ? (size - 1 - *i0) / s + 1 : 0;
	*taps = r < k ? (k - 1 - r) / s + 1 : 0;
	*q0 = (*i0 + pad - r) / s;
}

static __device__ __forceinline__ PcPhase pc_phase(const PcConv& g, int z) {
	PcPhase f;
	f.ry = z / g.sw;
	f.rx = z - f.ry * g.sw;
	pc_phase_axis(f.ry, g.h, g.kh, g.sh, g.ph, &f.ih0, &f.hy, &f.kha, &f.qy0);
	pc_phase_axis(f.rx, g.w, g.kw, g.sw, g.pw, &f.iw0, &f.wx, &f.kwa, &f.qx0);
	return f;
}

// op(a) is wt viewed c×K with depth (oi, a, b), op(b) gathers dy, K×N,
// column (ni, iy, ix) of the phase. A thread keeps one row of op(a)
// (consecutive threads, consecutive channels: contiguous for 1×1 kernels)
// and one column of op(b) (consecutive inputs of the phase, so
// consecutive outputs of dy), both at depths d, d + 4, d + 8, d + 12 of
// each slab; d.hi < ob says the depth is below K (ob = 0 when the phase
// has no taps, its radices kr, kc then 1 instead of 0).
static __device__ __forceinline__ void pc_conv_bwd_data_load(const float* __restrict__ wt,
                                                             const float* __restrict__ dys,
                                                             const PcConv& g, const PcPhase& f, bool rowOK,
                                                             int ci, bool colOK, int qy, int qx, int ob,
                                                             int kr, int kc, PcDigits d, PcDigits step4,
                                                             float* ra, float* rb) {
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		bool kOK = d.hi < ob;
		int ki = f.ry + d.mid * g.sh, kj = f.rx + d.lo * g.sw;
		ra[r] = (rowOK && kOK) ? wt[(d.hi * g.c + ci) * g.khw + ki * g.kw + kj] : 0.0f;
		int oy = qy - d.mid, ox = qx - d.lo;
		float v = 0.0f;
		if (colOK && kOK && (unsigned)oy < (unsigned)g.oh && (unsigned)ox < (unsigned)g.ow)
			v = dys[d.hi * g.ohw + oy * g.ow + ox];
		rb[r] = v;
		d = pc_digits_add(d, step4, kr, kc);
	}
}

extern "C" __global__ void pc_conv_bwd_data(const float* __restrict__ dy, const float* __restrict__ wt,
                                            float* __restrict__ dx, int n, int c, int h, int w, int o,
                                            int kh, int kw, int sh, int sw, int ph, int pw, int oh, int ow) {
	alignas(16) __shared__ float pcBwdDataA[PC_SLAB][PC_SROW];
	alignas(16) __shared__ float pcBwdDataB[PC_SLAB][PC_SROW];
	PcConv g = pc_conv(n, c, h, w, o, kh, kw, sh, sw, ph, pw, oh, ow);
	PcPhase f = pc_phase(g, blockIdx.z);
	int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
	int m0 = blockIdx.y * PC_TILE, n0 = blockIdx.x * PC_TILE;
	int M = c, N = n * f.hy * f.wx, K = o * f.kha * f.kwa;
	// The grid is sized for the largest phase: a block past this one's
	// inputs has nothing to write. The test is uniform over the block and
	// before any barrier.
	if (n0 >= N) return;
	int kr = f.kha > 0 ? f.kha : 1, kc = f.kwa > 0 ? f.kwa : 1, ob = K > 0 ? o : 0;

	int ai = t & 63, kb = t >> 6; // row (and column) of the thread, first depth
	int ci = m0 + ai;
	bool rowOK = ci < M;
	int gn = n0 + ai;
	bool colOK = gn < N;
	PcDigits cd = pc_digits(colOK ? gn : 0, f.hy, f.wx); // (ni, iy, ix) in the phase
	const float* dys = dy + (long long)cd.hi * o * g.ohw;
	int qy = f.qy0 + cd.mid, qx = f.qx0 + cd.lo;
	PcDigits kd = pc_digits(kb, kr, kc); // (oi, a, b) of depth kb
	PcDigits step4 = pc_digits(4, kr, kc), step16 = pc_digits(PC_SLAB, kr, kc);

	float acc[4][4];
	pc_tile_zero(acc);
	float ra[4], rb[4];
	pc_conv_bwd_data_load(wt, dys, g, f, rowOK, ci, colOK, qy, qx, ob, kr, kc, kd, step4, ra, rb);
	for (int k0 = 0; k0 < K; k0 += PC_SLAB) {
		pc_tile_store_slab(pcBwdDataA, pcBwdDataB, ra, rb, ai, kb, 0, 4, ai, kb, 0, 4);
		__syncthreads();
		if (k0 + PC_SLAB < K) {
			kd = pc_digits_add(kd, step16, kr, kc);
			pc_conv_bwd_data_load(wt, dys, g, f, rowOK, ci, colOK, qy, qx, ob, kr, kc, kd, step4, ra, rb);
		}
		pc_tile_slab(pcBwdDataA, pcBwdDataB, acc, tx, ty);
		__syncthreads();
	}

	// Output column (ni, iy, ix) of row ci is dx[ni, ci, ih0 + iy·sh,
	// iw0 + ix·sw]; every element of dx is in one phase as some (row,
	// column), so the phases overwrite dx whole (a phase without taps
	// writes its zeros).
	long long colOff[4];
	PC_UNROLL
	for (int j = 0; j < 4; ++j) {
		int col = n0 + 4 * tx + j;
		colOff[j] = -1;
		if (col < N) {
			PcDigits q = pc_digits(col, f.hy, f.wx);
			colOff[j] = (long long)q.hi * c * g.hw + (f.ih0 + q.mid * sh) * w + f.iw0 + q.lo * sw;
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
