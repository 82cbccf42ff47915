//go:build cuda

package driver

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cuda"
	"github.com/pipecast/pipecast/tensor/tensortest"
)

// newDevice opens the backend's device index as the registry does; the
// suite's thread counts mean nothing on a GPU. A factory has no way to
// fail but a panic (it runs on the subtests' goroutines, where the
// parent's t.Fatal may not be called).
func newDevice(index, _ int) tensor.Device {
	drv, err := Open(index)
	if err != nil {
		panic(fmt.Sprintf("driver: Open(%d): %v", index, err))
	}
	return cuda.New(drv, BackendName, fmt.Sprintf("%s:%d", BackendName, index))
}

// TestSuite runs the shared backend suite with the GPU's libraries where
// they loaded (cuBLAS products, cuDNN convolutions).
func TestSuite(t *testing.T) {
	t.Logf("library notes: %q", LibraryNotes())
	tensortest.Run(t, newDevice)
}

// TestSuiteOwnKernels runs it again with pipecast's own kernels for every
// product and convolution (cuda.New reads the variables).
func TestSuiteOwnKernels(t *testing.T) {
	t.Setenv("PIPECAST_CUDA_GEMM", "kernel")
	t.Setenv("PIPECAST_CUDA_CONV", "kernel")
	tensortest.Run(t, newDevice)
}
