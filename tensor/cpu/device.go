package cpu

import (
	"fmt"
	"runtime"

	"github.com/pipecast/pipecast/tensor"
)

// BackendName is the name the CPU backend registers under.
const BackendName = tensor.CPUBackend

func init() {
	tensor.Register(tensor.Backend{
		Name:        BackendName,
		Description: fmt.Sprintf("pure-Go kernels on %s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		Open:        func(o tensor.Options) (tensor.Device, error) { return New(o), nil },
	})
}

// Device is a CPU device: host memory accounted by category and a pool of
// worker threads for its kernels.
type Device struct {
	name    string
	backend string // BackendName, or the openblas build's backend
	pool    *pool
	mem     tensor.MemCounter
	// spares keeps released scratch buffers for the next kernels.
	spares spares
	// cache keeps released tensors' memory for later allocations.
	cache allocCache
	// extGemm, when set, computes every product of the device instead of
	// the backend's own GEMM (the openblas build's backend). It runs its
	// own threads: kernels must then not call products from the pool's
	// threads (see ownThreads).
	extGemm func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
}

// ownThreads reports that the device's products bring their own threads,
// so kernels hand whole products to sgemm rather than running serial ones
// on each pool thread.
func (d *Device) ownThreads() bool { return d.extGemm != nil }

var _ tensor.Device = (*Device)(nil)

// New opens a CPU device with o.Threads worker threads (at least 1).
func New(o tensor.Options) *Device {
	return &Device{name: fmt.Sprintf("%s:%d", BackendName, o.Index), backend: BackendName, pool: newPool(max(o.Threads, 1))}
}

// Name returns "cpu:<index>".
func (d *Device) Name() string { return d.name }

// Backend returns the name of the backend that opened the device: "cpu",
// or "openblas" for NewOpenBLAS's.
func (d *Device) Backend() string { return d.backend }

// HugePages says whether the device's tensors sit on transparent huge
// pages: "advised" (fresh memory is advised and collapsed, see
// hugepage_linux.go), "off" (turned off by PIPECAST_CPU_HUGEPAGES=off) or
// "unavailable" (the system has none, or has them set to "never").
func (d *Device) HugePages() string { return hugePagesState() }

// Threads returns the size of the device's worker pool.
func (d *Device) Threads() int { return d.pool.threads }

// Alloc returns a zeroed tensor in host memory accounted in cat.
func (d *Device) Alloc(cat tensor.Category, shape ...int) *tensor.Tensor {
	s := tensor.Shape(shape)
	if !s.Valid() {
		panic(fmt.Sprintf("cpu: alloc of shape %v", s))
	}
	n := s.Numel()
	d.mem.Alloc(cat, int64(n)*tensor.BytesPerElement)
	mem := d.cache.take(n)
	if mem == nil {
		mem = make([]float32, n)
		adviseHugePages(mem)
	} else {
		d.zero(mem)
	}
	return tensor.NewTensor(d, cat, s, mem)
}

// zero clears mem on the device's threads: a step reuses a few hundred
// MiB of cached buffers, and their zeroing on the caller alone left the
// other threads idle (2 % of a 64×64 ResNet-50 step).
func (d *Device) zero(mem []float32) {
	d.pool.parallel(len(mem), elementGrain, func(lo, hi int) { clear(mem[lo:hi]) })
}

// Free accounts a released storage and keeps its memory for a later
// allocation of the same size (see allocCache); the storage itself no
// longer holds it.
func (d *Device) Free(s *tensor.Storage) {
	d.mem.Free(s.Category(), s.Bytes())
	if b, ok := s.Mem.([]float32); ok {
		d.cache.give(b[:cap(b)], 2*d.mem.Stats().PeakTotalBytes)
	}
	s.Mem = nil
}

// Retag moves t's storage to category cat.
func (d *Device) Retag(t *tensor.Tensor, cat tensor.Category) {
	s := t.Storage()
	d.mustOwn("retag", t)
	if s.Category() == cat {
		return
	}
	d.mem.Move(s.Category(), cat, s.Bytes())
	s.SetCategory(cat)
}

// Memory returns the device's memory accounting.
func (d *Device) Memory() tensor.MemStats { return d.mem.Stats() }

// MemCounter returns the device's memory accounting (tensor.MemCounted).
func (d *Device) MemCounter() *tensor.MemCounter { return &d.mem }

// ResetPeak sets the peaks to the live bytes.
func (d *Device) ResetPeak() { d.mem.ResetPeak() }

// Upload copies host data into t.
func (d *Device) Upload(t *tensor.Tensor, src []float32) {
	copy(d.data("upload", t, len(src)), src)
}

// Download copies t into host memory.
func (d *Device) Download(dst []float32, t *tensor.Tensor) {
	copy(dst, d.data("download", t, len(dst)))
}

// CopyFrom copies src into dst. src may live on another device of any
// backend that can download to the host.
func (d *Device) CopyFrom(dst, src *tensor.Tensor) {
	out := d.data("copy", dst, src.Len())
	if s, ok := src.Storage().Mem.([]float32); ok {
		copy(out, s[src.Offset():src.Offset()+src.Len()])
		return
	}
	src.Device().Download(out, src)
}

// Now returns the process's monotonic clock; CPU kernels complete before
// they return, so there is nothing to wait for.
func (d *Device) Now() int64 { return tensor.Nanotime() }

// Sync returns at once: CPU kernels are synchronous.
func (d *Device) Sync() {}

// Close stops the worker threads and drops the kept scratch buffers and
// cached memory.
func (d *Device) Close() error {
	d.pool.close()
	d.spares.mu.Lock()
	d.spares.bufs = nil // the kept scratch goes with the device
	d.spares.mu.Unlock()
	d.cache.drop()
	return nil
}

// Data returns the elements of a CPU tensor: a window into its storage
// that aliases it. It panics for a tensor of another backend.
func Data(t *tensor.Tensor) []float32 {
	s, ok := t.Storage().Mem.([]float32)
	if !ok {
		panic(fmt.Sprintf("cpu: tensor on %s is not in host memory", t.Device().Name()))
	}
	return s[t.Offset() : t.Offset()+t.Len() : t.Offset()+t.Len()]
}

// data returns t's elements after checking that t lives on d and holds n
// elements.
func (d *Device) data(op string, t *tensor.Tensor, n int) []float32 {
	d.mustOwn(op, t)
	if t.Len() != n {
		panic(fmt.Sprintf("cpu: %s: %d elements into a tensor of %d", op, n, t.Len()))
	}
	return Data(t)
}

func (d *Device) mustOwn(op string, t *tensor.Tensor) {
	if t.Device() != tensor.Device(d) {
		panic(fmt.Sprintf("cpu: %s: tensor on %s used on %s", op, t.Device().Name(), d.name))
	}
}

// workspace allocates scratch memory accounted in the Workspace category;
// release it before the kernel returns.
func (d *Device) workspace(n int) *tensor.Tensor {
	return d.Alloc(tensor.Workspace, n)
}
