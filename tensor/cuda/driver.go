package cuda

import "unsafe"

// Ptr is an address in a GPU's memory (CUdeviceptr), or, under the
// emulator, in host memory that stands for it.
type Ptr uintptr

// Add returns p moved on by n float32 elements.
func (p Ptr) Add(n int) Ptr { return p + Ptr(n)*4 }

// Driver is one logical device's view of a GPU: its memory, its stream,
// and its kernels. Device (the tensor.Device of this backend) does all
// its work through a Driver, so that the same Device runs on a real GPU
// (package tensor/cuda/driver, build tag cuda, on gorgonia.org/cu) and
// under the CPU emulator of the kernels (package tensor/cuda/emu, build
// tag cudaemu), which tests everything but the driver binding without a
// GPU.
//
// Every call is ordered on the logical device's one stream: work is
// queued and runs in the order it was queued. Calls that hand data to the
// host (Download, DownloadInt32, DownloadFloat64) or say the stream is
// done (Sync) wait for the stream's queued work. A Driver's methods are
// called from one goroutine at a time, except MemInfo, Info and Sync:
// another logical device's CopyFrom waits for this stream (Sync) from its
// own goroutine before it copies from this device's memory, which CUDA
// allows for a stream (cuStreamSynchronize) from any thread.
type Driver interface {
	// Alloc returns n bytes of device memory, not zeroed.
	Alloc(n int64) (Ptr, error)
	// Free returns memory from Alloc. The stream's queued work may still
	// use it: Free waits for the stream, or defers the release until it
	// has passed.
	Free(p Ptr) error

	// Upload copies host floats into device memory; src may be reused
	// as soon as it returns.
	Upload(dst Ptr, src []float32) error
	// UploadInt32 copies host int32s into device memory.
	UploadInt32(dst Ptr, src []int32) error
	// Download waits for the stream and copies device memory into dst.
	Download(dst []float32, src Ptr) error
	// DownloadFloat64 waits for the stream and copies device float64s
	// (per-row losses) into dst.
	DownloadFloat64(dst []float64, src Ptr) error
	// Copy copies n bytes within this device's memory.
	Copy(dst, src Ptr, n int64) error
	// CopyFrom copies n bytes from src on another logical device into dst
	// on this one (a peer copy between GPUs, a device-to-device copy on
	// one). The caller has already waited for from's stream.
	CopyFrom(dst Ptr, from Driver, src Ptr, n int64) error
	// Memset32 sets n 32-bit words to v.
	Memset32(dst Ptr, v uint32, n int64) error

	// Launch queues kernel k (an index into Kernels) on grid×block threads
	// with args: one pointer per parameter of its prototype in
	// kernels/kernels.h, each to a value of the parameter's Go type
	// (float* and const float*: Ptr; int: int32; long long: int64;
	// unsigned long long: uint64; float: float32; double*: Ptr), as
	// cuLaunchKernel takes kernelParams. The kernels use no dynamic
	// shared memory.
	Launch(k Kernel, grid, block [3]uint32, args []unsafe.Pointer) error

	// Sync waits until the stream's queued work has completed.
	Sync() error

	// BLAS returns the GPU's matrix library for this stream, or nil when
	// none was found (the pc_sgemm kernel then computes products).
	BLAS() BLAS
	// DNN returns the GPU's convolution library for this stream, or nil
	// when none was found (the implicit-GEMM kernels then convolve).
	DNN() DNN

	// MemInfo returns the GPU's free and total memory as the driver sees
	// them (all processes and logical devices together).
	MemInfo() (free, total int64, err error)
	// Info describes the device for run records.
	Info() Info
	// Close releases the stream and the libraries' handles; memory from
	// Alloc must have been freed.
	Close() error
}

// Info describes a logical device.
type Info struct {
	// Model is the GPU's name ("NVIDIA H200"), or the emulator's.
	Model string
	// Ordinal is the physical GPU's index.
	Ordinal int
	// Share says how the logical device shares its GPU: "whole" (it has
	// one to itself) or "stream" (it is one stream among the logical
	// devices of the process on that GPU, all multiprocessors shared).
	Share string
	// Driver is the CUDA driver's version ("12.8"), Libraries the matrix
	// and convolution libraries in use with their versions ("cublas
	// 12.8.4", "cudnn 9.10.2"); empty where none was loaded.
	Driver    string
	Libraries []string
	// PeerAccess lists the ordinals of the GPUs this one copies to
	// directly.
	PeerAccess []int
}

// BLAS computes row-major matrix products:
// c = alpha·op(a)·op(b) + beta·c with op(a) m×k, op(b) k×n, c m×n and
// lda, ldb, ldc the row strides (in elements) of a, b and c as stored.
// It must round as a float32 FMA product does (no TF32, no reduced
// precision).
type BLAS interface {
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a Ptr, lda int, b Ptr, ldb int, beta float32, c Ptr, ldc int) error
	// SgemmStridedBatched computes batch such products at once
	// (cublasSgemmStridedBatched): product z reads a + z·strideA and b +
	// z·strideB and writes c + z·strideC, the strides in elements.
	SgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a Ptr, lda int, strideA int64,
		b Ptr, ldb int, strideB int64, beta float32, c Ptr, ldc int, strideC int64, batch int) error
}

// ConvShape is a 2-D convolution: input [N, C, H, W], filters [O, C,
// KH, KW], output [N, O, OH, OW], strides and zero padding; groups 1,
// dilation 1.
type ConvShape struct {
	N, C, H, W, O, KH, KW, StrideH, StrideW, PadH, PadW, OH, OW int
}

// DNN convolves. Each call may need workspace: it asks ws for n bytes of
// device memory, which stays valid until the call returns (the caller
// accounts it and frees it once the stream has passed). Products round as
// float32 FMA does (no TF32).
type DNN interface {
	// ConvForward sets y = conv(x, w).
	ConvForward(s ConvShape, x, w, y Ptr, ws func(n int64) (Ptr, error)) error
	// ConvBackwardData sets dx from dy.
	ConvBackwardData(s ConvShape, dy, w, dx Ptr, ws func(n int64) (Ptr, error)) error
	// ConvBackwardFilter accumulates dw += the filters' gradient.
	ConvBackwardFilter(s ConvShape, x, dy, dw Ptr, ws func(n int64) (Ptr, error)) error
}
