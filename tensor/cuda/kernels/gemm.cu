// gemm.cu: the tiled matrix product pc_sgemm and its strided batch
// pc_sgemm_batched, and the tile machinery they share with the
// implicit-GEMM convolutions of conv.cu.
//
// A block of 16×16 threads computes a 64×64 tile of the output, each
// thread a 4×4 patch of it in registers. The depth is walked in slabs of
// 16: every thread loads four elements of op(a)'s 64×16 slab and four of
// op(b)'s 16×64 slab into registers, the block stores them in shared
// memory, and each thread then does 16 rank-1 updates of its patch from
// there. The next slab's global loads are issued before the current
// slab's arithmetic, so that their latency overlaps it.

#define PC_TILE 64 // output tile edge
#define PC_SLAB 16 // depth of a slab
// A slab row in shared memory, depth-major: 64 floats and 4 of padding.
// The padding keeps rows 16-byte aligned (each thread reads its four rows
// or columns as one 128-bit load) while it spreads the transposing stores
// of depth-contiguous operands over the banks (2-way conflicts at most).
#define PC_SROW 68

// pc_tile_slab adds one slab's product to the thread's patch: acc[i][j] +=
// Σ_kk as[kk][4·ty + i]·bs[kk][4·tx + j].
static __device__ __forceinline__ void pc_tile_slab(const float (*as)[PC_SROW], const float (*bs)[PC_SROW],
                                                    float (*acc)[4], int tx, int ty) {
	PC_UNROLL
	for (int kk = 0; kk < PC_SLAB; ++kk) {
		float av[4], bv[4];
		PC_UNROLL
		for (int i = 0; i < 4; ++i) av[i] = as[kk][4 * ty + i];
		PC_UNROLL
		for (int j = 0; j < 4; ++j) bv[j] = bs[kk][4 * tx + j];
		PC_UNROLL
		for (int i = 0; i < 4; ++i) {
			PC_UNROLL
			for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
		}
	}
}

static __device__ __forceinline__ void pc_tile_zero(float (*acc)[4]) {
	PC_UNROLL
	for (int i = 0; i < 4; ++i) {
		PC_UNROLL
		for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
	}
}

// PcDigits is a position k along a GEMM depth (or width) that a
// convolution flattens from three indices: k = (hi·nmid + mid)·nlo + lo,
// with mid < nmid and lo < nlo. Loaders step it by adding digits instead
// of dividing k anew for each slab.
struct PcDigits {
	int hi, mid, lo;
};

static __device__ __forceinline__ PcDigits pc_digits(int k, int nmid, int nlo) {
	PcDigits d;
	int q = k / nlo;
	d.lo = k - q * nlo;
	d.hi = q / nmid;
	d.mid = q - d.hi * nmid;
	return d;
}

// pc_digits_add returns a + d for digits d of a step (from pc_digits): each
// digit carries at most once, since both operands are below the radix.
static __device__ __forceinline__ PcDigits pc_digits_add(PcDigits a, PcDigits d, int nmid, int nlo) {
	PcDigits r;
	r.lo = a.lo + d.lo;
	r.mid = a.mid + d.mid;
	r.hi = a.hi + d.hi;
	if (r.lo >= nlo) {
		r.lo -= nlo;
		++r.mid;
	}
	if (r.mid >= nmid) {
		r.mid -= nmid;
		++r.hi;
	}
	return r;
}

// pc_sgemm_load_a loads the thread's four elements of op(a)'s slab at depth
// k0: element r is row ai + r·aiStep, depth ak + r·akStep of the slab. The
// thread's elements run along a's contiguous dimension (depth when a is
// m×k, rows when it is k×m), so that a warp's loads coalesce.
static __device__ __forceinline__ void pc_sgemm_load_a(const float* __restrict__ a, int lda, int transA, int m,
                                                       int k, int m0, int k0, int ai, int ak, int aiStep,
                                                       int akStep, float* ra) {
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		int gm = m0 + ai + r * aiStep, gk = k0 + ak + r * akStep;
		float v = 0.0f;
		if (gm < m && gk < k) v = transA ? a[(long long)gk * lda + gm] : a[(long long)gm * lda + gk];
		ra[r] = v;
	}
}

// pc_sgemm_load_b is pc_sgemm_load_a for op(b)'s slab: column bj + r·bjStep,
// depth bk + r·bkStep.
static __device__ __forceinline__ void pc_sgemm_load_b(const float* __restrict__ b, int ldb, int transB, int n,
                                                       int k, int n0, int k0, int bj, int bk, int bjStep,
                                                       int bkStep, float* rb) {
	PC_UNROLL
	for (int r = 0; r < 4; ++r) {
		int gn = n0 + bj + r * bjStep, gk = k0 + bk + r * bkStep;
		float v = 0.0f;
		if (gn < n && gk < k) v = transB ? b[(long long)gn * ldb + gk] : b[(long long)gk * ldb + gn];
		rb[r] = v;
	}
}

