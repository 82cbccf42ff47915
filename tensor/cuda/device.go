package cuda

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/pipecast/pipecast/tensor"
)

// The environment variables that force the backend's own kernels where
// the GPU's libraries exist (see the package comment); read once, by New.
const (
	gemmEnv     = "PIPECAST_CUDA_GEMM"
	convEnv     = "PIPECAST_CUDA_CONV"
	forceKernel = "kernel"
)

// Device is a tensor.Device on one logical GPU device: its tensors live
// in GPU memory (a caching allocator over the Driver's, accounted by
// category), and its kernels are queued on the Driver's one stream, so
// that they run asynchronously; Download, Now and Sync wait for them.
// Like the CPU backend's kernels, its kernels panic on programming errors
// (mismatched shapes), and so does a driver error, which the runner turns
// into a fault.
type Device struct {
	drv     Driver
	name    string
	backend string
	mem     tensor.MemCounter
	cache   allocator
	// blas and dnn are the libraries the device uses: nil where the
	// driver has none or the environment forces the kernels.
	blas BLAS
	dnn  DNN
	// sms is the GPU's multiprocessor count, which sizes the depth split
	// of the filter gradient (see depthSplit).
	sms int
	// staging is the host buffer of copies from devices of other
	// backends, kept for the next one.
	staging []float32
	closed  bool
}

var (
	_ tensor.Device             = (*Device)(nil)
	_ tensor.Accelerator        = (*Device)(nil)
	_ tensor.SGDStepper         = (*Device)(nil)
	_ tensor.AdamWStepper       = (*Device)(nil)
	_ tensor.TransformerKernels = (*Device)(nil)
)

// New returns a device that works through drv: backend is the name its
// backend is registered under ("cuda"), name the device's ("cuda:0").
// The device owns drv and closes it in Close. New reads PIPECAST_CUDA_GEMM
// and PIPECAST_CUDA_CONV: "kernel" makes the device compute products, or
// convolutions, with the backend's kernels even where drv has a library.
func New(drv Driver, backend, name string) *Device {
	d := &Device{drv: drv, name: name, backend: backend}
	if os.Getenv(gemmEnv) != forceKernel {
		d.blas = drv.BLAS()
	}
	if os.Getenv(convEnv) != forceKernel {
		d.dnn = drv.DNN()
	}
	d.sms = h200SMs
	if m, ok := drv.(MultiprocessorCounter); ok && m.Multiprocessors() > 0 {
		d.sms = m.Multiprocessors()
	}
	return d
}

// MultiprocessorCounter is what a Driver may implement besides Driver to
// say how many streaming multiprocessors its GPU has (the cuda driver
// does); Device sizes the split of deep products by it, and by an H200's
// count for a driver that cannot say (the emulator). Only the split, and
// so the rounding of those products, depends on it.
type MultiprocessorCounter interface {
	Multiprocessors() int
}

// Name returns the device's name, such as "cuda:0".
func (d *Device) Name() string { return d.name }

// Backend returns the name of the backend that opened the device.
func (d *Device) Backend() string { return d.backend }

// Threads returns 1: one host thread drives a GPU device; the GPU's own
// parallelism is no business of the runner's.
func (d *Device) Threads() int { return 1 }

// Driver returns the driver the device works through.
func (d *Device) Driver() Driver { return d.drv }

// Alloc returns a zeroed tensor in GPU memory accounted in cat.
func (d *Device) Alloc(cat tensor.Category, shape ...int) *tensor.Tensor {
	t, err := d.allocRaw(cat, shape)
	if err != nil {
		panic(fmt.Sprintf("cuda: %s: alloc of %v (%s): %v", d.name, tensor.Shape(shape), cat, err))
	}
	if n := int64(t.Len()); n > 0 {
		d.check("alloc: zero", d.drv.Memset32(PtrOf(t), 0, n))
	}
	return t
}

