// embedding.cu: the token embedding's gather and its gradient's scatter.
//
// The backward adds each row of dy into its token's row of dtable; rows
// of a repeated token meet in one row, and float atomics would add them
// in whatever order the threads arrive (and the kernels use none). The
// caller groups the rows by token instead (a stable sort on the host,
// which has checked the ids anyway), so that one thread owns each
// (token, column) element and adds that token's rows in ascending row
// order: the float32 sums, and their rounding, are the CPU loop's
// exactly, whatever the grid, and no two threads write one element. The
// work spreads over distinct tokens × columns.

extern "C" __global__ void pc_embedding_fwd(const float* __restrict__ ids, const float* __restrict__ table,
                                            float* __restrict__ y, long long n, int dim) {
	long long total = n * dim;
	if (dim <= 0) return;
	PC_FOR_EACH(i, total) {
		int c;
		long long row = pc_divmod(i, dim, &c);
		long long id = (long long)ids[row];
		y[i] = table[id * dim + c];
	}
}

extern "C" __global__ void pc_embedding_bwd_acc(const float* __restrict__ ids, const int* __restrict__ order,
                                                const int* __restrict__ starts, const float* __restrict__ dy,
                                                float* __restrict__ dtable, int groups, int dim) {
	long long total = (long long)groups * dim;
	if (dim <= 0) return;
	PC_FOR_EACH(i, total) {
		int c;
		long long s = pc_divmod(i, dim, &c);
		int lo = starts[s], hi = starts[s + 1];
		float* dst = dtable + (long long)ids[order[lo]] * dim + c;
		float acc = *dst;
		for (int r = lo; r < hi; ++r) acc += dy[(long long)order[r] * dim + c];
		*dst = acc;
	}
}
