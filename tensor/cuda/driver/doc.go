// Package driver is the CUDA backend's Driver on real GPUs: it binds the
// CUDA driver API through gorgonia.org/cu and registers the "cuda"
// backend, whose devices are cuda.Device values over a Driver of this
// package.
//
// It owns what touches the GPU: contexts, streams, device memory and
// copies, loading the kernels' fatbin (tensor/cuda/kernels) and launching
// them, and cuBLAS and cuDNN, which it opens at run time. Everything else
// (allocation caching, launch geometry, the choice between a library and
// our kernels) is package cuda's.
//
// # Building
//
// Every file but this one needs the cuda build tag, and cgo. The build
// needs the CUDA headers and the libcuda stub that the binary links
// against; on Debian they come with nvidia-cuda-dev (after adding
// "contrib non-free" to the apt sources):
//
//	CGO_LDFLAGS=-L/usr/lib/x86_64-linux-gnu/stubs go build -tags cuda ./cmd/pipecast
//
// At run time the binary needs libcuda.so.1 from the NVIDIA driver, and a
// GPU: gorgonia.org/cu initialises the driver in its package init and
// ends the process (exit status 1) when that fails, so a cuda build
// cannot start on a machine without one, not even to run the CPU
// backend. The default build has only this documentation.
//
// # Devices, contexts and streams
//
// Open(i) opens logical device i on physical GPU i mod the GPU count. All
// logical devices on one GPU share its primary context (retained once per
// process, and kept) and the module of kernels loaded into it; each has
// a stream of its own, created non-blocking, on which all its work is
// queued. Several logical devices on one GPU are streams sharing all its
// multiprocessors (Info.Share "stream"); one alone has it "whole". Peer
// access is enabled between the GPUs in use wherever the hardware allows
// (Info.PeerAccess).
//
// CUDA makes a context current per OS thread, and goroutines move
// between threads, so every method locks its goroutine to its thread
// (runtime.LockOSThread), makes the context current, does its work and
// unlocks.
//
// # cuBLAS and cuDNN
//
// Neither is linked: a small C shim opens them with dlopen at the first
// Open, so that whichever major version a machine has serves, and a
// machine without them runs pipecast's own kernels instead (BLAS and DNN
// return nil). The search tries, in order:
//
//	cuBLAS: $PIPECAST_CUBLAS, libcublas.so.13, .so.12, .so.11, libcublas.so
//	cuDNN:  $PIPECAST_CUDNN, libcudnn.so.9, .so.8, libcudnn.so
//
// where the variables name a library's path, for libraries off the
// loader's path (such as the ones in PyTorch's pip packages,
// site-packages/nvidia/cublas/lib and nvidia/cudnn/lib: add those
// directories to LD_LIBRARY_PATH too, for the libraries they load in
// turn). LibraryNotes says what was found and why not; Info.Libraries
// gives the versions in use. Both libraries compute in float32 with FMA:
// cuBLAS keeps its default math mode, and every cuDNN convolution is set
// to CUDNN_FMA_MATH, so neither uses TF32.
package driver
