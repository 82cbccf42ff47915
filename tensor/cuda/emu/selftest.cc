//go:build cudaemu

// Self-test kernels of the scheduler, run by sched_test.go through
// pc_emu_selftest: they cannot go into kernels.h, which is the GPU
// backend's contract. cgo compiles them into the package (every .cc of
// the folder is), and only the package's tests call them.
#include "prelude.h"
#include "sched.h"

#include <stdio.h>

namespace {

__device__ __forceinline__ unsigned threadLinear() {
	return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

__device__ __forceinline__ unsigned blockLinear() {
	return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

// selftestSum sets out[b] = Σ_t (t + 1 + b) over the threads t of block
// b, by a tree in shared memory with a barrier per level (any block
// size: the tree's width is the next power of two).
__global__ void selftestSum(float* out, long long) {
	__shared__ float sh[1024];
	unsigned t = threadLinear(), n = blockDim.x * blockDim.y * blockDim.z, b = blockLinear();
	sh[t] = float(t + 1 + b);
	__syncthreads();
	unsigned p = 1;
	while (p < n) p <<= 1;
	for (unsigned s = p / 2; s > 0; s >>= 1) {
		if (t < s && t + s < n) sh[t] += sh[t + s];
		__syncthreads();
	}
	if (t == 0) out[b] = sh[0];
}

// selftestVisit adds 1 to out[g] for the global index g of each thread
// and has thread 0 of the grid append gridDim and blockDim to out.
__global__ void selftestVisit(float* out, long long) {
	unsigned threads = blockDim.x * blockDim.y * blockDim.z;
	unsigned long long g = (unsigned long long)blockLinear() * threads + threadLinear();
	out[g] += 1.0f;
	if (g == 0) {
		unsigned long long total = (unsigned long long)threads * gridDim.x * gridDim.y * gridDim.z;
		float dims[6] = {float(gridDim.x), float(gridDim.y), float(gridDim.z),
		                 float(blockDim.x), float(blockDim.y), float(blockDim.z)};
		for (int i = 0; i < 6; i++) out[total + i] = dims[i];
	}
}

// selftestRotate rotates a block-wide array by one place n times,
// reading the neighbour before a barrier and writing after it: a thread
// that ran past a barrier would read a rotated value. out[b·threads + t]
// ends as (t + n) mod threads.
__global__ void selftestRotate(float* out, long long n) {
	__shared__ float sh[1024];
	unsigned t = threadLinear(), threads = blockDim.x * blockDim.y * blockDim.z;
	sh[t] = float(t);
	__syncthreads();
	for (long long r = 0; r < n; r++) {
		float v = sh[(t + 1) % threads];
		__syncthreads();
		sh[t] = v;
		__syncthreads();
	}
	out[(unsigned long long)blockLinear() * threads + t] = sh[t];
}

// selftestEarlyReturn has thread 1 of block 0 return before a barrier the
// others wait at: the launch must fail.
__global__ void selftestEarlyReturn(float* out, long long) {
	if (blockLinear() == 0 && threadLinear() == 1) return;
	__syncthreads();
	out[threadLinear()] = 1.0f;
}

struct SelftestCall {
	void (*kernel)(float*, long long);
	float* out;
	long long n;
};

void callSelftest(void* p) {
	SelftestCall* c = static_cast<SelftestCall*>(p);
	c->kernel(c->out, c->n);
}

}  // namespace

extern "C" int pc_emu_selftest(int which, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, float* out, long long n, char* err, int errlen) {
	static void (*const kernels[])(float*, long long) = {selftestSum, selftestVisit, selftestRotate,
	                                                      selftestEarlyReturn};
	if (which < 0 || which >= int(sizeof kernels / sizeof kernels[0])) {
		snprintf(err, errlen, "no self-test kernel %d", which);
		return -1;
	}
	SelftestCall c{kernels[which], out, n};
	return pc_emu_run(callSelftest, &c, gx, gy, gz, bx, by, bz, err, errlen);
}
