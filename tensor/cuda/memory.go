package cuda

import (
	"errors"
	"fmt"
	"sync"
)

// A device keeps the GPU memory of released tensors and hands it to later
// allocations of the same rounded size, as PyTorch's CUDA caching
// allocator does: cuMemFree synchronises the GPU, both it and cuMemAlloc
// cost far more than a kernel launch, and a training step allocates the
// same shapes every step, so after the first step almost every
// allocation is served from the cache.
//
// Reusing released memory at once is safe because every kernel, copy and
// library call of a device is queued on its one stream: the work queued
// after the release, which may overwrite the memory, runs after the work
// queued before it, which used it. Memory released by another goroutine (the receiver of a
// transfer releasing the sent tensor) was released after a wait for the
// stream that used it (see CopyFrom).
//
// Sizes are rounded up so that slightly different shapes share blocks: to
// a multiple of smallRound up to smallLimit, else of largeRound. A
// released block is kept unless the cache would then hold more than
// twice the peak of the bytes in use (rounded, since the device opened:
// ResetPeak does not lower it), the CPU backend's rule (see
// tensor/cpu/alloc_cache.go); a block over that cap goes back to the
// driver, and when the driver runs out of memory the whole cache does,
// and the allocation is tried again.
const (
	smallLimit = 1 << 20
	smallRound = 512
	largeRound = 2 << 20
)

// roundBytes returns the size of the block that holds n bytes.
func roundBytes(n int64) int64 {
	r := int64(largeRound)
	if n <= smallLimit {
		r = smallRound
	}
	return (max(n, 1) + r - 1) / r * r
}

// allocator is a device's caching allocator. It calls the driver only
// from get and release, which the device's own goroutine calls; put may
// be called from any goroutine (a tensor's last Release), so a block over
// the cache's cap waits in pending until the next get returns it to the
// driver (a Driver's methods are called from one goroutine at a time).
type allocator struct {
	mu      sync.Mutex
	free    map[int64][]Ptr // cached blocks by rounded size
	cached  int64           // bytes in free
	pending []memBlock      // released blocks over the cap, to go back to the driver
	live    map[Ptr]int64   // blocks handed out, by rounded size
	inUse   int64           // bytes in live
	peak    int64           // the peak of inUse
	// reserved is what the driver has handed out and not taken back:
	// live, cached and pending blocks.
	reserved int64
	closed   bool
}

// memBlock is a block of GPU memory and its rounded size; a tensor
// storage's Mem holds its *memBlock.
type memBlock struct {
	p    Ptr
	size int64
}

// errClosed is the error of an allocation on a closed device.
var errClosed = errors.New("device closed")

// get returns a block of at least n bytes and its rounded size.
func (a *allocator) get(drv Driver, n int64) (Ptr, int64, error) {
	size := roundBytes(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return 0, 0, errClosed
	}
	if err := a.drainPending(drv); err != nil {
		return 0, 0, err
	}
	if ps := a.free[size]; len(ps) > 0 {
		p := ps[len(ps)-1]
		a.free[size] = ps[:len(ps)-1]
		a.cached -= size
		a.hand(p, size)
		return p, size, nil
	}
	p, err := drv.Alloc(size)
	if err != nil {
		// Out of memory, most likely: give the cache back and try once
		// more, as torch does before it raises.
		if a.cached == 0 {
			return 0, 0, fmt.Errorf("%d bytes with %d reserved: %w", size, a.reserved, err)
		}
		if ferr := a.dropCache(drv); ferr != nil {
			return 0, 0, errors.Join(err, ferr)
		}
		if p, err = drv.Alloc(size); err != nil {
			return 0, 0, fmt.Errorf("%d bytes with %d reserved and the cache emptied: %w", size, a.reserved, err)
		}
	}
	a.reserved += size
	a.hand(p, size)
	return p, size, nil
}

// hand records p as handed out.
func (a *allocator) hand(p Ptr, size int64) {
	if a.live == nil {
		a.live = map[Ptr]int64{}
	}
	a.live[p] = size
	a.inUse += size
	a.peak = max(a.peak, a.inUse)
}

// put takes back a block from get. It does not call the driver.
func (a *allocator) put(p Ptr, size int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return // release gave it back already
	}
	if _, ok := a.live[p]; !ok {
		panic(fmt.Sprintf("cuda: free of memory at %#x that the device did not hand out", uintptr(p)))
	}
	delete(a.live, p)
	a.inUse -= size
	if a.cached+size > 2*a.peak {
		a.pending = append(a.pending, memBlock{p, size})
		return
	}
	if a.free == nil {
		a.free = map[int64][]Ptr{}
	}
	a.free[size] = append(a.free[size], p)
	a.cached += size
}

// drainPending returns the blocks over the cap to the driver. The caller
// holds a.mu.
func (a *allocator) drainPending(drv Driver) error {
	var errs []error
	for _, b := range a.pending {
		errs = append(errs, a.freeBlock(drv, b.p, b.size))
	}
	a.pending = a.pending[:0]
	return errors.Join(errs...)
}

// dropCache returns every cached block to the driver. The caller holds
// a.mu.
func (a *allocator) dropCache(drv Driver) error {
	var errs []error
	for size, ps := range a.free {
		for _, p := range ps {
			errs = append(errs, a.freeBlock(drv, p, size))
		}
	}
	a.free, a.cached = nil, 0
	return errors.Join(errs...)
}

// freeBlock returns block p of size bytes to the driver. The caller
// holds a.mu. The block counts as returned even if the driver fails:
// the allocator no longer holds it.
func (a *allocator) freeBlock(drv Driver, p Ptr, size int64) error {
	a.reserved -= size
	if err := drv.Free(p); err != nil {
		return fmt.Errorf("free %#x: %w", uintptr(p), err)
	}
	return nil
}

// release returns every block, live ones included, to the driver and
// closes the allocator: later puts are ignored and gets fail.
func (a *allocator) release(drv Driver) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	errs := []error{a.drainPending(drv), a.dropCache(drv)}
	for p, size := range a.live {
		errs = append(errs, a.freeBlock(drv, p, size))
	}
	a.live, a.inUse, a.closed = nil, 0, true
	return errors.Join(errs...)
}

// stats returns the bytes reserved from the driver, in use by tensors and
// kept in the cache (pending blocks count as reserved until they go back).
func (a *allocator) stats() (reserved, inUse, cached int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reserved, a.inUse, a.cached
}
