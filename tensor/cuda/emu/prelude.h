// prelude.h makes the CUDA C of ../kernels compile as C++17 with g++, for
// the emulator that runs it on the CPU (see sched.cc for how threads run).
//
// It covers what the kernels restrict themselves to (kernels/README.md):
// the built-in indices, __syncthreads(), __shared__ fixed-size arrays
// declared in kernel bodies, __device__ __forceinline__ helpers,
// __restrict__ and <math.h>/<float.h>; and CUDA's integer and float
// min/max and its round-to-nearest __fadd_rn, __fmul_rn and __fdiv_rn,
// which nvcc declares without a header. CUDA's approximate
// intrinsics (rsqrtf, __expf) are left undefined on purpose: emulated
// exactly, they would hide their error on the GPU.
#ifndef PIPECAST_EMU_PRELUDE_H
#define PIPECAST_EMU_PRELUDE_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)

// A __shared__ array becomes a function-local static: one copy that every
// thread of the block sees. That is the block's shared memory only
// because the emulator runs the blocks of a grid one at a time, each to
// completion, on one OS thread: the next block finds the previous block's
// values (a kernel must not read shared memory it did not write, on the
// GPU either). thread_local, because different logical devices launch
// kernels from different OS threads at the same time, each running its
// own block.
#define __shared__ static thread_local

struct uint3 {
	unsigned int x, y, z;
};

struct dim3 {
	unsigned int x, y, z;
};

// pc_emu_geometry is the launch's grid and block and the running block's
// index; pc_emu_thread_idx the running emulated thread's index, which the
// scheduler sets before it switches to the thread.
struct pc_emu_geometry {
	dim3 grid, block;
	uint3 index;  // the block's
};
extern thread_local pc_emu_geometry pc_emu_geom;
extern thread_local uint3 pc_emu_thread_idx;

// The built-in variables read the running thread's state; they are
// const, as in CUDA.
#define threadIdx (static_cast<const uint3&>(pc_emu_thread_idx))
#define blockIdx (static_cast<const uint3&>(pc_emu_geom.index))
#define blockDim (static_cast<const dim3&>(pc_emu_geom.block))
#define gridDim (static_cast<const dim3&>(pc_emu_geom.grid))

// pc_emu_syncthreads suspends the running thread until every thread of
// its block has reached a barrier (sched.cc). It is an opaque call, so the
// compiler reloads threadIdx after it.
extern "C" void pc_emu_syncthreads(void);
#define __syncthreads() pc_emu_syncthreads()

// CUDA's round-to-nearest float intrinsics, which nvcc never fuses into
// an FMA: here plain operations, which g++ does not fuse on x86-64
// without -mfma either. Unlike the approximate intrinsics, they are exact
// IEEE operations, so emulating them hides nothing.
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }

// CUDA's min and max (crt/math_functions.hpp): the usual arithmetic
// conversions, fmin/fmax for floating point.
template <class A, class B>
static inline typename std::common_type<A, B>::type min(A a, B b) {
	typedef typename std::common_type<A, B>::type T;
	if constexpr (std::is_floating_point<T>::value) {
		return fmin(static_cast<T>(a), static_cast<T>(b));
	} else {
		return static_cast<T>(a) < static_cast<T>(b) ? static_cast<T>(a) : static_cast<T>(b);
	}
}

template <class A, class B>
static inline typename std::common_type<A, B>::type max(A a, B b) {
	typedef typename std::common_type<A, B>::type T;
	if constexpr (std::is_floating_point<T>::value) {
		return fmax(static_cast<T>(a), static_cast<T>(b));
	} else {
		return static_cast<T>(a) > static_cast<T>(b) ? static_cast<T>(a) : static_cast<T>(b);
	}
}

#endif
