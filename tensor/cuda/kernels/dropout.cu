// dropout.cu: the counter-based dropout mask of tensor.DropoutKeep, with
// 64-bit unsigned arithmetic exactly as tensor/dropout.go computes it, so
// that every backend, and every split of a batch, drops the same units.

// pc_mix64 is SplitMix64's finaliser.
static __device__ __forceinline__ unsigned long long pc_mix64(unsigned long long z) {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

// pc_dropout_sample_hash is tensor.DropoutSampleHash.
static __device__ __forceinline__ unsigned long long pc_dropout_sample_hash(unsigned long long seed,
                                                                           unsigned long long step,
                                                                           unsigned long long layer,
                                                                           unsigned long long sample) {
	unsigned long long h = pc_mix64(seed ^ 0x9e3779b97f4a7c15ULL);
	h = pc_mix64(h ^ step);
	h = pc_mix64(h ^ layer);
	return pc_mix64(h ^ sample);
}

// Each thread hashes its element's sample anew: four mixes more per
// element, which costs less than the memory traffic it rides on. A
// dropped element is +0 whatever x holds, as on the CPU.
extern "C" __global__ void pc_dropout(const float* x, float* y, int rows, int rowLen, unsigned long long seed,
                                      unsigned long long step, unsigned long long layer, long long sample0,
                                      int threshold, float scale) {
	long long total = (long long)rows * rowLen;
	if (total <= 0) return;
	unsigned long long thr = (unsigned long long)(long long)threshold;
	PC_FOR_EACH(i, total) {
		int e;
		long long r = pc_divmod(i, rowLen, &e);
		unsigned long long h = pc_dropout_sample_hash(seed, step, layer, (unsigned long long)(sample0 + r));
		unsigned long long u = pc_mix64(h + (unsigned long long)e * 0x9e3779b97f4a7c15ULL) >> 40;
		y[i] = u >= thr ? x[i] * scale : 0.0f;
	}
}
