//go:build cuda

package driver

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/pipecast/pipecast/tensor/cuda"
)

// Driver is one logical device: a non-blocking stream on a physical GPU,
// in the GPU's primary context, which every logical device on that GPU
// shares with the GPU's module of kernels. It implements cuda.Driver.
type Driver struct {
	index  int
	gpu    *gpu
	stream cu.Stream
	// copied is recorded on the stream after each CopyFrom, for the
	// source's stream to wait on (see CopyFrom).
	copied cu.Event
	blas   *blas // nil without cuBLAS
	dnn    *dnn  // nil without cuDNN
	closed bool
}

var (
	_ cuda.Driver                = (*Driver)(nil)
	_ cuda.MultiprocessorCounter = (*Driver)(nil)
)

// Open opens logical device index on physical GPU index mod the GPU
// count: on first use of that GPU it retains its primary context, loads
// the kernels and enables peer access to the GPUs already in use; each
// logical device then gets its own stream, created with
// CU_STREAM_NON_BLOCKING so that it never waits for the legacy default
// stream, and its own cuBLAS and cuDNN handles where the libraries load.
func Open(index int) (*Driver, error) {
	if index < 0 {
		return nil, fmt.Errorf("cuda device index %d: must be ≥ 0", index)
	}
	n, err := cu.NumDevices()
	if err != nil {
		return nil, cuError("cuDeviceGetCount", err)
	}
	if n == 0 {
		return nil, errors.New("no CUDA GPU")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g, err := acquireGPU(index % n)
	if err != nil {
		return nil, err
	}
	d := &Driver{index: index, gpu: g}
	if d.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		g.release()
		return nil, cuError("cuStreamCreate", err)
	}
	if d.copied, err = cu.MakeEvent(cu.DisableTiming); err != nil {
		d.stream.Destroy()
		g.release()
		return nil, cuError("cuEventCreate", err)
	}
	d.blas = newBLAS(d)
	d.dnn = newDNN(d)
	return d, nil
}

// self lets CopyFrom recognise a *Driver inside a value that embeds one.
func (d *Driver) self() *Driver { return d }

// enter is lockContext for the GPU of d; the caller defers
// runtime.UnlockOSThread.
func (d *Driver) enter() error {
	if d.closed {
		return fmt.Errorf("cuda device %d is closed", d.index)
	}
	return lockContext(d.gpu.ctx)
}

// Alloc returns n bytes from cuMemAlloc (aligned to at least 256 bytes).
func (d *Driver) Alloc(n int64) (cuda.Ptr, error) {
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer runtime.UnlockOSThread()
	p, err := cu.MemAlloc(n)
	if err != nil {
		return 0, cuError(fmt.Sprintf("cuMemAlloc(%d bytes) on GPU %d", n, d.gpu.ordinal), err)
	}
	return cuda.Ptr(p), nil
}

// Free synchronises the stream, then frees p with cuMemFree. The driver
// API documents no ordering between cuMemFree and work pending in a
// stream created with CU_STREAM_NON_BLOCKING (the implicit
// synchronisation of a free is described for the legacy default stream,
// from which such a stream is exempt), so the stream's work that may use
// p is waited for explicitly. That work includes, through CopyFrom,
// other logical devices' copies out of p: they are ordered before d's
// later work. Free is rare: the backend's caching allocator keeps freed
// blocks for reuse.
func (d *Driver) Free(p cuda.Ptr) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	if err := d.stream.Synchronize(); err != nil {
		return cuError("cuStreamSynchronize before cuMemFree", err)
	}
	return cuError("cuMemFree", cu.MemFree(cu.DevicePtr(p)))
}

// Upload copies src into dst with cuMemcpyHtoDAsync on the stream and
// waits for the stream, so that src may be reused at once. src is
// pageable Go memory, which the driver stages through pinned memory of
// its own (the driver API's "API synchronization behavior"), so pinned
// memory is not needed for correctness, only for speed. The driver may
// read src until the stream has passed the copy; src stays alive
// (runtime.KeepAlive) and in place (the Go heap does not move objects)
// until then.
func (d *Driver) Upload(dst cuda.Ptr, src []float32) error {
	err := d.upload(dst, unsafe.Pointer(unsafe.SliceData(src)), int64(len(src))*4)
	runtime.KeepAlive(src)
	return err
}

