package tensor

// Device is one compute device of a backend: a CPU worker pool of T threads,
// or (later) a GPU or a logical share of one. A device allocates tensors,
// accounts their memory by category, copies data in and out, reads a
// monotonic clock and runs kernels. A device's methods are called from one
// goroutine at a time (the worker that drives it), except Memory and
// Name, which are safe from any goroutine.
type Device interface {
	// Name identifies the device within its process, e.g. "cpu:0".
	Name() string
	// Backend returns the name the backend is registered under.
	Backend() string
	// Threads returns the number of worker threads a kernel may use.
	Threads() int

	// Alloc returns a zeroed tensor of the given shape with one
	// reference, accounted in category cat.
	Alloc(cat Category, shape ...int) *Tensor
	// Free returns a storage whose last reference was released. Only
	// Tensor.Release calls it.
	Free(s *Storage)
	// Retag moves t's storage, and its bytes, to another category.
	Retag(t *Tensor, cat Category)
	// Memory returns the device's live and peak bytes by category.
	Memory() MemStats
	// ResetPeak sets the peaks to the live bytes.
	ResetPeak()

	// Upload copies host data into t; len(src) must equal t.Len().
	Upload(t *Tensor, src []float32)
	// Download copies t into host memory; len(dst) must equal t.Len().
	Download(dst []float32, t *Tensor)
	// CopyFrom copies src, which may live on another device, into dst on
	// this device. Both have the same number of elements.
	CopyFrom(dst, src *Tensor)

	// Now returns monotonic nanoseconds on the process's common time axis
	// (see Nanotime), after the device's queued work has completed.
	Now() int64
	// Sync waits until the device's queued work has completed.
	Sync()
	// Close releases the device's threads; its tensors must not be used
	// afterwards.
	Close() error

	Kernels
}
