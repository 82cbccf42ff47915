//go:build openblas && cgo

// Package openblas binds the few OpenBLAS functions the CPU backend's
// openblas build uses. It is a package of its own because Go does not
// build cgo and Go assembly (the backend's micro-kernels) in one package.
package openblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
)

// Config returns the linked OpenBLAS's build configuration and the name
// of the kernels it chose for this CPU.
func Config() string {
	return strings.TrimSpace(C.GoString(C.openblas_get_config())) + ", core " + C.GoString(C.openblas_get_corename())
}

// mu serialises every product of the process. OpenBLAS's thread count is
// a process-wide setting, not a per-call argument: each product sets it
// to its caller's count and must run before another caller changes it.
// Concurrent callers therefore never overlap their products (OpenBLAS
// serialises its threaded level-3 calls anyway).
var mu sync.Mutex

// Sgemm sets c = alpha·op(a)·op(b) + beta·c with cblas_sgemm on row-major
// matrices, op(a) m×k and op(b) k×n, rows lda, ldb, ldc elements apart,
// on threads OpenBLAS threads (the caller's thread among them). It
// panics unless every operand holds the elements its sizes and leading
// dimension reach, since C does not check. With beta 0, c's previous
// contents are ignored.
func Sgemm(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("openblas: sgemm of %d×%d×%d", m, n, k))
	}
	if m == 0 || n == 0 {
		return
	}
	mustSpan("c", c, m, n, ldc)
	if k == 0 || alpha == 0 {
		// The product adds nothing: scale c here rather than hand
		// OpenBLAS operands that may be empty. beta 0 clears c, so that
		// a NaN there does not propagate.
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row)
				continue
			}
			for j := range row {
				row[j] *= beta
			}
		}
		return
	}
	ta, tb := C.enum_CBLAS_TRANSPOSE(C.CblasNoTrans), C.enum_CBLAS_TRANSPOSE(C.CblasNoTrans)
	if transA {
		ta = C.CblasTrans
		mustSpan("a", a, k, m, lda)
	} else {
		mustSpan("a", a, m, k, lda)
	}
	if transB {
		tb = C.CblasTrans
		mustSpan("b", b, n, k, ldb)
	} else {
		mustSpan("b", b, k, n, ldb)
	}
	mu.Lock()
	defer mu.Unlock()
	C.openblas_set_num_threads(C.int(max(threads, 1)))
	C.cblas_sgemm(C.CblasRowMajor, ta, tb, C.blasint(m), C.blasint(n), C.blasint(k),
		C.float(alpha), (*C.float)(&a[0]), C.blasint(lda), (*C.float)(&b[0]), C.blasint(ldb),
		C.float(beta), (*C.float)(&c[0]), C.blasint(ldc))
}

// mustSpan panics unless x holds a rows×cols row-major matrix whose rows
// are ld elements apart (ld ≥ cols).
func mustSpan(name string, x []float32, rows, cols, ld int) {
	if ld < max(cols, 1) || len(x) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("openblas: sgemm: %s of %d elements with rows %d apart for %d×%d", name, len(x), ld, rows, cols))
	}
}