// allocRaw returns a tensor whose contents are undefined.
func (d *Device) allocRaw(cat tensor.Category, shape []int) (*tensor.Tensor, error) {
	s := tensor.Shape(shape)
	if !s.Valid() {
		panic(fmt.Sprintf("cuda: %s: alloc of shape %v", d.name, s))
	}
	bytes := int64(s.Numel()) * tensor.BytesPerElement
	p, size, err := d.cache.get(d.drv, bytes)
	if err != nil {
		return nil, err
	}
	d.mem.Alloc(cat, bytes)
	return tensor.NewTensor(d, cat, s, &memBlock{p: p, size: size}), nil
}

// scratch returns a Workspace tensor of n elements whose contents are
// undefined; the kernel that takes it releases it before it returns. Its
// memory may then serve the next kernel at once: the stream runs that
// kernel after every use of this one.
func (d *Device) scratch(op string, n int) *tensor.Tensor {
	t, err := d.allocRaw(tensor.Workspace, []int{n})
	if err != nil {
		panic(fmt.Sprintf("cuda: %s: %s: workspace of %d elements: %v", d.name, op, n, err))
	}
	return t
}

// Free accounts a released storage and keeps its memory for a later
// allocation (see allocator). It may be called from any goroutine, and
// calls no driver method.
func (d *Device) Free(s *tensor.Storage) {
	b, ok := s.Mem.(*memBlock)
	if !ok {
		panic(fmt.Sprintf("cuda: %s: free of a storage that holds no GPU memory", d.name))
	}
	d.mem.Free(s.Category(), s.Bytes())
	if b.p != 0 {
		d.cache.put(b.p, b.size)
	}
	s.Mem = nil
}

// Retag moves t's storage to category cat.
func (d *Device) Retag(t *tensor.Tensor, cat tensor.Category) {
	d.mustOwn("retag", t)
	s := t.Storage()
	if s.Category() == cat {
		return
	}
	d.mem.Move(s.Category(), cat, s.Bytes())
	s.SetCategory(cat)
}

// Memory returns the device's memory accounting: the bytes of its
// tensors, as torch's memory_allocated counts them (Reserved says what
// the cache holds on top).
func (d *Device) Memory() tensor.MemStats { return d.mem.Stats() }

// MemCounter returns the device's memory accounting (tensor.MemCounted).
func (d *Device) MemCounter() *tensor.MemCounter { return &d.mem }

// ResetPeak sets the peaks to the live bytes.
func (d *Device) ResetPeak() { d.mem.ResetPeak() }

// Reserved returns the GPU memory the device holds from the driver: its
// tensors' blocks, rounded up, and the blocks its cache keeps (torch's
// memory_reserved). It is safe from any goroutine.
func (d *Device) Reserved() int64 {
	r, _, _ := d.cache.stats()
	return r
}

// Upload copies host data into t.
func (d *Device) Upload(t *tensor.Tensor, src []float32) {
	p := d.ptr("upload", t, len(src))
	if len(src) > 0 {
		d.check("upload", d.drv.Upload(p, src))
	}
}

// Download waits for the device's queued work and copies t into host
// memory.
func (d *Device) Download(dst []float32, t *tensor.Tensor) {
	p := d.ptr("download", t, len(dst))
	if len(dst) > 0 {
		d.check("download", d.drv.Download(dst, p))
	}
}

// CopyFrom copies src into dst. A src on another device of this backend
// is copied GPU to GPU once its device's stream has passed: the source
// driver's Sync is called from this device's goroutine, which Driver
// allows. CopyFrom returns when the copy is done, because the caller may
// release src as soon as it returns and its device reuse the memory on
// its own stream. A src on a device of any other backend (the CPU's) is
// downloaded to the host and uploaded.
func (d *Device) CopyFrom(dst, src *tensor.Tensor) {
	const op = "copy from"
	n := src.Len()
	dp := d.ptr(op, dst, n)
	if n == 0 {
		return
	}
	bytes := int64(n) * tensor.BytesPerElement
	if s, ok := src.Device().(*Device); ok && s.backend == d.backend {
		sp := PtrOf(src)
		if s == d {
			d.check(op, d.drv.Copy(dp, sp, bytes))
			return
		}
		d.check(op+" "+s.name+": sync", s.drv.Sync())
		d.check(op+" "+s.name, d.drv.CopyFrom(dp, s.drv, sp, bytes))
		d.check(op+" "+s.name, d.drv.Sync())
		return
	}
	if cap(d.staging) < n {
		d.staging = make([]float32, n)
	}
	buf := d.staging[:n]
	src.Device().Download(buf, src)
	d.check(op+" "+src.Device().Name(), d.drv.Upload(dp, buf))
}

