// Package emu runs the CUDA C kernels of pipecast's GPU backend on the
// CPU, so that the backend (package tensor/cuda) is tested on machines
// without a GPU. Its Driver keeps device memory in the C heap and runs
// each kernel to completion when it is launched; Open returns the
// backend's Device over it, which tensor/tensortest checks against the
// float64 references like any other backend, and the "cuda-emu" backend
// it registers lets the runner train through it. It is slow: the threads
// of every block run one after another.
//
// The package needs the cudaemu build tag and cgo with a C++17 compiler:
//
//	go test -tags cudaemu ./tensor/cuda/emu
//
// Without the tag it is this comment alone.
//
// # How the CUDA C runs
//
// emu.cc compiles ../kernels/all.cu as C++ after prelude.h, which defines
// CUDA's keywords away and its built-in variables (threadIdx, blockIdx,
// blockDim, gridDim) as the running emulated thread's, then the dispatch
// generated from kernels.h. The blocks of a grid run one at a time, x
// fastest, then y, then z; the threads of a block run as coroutines on
// one OS thread (sched.cc), each until it returns or reaches
// __syncthreads(), and a barrier opens once every thread has reached it.
// Because blocks never run at the same time, a __shared__ array can be a
// function-local static (thread_local, for the launches of other devices
// on other OS threads). A thread that returns while others of its block
// wait at a barrier fails the launch instead of hanging it. The tests run
// the suite a second time with blocks and threads in the reverse order.
//
// Floats round as IEEE float32 (no -ffast-math); g++ does not fuse
// multiply-adds on x86-64 without -march, where nvcc does, which the
// suite's tolerances absorb.
//
// # Checks
//
// Every allocation is filled with NaNs (device memory is not zeroed) and
// guarded on both sides: a launch that writes into a guard fails, naming
// the kernel. The grid and block must be ones CUDA takes, and every
// launch's arguments must match the kernel's prototype in kernels.h:
// their count, and pointers into live memory of the device.
//
// To look for undefined behaviour in the kernels (an index past a
// __shared__ array, a signed overflow), build them with UBSan:
//
//	CGO_CXXFLAGS="-O1 -fsanitize=undefined -fno-sanitize-recover=all" \
//	CGO_LDFLAGS=-fsanitize=undefined go test -tags cudaemu ./tensor/cuda/emu
package emu
