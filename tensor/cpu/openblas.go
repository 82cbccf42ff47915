//go:build openblas && cgo

package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu/internal/openblas"
)

// OpenBLASBackendName is the name of the backend the openblas build tag
// adds: the CPU backend with every matrix product computed by OpenBLAS's
// cblas_sgemm instead of the backend's own GEMM, a yardstick for that
// GEMM. The "cpu" backend keeps its own GEMM in every build.
const OpenBLASBackendName = "openblas"

func init() {
	tensor.Register(tensor.Backend{
		Name:        OpenBLASBackendName,
		Description: "the cpu backend's kernels with OpenBLAS's sgemm (" + openblas.Config() + ")",
		Open:        func(o tensor.Options) (tensor.Device, error) { return NewOpenBLAS(o), nil },
	})
}

// NewOpenBLAS opens a device named "openblas:<index>" that runs the CPU
// backend's kernels on o.Threads worker threads but hands every matrix
// product, whole, to OpenBLAS on o.Threads OpenBLAS threads; the
// device's own workers are idle meanwhile. OpenBLAS's thread count is
// process-wide: each product sets it (openblas_set_num_threads) to its
// device's threads, and the products of all openblas devices of a
// process run one at a time.
func NewOpenBLAS(o tensor.Options) *Device {
	d := New(o)
	d.name = fmt.Sprintf("%s:%d", OpenBLASBackendName, o.Index)
	d.backend = OpenBLASBackendName
	threads := d.pool.threads
	d.extGemm = func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		openblas.Sgemm(threads, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	return d
}
