//go:build cudaemu

package emu

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cuda"
)

// BackendName is the name the emulator's backend is registered under.
const BackendName = "cuda-emu"

// TotalBytes is the memory an emulated GPU pretends to have: MemInfo
// reports it less what is allocated, and Alloc fails past it.
const TotalBytes = 16 << 30

func init() {
	tensor.Register(tensor.Backend{
		Name:        BackendName,
		Description: "pipecast's CUDA kernels run on the CPU by an emulator, for tests: correct but slow",
		Open:        func(o tensor.Options) (tensor.Device, error) { return Open(o.Index), nil },
	})
}

// Open returns a device of the GPU backend on an emulated GPU, named
// cuda-emu:index.
func Open(index int) *cuda.Device {
	d := NewDriver()
	d.ordinal = index
	return cuda.New(d, BackendName, fmt.Sprintf("%s:%d", BackendName, index))
}

// Driver is a cuda.Driver on host memory: its device memory is C heap
// (Go's collector never moves it), a Ptr is the address, and Launch runs
// the kernel to completion on the calling goroutine's thread, so every
// call is already synchronous. It has no matrix or convolution library:
// the backend's own kernels compute everything.
type Driver struct {
	ordinal int
	// mu guards spans: CopyFrom reads another driver's from the
	// goroutine of the destination's.
	mu        sync.Mutex
	spans     []span // live allocations, by base
	allocated atomic.Int64
	closed    bool
}

var _ cuda.Driver = (*Driver)(nil)

// NewDriver returns a driver on an emulated GPU of TotalBytes.
func NewDriver() *Driver { return &Driver{} }

// Sync returns at once: Launch and the copies complete before they
// return.
func (d *Driver) Sync() error { return nil }

// BLAS returns nil: pc_sgemm computes the products.
func (d *Driver) BLAS() cuda.BLAS { return nil }

// DNN returns nil: the implicit-GEMM kernels convolve.
func (d *Driver) DNN() cuda.DNN { return nil }

// MemInfo returns TotalBytes less what is allocated, and TotalBytes.
func (d *Driver) MemInfo() (free, total int64, err error) {
	return TotalBytes - d.allocated.Load(), TotalBytes, nil
}

// Info describes the emulator.
func (d *Driver) Info() cuda.Info {
	return cuda.Info{Model: "pipecast CUDA emulator", Ordinal: d.ordinal, Share: "whole"}
}