// UploadInt32 is Upload for int32s (labels).
func (d *Driver) UploadInt32(dst cuda.Ptr, src []int32) error {
	err := d.upload(dst, unsafe.Pointer(unsafe.SliceData(src)), int64(len(src))*4)
	runtime.KeepAlive(src)
	return err
}

func (d *Driver) upload(dst cuda.Ptr, src unsafe.Pointer, n int64) error {
	if n == 0 {
		return nil
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	if err := cu.MemcpyHtoDAsync(cu.DevicePtr(dst), src, n, d.stream); err != nil {
		return cuError(fmt.Sprintf("cuMemcpyHtoDAsync(%d bytes)", n), err)
	}
	return cuError("cuStreamSynchronize after cuMemcpyHtoDAsync", d.stream.Synchronize())
}

// Download copies src into dst with cuMemcpyDtoHAsync, queued after the
// stream's work, and waits for it.
func (d *Driver) Download(dst []float32, src cuda.Ptr) error {
	err := d.download(unsafe.Pointer(unsafe.SliceData(dst)), src, int64(len(dst))*4)
	runtime.KeepAlive(dst)
	return err
}

// DownloadFloat64 is Download for float64s (per-row losses).
func (d *Driver) DownloadFloat64(dst []float64, src cuda.Ptr) error {
	err := d.download(unsafe.Pointer(unsafe.SliceData(dst)), src, int64(len(dst))*8)
	runtime.KeepAlive(dst)
	return err
}

func (d *Driver) download(dst unsafe.Pointer, src cuda.Ptr, n int64) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	if n > 0 {
		if err := cu.MemcpyDtoHAsync(dst, cu.DevicePtr(src), n, d.stream); err != nil {
			return cuError(fmt.Sprintf("cuMemcpyDtoHAsync(%d bytes)", n), err)
		}
	}
	// The contract waits for the stream even when there is nothing to
	// copy.
	return cuError("cuStreamSynchronize after cuMemcpyDtoHAsync", d.stream.Synchronize())
}

// Copy queues cuMemcpyDtoDAsync of n bytes on the stream.
func (d *Driver) Copy(dst, src cuda.Ptr, n int64) error {
	if n == 0 {
		return nil
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	return cuError(fmt.Sprintf("cuMemcpyDtoDAsync(%d bytes)", n), cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), n, d.stream))
}

// CopyFrom queues on d's stream a copy of n bytes from src on logical
// device from: cuMemcpyDtoDAsync when both are on one GPU (one context),
// cuMemcpyPeerAsync between GPUs (direct where peer access is enabled,
// through the host otherwise). from must be a *Driver of this package
// (or embed one).
//
// The caller has waited for from's stream, so src holds its data; but
// from's goroutine may go on to overwrite or free src while d's copy is
// still queued. So the copy is followed by an event on d's stream that
// from's stream waits for (cuStreamWaitEvent): from's later work,
// including a Free's synchronisation, runs after the copy, and neither
// goroutine blocks.
func (d *Driver) CopyFrom(dst cuda.Ptr, from cuda.Driver, src cuda.Ptr, n int64) error {
	f, ok := from.(interface{ self() *Driver })
	if !ok {
		return fmt.Errorf("cuda CopyFrom: source device is a %T, not a GPU device of this driver", from)
	}
	fd := f.self()
	if n == 0 {
		return nil
	}
	if fd.closed {
		return fmt.Errorf("cuda CopyFrom: source device %d is closed", fd.index)
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	if fd.gpu == d.gpu {
		if err := cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), n, d.stream); err != nil {
			return cuError(fmt.Sprintf("cuMemcpyDtoDAsync(%d bytes) from device %d", n, fd.index), err)
		}
	} else {
		if err := cu.MemcpyPeerAsync(cu.DevicePtr(dst), d.gpu.ctx, cu.DevicePtr(src), fd.gpu.ctx, n, d.stream); err != nil {
			return cuError(fmt.Sprintf("cuMemcpyPeerAsync(%d bytes) from GPU %d to GPU %d", n, fd.gpu.ordinal, d.gpu.ordinal), err)
		}
	}
	if err := d.copied.Record(d.stream); err != nil {
		return cuError("cuEventRecord after a peer copy", err)
	}
	// The wait is queued on from's stream, in from's context.
	if err := cu.SetCurrentContext(fd.gpu.ctx); err != nil {
		return cuError("cuCtxSetCurrent", err)
	}
	return cuError("cuStreamWaitEvent on the copy's source stream", fd.stream.Wait(d.copied, 0))
}

