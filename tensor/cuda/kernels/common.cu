// common.cu: what several kernel files share — the grid-stride loop, cheap
// index division, the walk over one channel's elements, and the block-wide
// reductions in double that make every per-channel sum deterministic (a
// fixed tree, no atomics).
//
// Every name here, as in every file of this folder, is unique across the
// folder: all.cu compiles the files as one translation unit, for nvcc and
// for the CPU emulator alike.

#ifdef __CUDACC__
#define PC_UNROLL _Pragma("unroll")
#else
#define PC_UNROLL
#endif

// The threads of a 1-D kernel: 256 per block (the Go side launches that).
#define PC_BLOCK 256

// PC_FOR_EACH(i, total) visits every index of [0, total) once across the
// grid, whatever gridDim.x the launcher chose.
#define PC_FOR_EACH(i, total)                                                   \
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;       \
	     i < (total); i += (long long)gridDim.x * blockDim.x)

// pc_divmod returns i / d and sets *rem = i % d, for i ≥ 0 and d ≥ 1. A
// 64-bit division is a long software routine on the GPU, a 32-bit one a
// handful of instructions, and tensors rarely pass 2^32 elements: the
// branch is uniform in practice.
static __device__ __forceinline__ long long pc_divmod(long long i, int d, int* rem) {
	if (i <= 0xffffffffLL) {
		unsigned q = (unsigned)i / (unsigned)d;
		*rem = (int)((unsigned)i - q * (unsigned)d);
		return (long long)q;
	}
	long long q = i / d;
	*rem = (int)(i - q * d);
	return q;
}

// pc_channel_of returns the channel of element i of an [n, c, hw] tensor.
static __device__ __forceinline__ int pc_channel_of(long long i, int c, int hw) {
	int p;
	long long plane = pc_divmod(i, hw, &p);
	int ch;
	pc_divmod(plane, c, &ch);
	return ch;
}

// pc_plane_walk_init and pc_plane_walk_next walk a thread's elements e =
// t, t + 256, … of one channel of an [n, c, hw] tensor as (sample ni,
// position p): the element is at ni·c·hw + p from the channel's first. The
// step (dni, dp) = (256 / hw, 256 % hw) is added as a mixed-radix counter,
// so there is no division per element.
static __device__ __forceinline__ void pc_plane_walk_init(int e, int hw, int* ni, int* p) {
	*ni = e / hw;
	*p = e - *ni * hw;
}

static __device__ __forceinline__ void pc_plane_walk_next(int* ni, int* p, int dni, int dp, int hw) {
	int q = *p + dp, m = *ni + dni;
	if (q >= hw) {
		q -= hw;
		++m;
	}
	*p = q;
	*ni = m;
}

// pc_block_sum2 returns, to every thread of the block, the sums over the
// block of a and b. The tree is fixed, so the result depends only on the
// values each thread brings, not on timing. All threads must call it.
static __device__ __forceinline__ void pc_block_sum2(double* sa, double* sb, double* a, double* b) {
	int t = threadIdx.x;
	sa[t] = *a;
	sb[t] = *b;
	__syncthreads();
	for (int s = PC_BLOCK / 2; s > 0; s >>= 1) {
		if (t < s) {
			sa[t] += sa[t + s];
			sb[t] += sb[t + s];
		}
		__syncthreads();
	}
	*a = sa[0];
	*b = sb[0];
	// The next call overwrites the arrays: everyone must have read first.
	__syncthreads();
}

// pc_block_sum is pc_block_sum2 for one value.
static __device__ __forceinline__ double pc_block_sum(double* sa, double v) {
	int t = threadIdx.x;
	sa[t] = v;
	__syncthreads();
	for (int s = PC_BLOCK / 2; s > 0; s >>= 1) {
		if (t < s) sa[t] += sa[t + s];
		__syncthreads();
	}
	v = sa[0];
	__syncthreads();
	return v;
}

// pc_nanmax is max(a, b) with a NaN winning, as Go's max and torch's
// kernels have it (fmax would drop the NaN).
static __device__ __forceinline__ double pc_nanmax(double a, double b) {
	return (b > a || b != b) ? b : a;
}

// pc_block_max returns the block's maximum of v, a NaN winning.
static __device__ __forceinline__ double pc_block_max(double* sa, double v) {
	int t = threadIdx.x;
	sa[t] = v;
	__syncthreads();
	for (int s = PC_BLOCK / 2; s > 0; s >>= 1) {
		if (t < s) sa[t] = pc_nanmax(sa[t], sa[t + s]);
		__syncthreads();
	}
	v = sa[0];
	__syncthreads();
	return v;
}
