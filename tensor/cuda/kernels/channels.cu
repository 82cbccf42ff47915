// channels.cu: copying a tensor into, or out of, a range of another's
// channels (Inception's concatenations and their backward).

// Element i of the part [n, ci, hw] is at offset i − ni·ci·hw in its
// sample's run of ci·hw values, which sits at channel coff of the whole.
static __device__ __forceinline__ long long pc_part_offset(long long i, int ci, int ctotal, int coff, int hw) {
	int rest;
	long long ni = pc_divmod(i, ci * hw, &rest);
	return (ni * ctotal + coff) * hw + rest;
}

extern "C" __global__ void pc_concat_part(const float* __restrict__ src, float* __restrict__ dst, int n, int ci,
                                          int ctotal, int coff, int hw) {
	long long total = (long long)n * ci * hw;
	if (total <= 0) return;
	PC_FOR_EACH(i, total) dst[pc_part_offset(i, ci, ctotal, coff, hw)] = src[i];
}

extern "C" __global__ void pc_split_part(const float* __restrict__ src, float* __restrict__ dst, int n, int ci,
                                         int ctotal, int coff, int hw) {
	long long total = (long long)n * ci * hw;
	if (total <= 0) return;
	PC_FOR_EACH(i, total) dst[i] = src[pc_part_offset(i, ci, ctotal, coff, hw)];
}