// Memset32 queues cuMemsetD32Async of n words on the stream.
func (d *Driver) Memset32(dst cuda.Ptr, v uint32, n int64) error {
	if n == 0 {
		return nil
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	return cuError(fmt.Sprintf("cuMemsetD32Async(%d words)", n), cu.MemsetD32Async(cu.DevicePtr(dst), uint(v), n, d.stream))
}

// Launch queues kernel k with cuLaunchKernel, no dynamic shared memory.
// gorgonia.org/cu copies the argument values into C memory for the call,
// reading 8 bytes behind each pointer; cuLaunchKernel then reads each
// parameter's own size from the low bytes (little-endian), so 4-byte
// arguments arrive intact.
func (d *Driver) Launch(k cuda.Kernel, grid, block [3]uint32, args []unsafe.Pointer) error {
	if k < 0 || int(k) >= cuda.NumKernels {
		return fmt.Errorf("cuda Launch: kernel %d out of range [0, %d)", int(k), cuda.NumKernels)
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	err := d.gpu.fns[k].Launch(int(grid[0]), int(grid[1]), int(grid[2]), int(block[0]), int(block[1]), int(block[2]), 0, d.stream, args)
	if err != nil {
		return cuError(fmt.Sprintf("cuLaunchKernel %s grid %v block %v", k.Name(), grid, block), err)
	}
	return nil
}

// Sync waits for the stream with cuStreamSynchronize (which spins or
// yields as the context's default scheduling decides: spinning while the
// process has fewer active contexts than cores). An event recorded and
// waited for would wait for exactly the same work; events are for
// timing, which the backend does with the host clock after Sync.
func (d *Driver) Sync() error {
	if err := d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	return cuError("cuStreamSynchronize", d.stream.Synchronize())
}

// BLAS returns cuBLAS on this stream, or nil.
func (d *Driver) BLAS() cuda.BLAS {
	if d.blas == nil {
		return nil
	}
	return d.blas
}

// DNN returns cuDNN on this stream, or nil.
func (d *Driver) DNN() cuda.DNN {
	if d.dnn == nil {
		return nil
	}
	return d.dnn
}

// MemInfo returns cuMemGetInfo for the GPU, asked with its context
// current.
func (d *Driver) MemInfo() (free, total int64, err error) {
	if err := lockContext(d.gpu.ctx); err != nil {
		return 0, 0, err
	}
	defer runtime.UnlockOSThread()
	free, total, err = cu.MemInfo()
	return free, total, cuError("cuMemGetInfo", err)
}

// Multiprocessors returns the GPU's streaming multiprocessor count
// (cuda.MultiprocessorCounter), or 0 when the driver did not say.
func (d *Driver) Multiprocessors() int { return d.gpu.sms }

// Info describes the logical device. Share is "stream" while more than
// one logical device is open on the GPU.
func (d *Driver) Info() cuda.Info {
	info := cuda.Info{
		Model:      d.gpu.name,
		Ordinal:    d.gpu.ordinal,
		Share:      d.gpu.share(),
		Driver:     driverVersion(cu.Version()),
		PeerAccess: d.gpu.peerOrdinals(),
	}
	if d.blas != nil {
		info.Libraries = append(info.Libraries, "cublas "+d.blas.version)
	}
	if d.dnn != nil {
		info.Libraries = append(info.Libraries, "cudnn "+d.dnn.version)
	}
	return info
}

// driverVersion formats cuDriverGetVersion's number, major·1000 +
// minor·10 (12080 is "12.8").
func driverVersion(v int) string {
	if v < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// Close waits for the stream, releases the libraries' handles and
// descriptors, the event and the stream, and counts the logical device
// off its GPU (the GPU's context and module stay for later Opens).
func (d *Driver) Close() error {
	if d.closed {
		return nil
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	errs := []error{cuError("cuStreamSynchronize", d.stream.Synchronize())}
	// blas and dnn stay set (Info may read their versions from another
	// goroutine); their methods refuse to run once d is closed.
	if d.dnn != nil {
		errs = append(errs, d.dnn.close())
	}
	if d.blas != nil {
		errs = append(errs, d.blas.close())
	}
	errs = append(errs, cuError("cuEventDestroy", cu.DestroyEvent(&d.copied)))
	errs = append(errs, cuError("cuStreamDestroy", d.stream.Destroy()))
	d.closed = true
	d.gpu.release()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close cuda device %d: %w", d.index, err)
	}
	return nil
}
