package meta

import (
	"fmt"
	"sync/atomic"

	"github.com/pipecast/pipecast/tensor"
)

// imitated is the backend whose runs a meta device stands in for: it
// accounts the scratch memory that backend's kernels would hold, as the
// workspace model the backend registered in package tensor forecasts it.
const imitated = tensor.CPUBackend

// Device is a meta device: shapes and accounting without storage.
type Device struct {
	name    string
	mem     tensor.MemCounter
	macs    atomic.Int64
	threads int
	// ws forecasts the scratch of the imitated backend's kernels; nil
	// when that backend is not linked, and then no scratch is accounted.
	ws tensor.WorkspaceModel
}

var (
	_ tensor.Device         = (*Device)(nil)
	_ tensor.MACCounter     = (*Device)(nil)
	_ tensor.SymbolicDevice = (*Device)(nil)

	_ tensor.BatchNormReLUKernels = (*Device)(nil)
	_ tensor.SGDStepper           = (*Device)(nil)
)

// New returns a meta device standing in for one thread.
func New() *Device { return newDevice(0, 1) }

// newDevice returns meta device index for threads threads, with the
// imitated backend's workspace model as it is registered now.
func newDevice(index, threads int) *Device {
	ws, _ := tensor.LookupWorkspaceModel(imitated)
	return &Device{name: fmt.Sprintf("%s:%d", BackendName, index), threads: max(threads, 1), ws: ws}
}

// MACs returns the multiply-accumulates counted since the device opened:
// those of convolutions, linear layers and GEMMs, the usual convention
// for a network's cost (element-wise work and normalisation are not
// counted).
func (d *Device) MACs() int64 { return d.macs.Load() }

// Symbolic returns true: a meta tensor holds no values.
func (d *Device) Symbolic() bool { return true }

// Name returns "meta:" and the device's index.
func (d *Device) Name() string { return d.name }

// Backend returns "meta".
func (d *Device) Backend() string { return BackendName }

// Threads returns the threads the device stands in for: they decide the
// scratch memory its convolutions account (see kernels.go).
func (d *Device) Threads() int { return d.threads }

// Alloc returns a tensor without storage, accounted in cat.
func (d *Device) Alloc(cat tensor.Category, shape ...int) *tensor.Tensor {
	s := tensor.Shape(shape)
	if !s.Valid() {
		panic(fmt.Sprintf("meta: alloc of shape %v", s))
	}
	d.mem.Alloc(cat, int64(s.Numel())*tensor.BytesPerElement)
	return tensor.NewTensor(d, cat, s, nil)
}

// Free accounts a released storage.
func (d *Device) Free(s *tensor.Storage) { d.mem.Free(s.Category(), s.Bytes()) }

// Retag moves t's storage to category cat.
func (d *Device) Retag(t *tensor.Tensor, cat tensor.Category) {
	s := t.Storage()
	if s.Category() != cat {
		d.mem.Move(s.Category(), cat, s.Bytes())
		s.SetCategory(cat)
	}
}

// Memory returns the device's accounting.
func (d *Device) Memory() tensor.MemStats { return d.mem.Stats() }

// MemCounter returns the device's memory accounting (tensor.MemCounted).
func (d *Device) MemCounter() *tensor.MemCounter { return &d.mem }

// ResetPeak sets the peaks to the live bytes.
func (d *Device) ResetPeak() { d.mem.ResetPeak() }

// Upload does nothing: a meta tensor has no data.
func (d *Device) Upload(t *tensor.Tensor, src []float32) { d.mustLen("upload", t, len(src)) }

// Download writes zeros.
func (d *Device) Download(dst []float32, t *tensor.Tensor) {
	d.mustLen("download", t, len(dst))
	clear(dst)
}

// CopyFrom does nothing.
func (d *Device) CopyFrom(dst, src *tensor.Tensor) { d.mustLen("copy", dst, src.Len()) }

// Now returns the process's monotonic clock.
func (d *Device) Now() int64 { return tensor.Nanotime() }

// Sync returns at once.
func (d *Device) Sync() {}

// Close does nothing.
func (d *Device) Close() error { return nil }

func (d *Device) mustLen(op string, t *tensor.Tensor, n int) {
	if t.Len() != n {
		panic(fmt.Sprintf("meta: %s: %d elements into a tensor of %d", op, n, t.Len()))
	}
}