// Now waits for the device's queued work and returns the process's
// monotonic clock.
func (d *Device) Now() int64 {
	d.Sync()
	return tensor.Nanotime()
}

// Sync waits until the device's queued work has completed; an error of
// that work (a kernel's fault) panics.
func (d *Device) Sync() { d.check("sync", d.drv.Sync()) }

// Close waits for the queued work, returns all memory to the driver, the
// cache's and that of tensors still live, and closes the driver. Tensors
// released afterwards are only accounted.
func (d *Device) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	if err := d.drv.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("sync: %w", err))
	}
	if err := d.cache.release(d.drv); err != nil {
		errs = append(errs, err)
	}
	if err := d.drv.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", d.name, err)
	}
	return nil
}

// AcceleratorInfo describes the GPU from the driver: the libraries listed
// are those the device uses (a forced kernel drops its library), and the
// memory is what the driver reports now, or 0 when it cannot say.
func (d *Device) AcceleratorInfo() tensor.AcceleratorInfo {
	info := d.drv.Info()
	free, total, err := d.drv.MemInfo()
	if err != nil {
		free, total = 0, 0
	}
	var libs []string
	for _, l := range info.Libraries {
		lower := strings.ToLower(l)
		if (d.blas == nil && strings.HasPrefix(lower, "cublas")) || (d.dnn == nil && strings.HasPrefix(lower, "cudnn")) {
			continue
		}
		libs = append(libs, l)
	}
	return tensor.AcceleratorInfo{
		Model: info.Model, Ordinal: info.Ordinal, Share: info.Share,
		Driver: info.Driver, Libraries: libs,
		FreeBytes: free, TotalBytes: total,
	}
}

// PtrOf returns the GPU address of t's first element. It panics for a
// tensor that holds no GPU memory (one of another backend, or released).
func PtrOf(t *tensor.Tensor) Ptr {
	b, ok := t.Storage().Mem.(*memBlock)
	if !ok {
		panic(fmt.Sprintf("cuda: tensor %v on %s holds no GPU memory", t.Shape(), t.Device().Name()))
	}
	return b.p.Add(t.Offset())
}

// ptr returns t's address after checking that t lives on d and holds n
// elements.
func (d *Device) ptr(op string, t *tensor.Tensor, n int) Ptr {
	d.mustOwn(op, t)
	if t.Len() != n {
		panic(fmt.Sprintf("cuda: %s: %d elements for a tensor %v of %d", op, n, t.Shape(), t.Len()))
	}
	return PtrOf(t)
}

// mustOwn panics unless t lives on d.
func (d *Device) mustOwn(op string, t *tensor.Tensor) {
	if t.Device() != tensor.Device(d) {
		panic(fmt.Sprintf("cuda: %s: tensor on %s used on %s", op, t.Device().Name(), d.name))
	}
}

// check panics with a one-line message naming the device and op when a
// driver call failed.
func (d *Device) check(op string, err error) {
	if err != nil {
		panic(fmt.Sprintf("cuda: %s: %s: %v", d.name, op, err))
	}
}

// launch queues kernel k; the typed launchers of kernels_gen.go call it.
// A grid of no blocks (nothing to compute) queues nothing.
func (d *Device) launch(k Kernel, grid, block [3]uint32, args []unsafe.Pointer) {
	if empty(grid) {
		return
	}
	if err := d.drv.Launch(k, grid, block, args); err != nil {
		panic(fmt.Sprintf("cuda: %s: launch %s: %v", d.name, k.Name(), err))
	}
}