// pc_sgemm_tile computes the block's 64×64 tile of c = alpha·op(a)·op(b) +
// beta·c, staging the slabs in as and bs (the kernel's __shared__ arrays).
// pc_sgemm and pc_sgemm_batched are this with their operands.
static __device__ __forceinline__ void pc_sgemm_tile(int transA, int transB, int m, int n, int k, float alpha,
                                                     const float* __restrict__ a, int lda,
                                                     const float* __restrict__ b, int ldb, float beta, float* c,
                                                     int ldc, float (*as)[PC_SROW], float (*bs)[PC_SROW]) {
	int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
	int m0 = blockIdx.y * PC_TILE, n0 = blockIdx.x * PC_TILE;

	// a m×k is contiguous along the depth: 16 threads take a row's slab
	// and the rows step by 16; a k×m is contiguous along the rows: 64
	// threads take a depth's 64 rows and the depth steps by 4. Likewise b.
	int ai, ak, aiStep, akStep, bj, bk, bjStep, bkStep;
	if (transA) {
		ai = t & 63, ak = t >> 6, aiStep = 0, akStep = 4;
	} else {
		ai = t >> 4, ak = t & 15, aiStep = 16, akStep = 0;
	}
	if (transB) {
		bj = t >> 4, bk = t & 15, bjStep = 16, bkStep = 0;
	} else {
		bj = t & 63, bk = t >> 6, bjStep = 0, bkStep = 4;
	}

	float acc[4][4];
	pc_tile_zero(acc);
	float ra[4], rb[4];
	pc_sgemm_load_a(a, lda, transA, m, k, m0, 0, ai, ak, aiStep, akStep, ra);
	pc_sgemm_load_b(b, ldb, transB, n, k, n0, 0, bj, bk, bjStep, bkStep, rb);
	for (int k0 = 0; k0 < k; k0 += PC_SLAB) {
		PC_UNROLL
		for (int r = 0; r < 4; ++r) {
			as[ak + r * akStep][ai + r * aiStep] = ra[r];
			bs[bk + r * bkStep][bj + r * bjStep] = rb[r];
		}
		__syncthreads();
		if (k0 + PC_SLAB < k) {
			pc_sgemm_load_a(a, lda, transA, m, k, m0, k0 + PC_SLAB, ai, ak, aiStep, akStep, ra);
			pc_sgemm_load_b(b, ldb, transB, n, k, n0, k0 + PC_SLAB, bj, bk, bjStep, bkStep, rb);
		}
		pc_tile_slab(as, bs, acc, tx, ty);
		__syncthreads();
	}

	// beta == 0 must not read c: BLAS overwrites it, NaNs and all.
	PC_UNROLL
	for (int i = 0; i < 4; ++i) {
		int row = m0 + 4 * ty + i;
		if (row >= m) continue;
		PC_UNROLL
		for (int j = 0; j < 4; ++j) {
			int col = n0 + 4 * tx + j;
			if (col >= n) continue;
			float* p = c + (long long)row * ldc + col;
			float v = alpha * acc[i][j];
			if (beta != 0.0f) v += beta * *p;
			*p = v;
		}
	}
}

extern "C" __global__ void pc_sgemm(int transA, int transB, int m, int n, int k, float alpha,
                                    const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                                    float beta, float* c, int ldc) {
	alignas(16) __shared__ float pcGemmA[PC_SLAB][PC_SROW];
	alignas(16) __shared__ float pcGemmB[PC_SLAB][PC_SROW];
	pc_sgemm_tile(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pcGemmA, pcGemmB);
}

// Block z of the grid computes product z, its operands z·stride elements
// on: the batches of attention's per-head products (cuBLAS's
// cublasSgemmStridedBatched, where the device has no cuBLAS).
extern "C" __global__ void pc_sgemm_batched(int transA, int transB, int m, int n, int k, float alpha,
                                            const float* __restrict__ a, int lda, long long strideA,
                                            const float* __restrict__ b, int ldb, long long strideB, float beta,
                                            float* c, int ldc, long long strideC) {
	alignas(16) __shared__ float pcGemmBatchA[PC_SLAB][PC_SROW];
	alignas(16) __shared__ float pcGemmBatchB[PC_SLAB][PC_SROW];
	long long z = blockIdx.z;
	pc_sgemm_tile(transA, transB, m, n, k, alpha, a + z * strideA, lda, b + z * strideB, ldb, beta, c + z * strideC,
	              ldc, pcGemmBatchA, pcGemmBatchB);
}
