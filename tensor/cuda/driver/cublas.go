//go:build cuda

package driver

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/pipecast/pipecast/tensor/cuda"
)

// blas is cuBLAS on one logical device's stream: a handle of its own,
// made with the GPU's primary context current (cuBLAS's CUDA runtime
// then works in that context) and bound to the stream with
// cublasSetStream. The handle keeps cuBLAS's default math mode,
// CUBLAS_DEFAULT_MATH: float32 products computed in float32 with FMA,
// no TF32 (that needs CUBLAS_TF32_TENSOR_OP_MATH, which is never set).
type blas struct {
	d       *Driver
	handle  unsafe.Pointer
	version string // "12.8.4"
}

// newBLAS makes d's cuBLAS handle, or returns nil (with a note) when the
// library is absent or refuses. Called from Open, with the context
// current on a locked thread.
func newBLAS(d *Driver) *blas {
	if !cublasLib.load() {
		return nil
	}
	b := &blas{d: d}
	fail := func(err error) *blas {
		addNote(fmt.Sprintf("cublas: not used on GPU %d: %v", d.gpu.ordinal, err))
		if b.handle != nil {
			C.pc_cublasDestroy_v2(b.handle)
		}
		return nil
	}
	if err := cublasError("cublasCreate_v2", C.pc_cublasCreate_v2(&b.handle)); err != nil {
		b.handle = nil
		return fail(err)
	}
	if err := cublasError("cublasSetStream_v2", C.pc_cublasSetStream_v2(b.handle, unsafe.Pointer(d.stream.C()))); err != nil {
		return fail(err)
	}
	var v C.int
	if err := cublasError("cublasGetVersion_v2", C.pc_cublasGetVersion_v2(b.handle, &v)); err != nil {
		return fail(err)
	}
	b.version = cublasVersion(int(v))
	return b
}

// Sgemm computes the row-major product c = alpha·op(a)·op(b) + beta·c
// with the column-major cublasSgemm: a row-major matrix with row stride
// ld is, read column-major, its transpose with leading dimension ld. So
// C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS is given b
// before a, n before m, each with its own transposition flag. With beta
// 0, cuBLAS does not read c.
func (b *blas) Sgemm(transA, transB bool, m, n, k int, alpha float32, a cuda.Ptr, lda int, bm cuda.Ptr, ldb int, beta float32, c cuda.Ptr, ldc int) error {
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("cublasSgemm: negative size %d×%d×%d", m, n, k)
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k == 0 {
		// Neither a nor b is read; cuBLAS still checks the leading
		// dimensions against the sizes.
		lda, ldb = max(lda, m, 1), max(ldb, n, 1)
	}
	for _, v := range []int{m, n, k, lda, ldb, ldc} {
		if v > math.MaxInt32 {
			return fmt.Errorf("cublasSgemm: size %d×%d×%d (ld %d, %d, %d) beyond cuBLAS's int", m, n, k, lda, ldb, ldc)
		}
	}
	if err := b.d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	status := C.pc_cublasSgemm_v2(b.handle, transOp(transB), transOp(transA), C.int(n), C.int(m), C.int(k),
		C.float(alpha), C.uint64_t(bm), C.int(ldb), C.uint64_t(a), C.int(lda),
		C.float(beta), C.uint64_t(c), C.int(ldc))
	if err := cublasError("cublasSgemm_v2", status); err != nil {
		return fmt.Errorf("%w (row-major m=%d n=%d k=%d transA=%t transB=%t lda=%d ldb=%d ldc=%d)", err, m, n, k, transA, transB, lda, ldb, ldc)
	}
	return nil
}

// SgemmStridedBatched is Sgemm for batch products at once, with
// cublasSgemmStridedBatched: product z reads a + z·strideA and b +
// z·strideB and writes c + z·strideC (strides in elements), each
// transposed into column-major as Sgemm does.
func (b *blas) SgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a cuda.Ptr, lda int, strideA int64,
	bm cuda.Ptr, ldb int, strideB int64, beta float32, c cuda.Ptr, ldc int, strideC int64, batch int) error {
	if m < 0 || n < 0 || k < 0 || batch < 0 {
		return fmt.Errorf("cublasSgemmStridedBatched: negative size %d×%d×%d, batch %d", m, n, k, batch)
	}
	if m == 0 || n == 0 || batch == 0 {
		return nil
	}
	if k == 0 {
		lda, ldb = max(lda, m, 1), max(ldb, n, 1)
	}
	for _, v := range []int{m, n, k, lda, ldb, ldc, batch} {
		if v > math.MaxInt32 {
			return fmt.Errorf("cublasSgemmStridedBatched: size %d×%d×%d (ld %d, %d, %d), batch %d beyond cuBLAS's int",
				m, n, k, lda, ldb, ldc, batch)
		}
	}
	if err := b.d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	status := C.pc_cublasSgemmStridedBatched(b.handle, transOp(transB), transOp(transA), C.int(n), C.int(m), C.int(k),
		C.float(alpha), C.uint64_t(bm), C.int(ldb), C.longlong(strideB), C.uint64_t(a), C.int(lda), C.longlong(strideA),
		C.float(beta), C.uint64_t(c), C.int(ldc), C.longlong(strideC), C.int(batch))
	if err := cublasError("cublasSgemmStridedBatched", status); err != nil {
		return fmt.Errorf("%w (row-major m=%d n=%d k=%d transA=%t transB=%t lda=%d ldb=%d ldc=%d batch=%d)",
			err, m, n, k, transA, transB, lda, ldb, ldc, batch)
	}
	return nil
}

func transOp(t bool) C.int {
	if t {
		return C.PC_CUBLAS_OP_T
	}
	return C.PC_CUBLAS_OP_N
}

// close destroys the handle; d's context is current.
func (b *blas) close() error {
	if b.handle == nil {
		return nil
	}
	err := cublasError("cublasDestroy_v2", C.pc_cublasDestroy_v2(b.handle))
	b.handle = nil
	return err
}
