package cpu

import (
	"math"
	"os"
	"sync"
)

// A device keeps the memory of released storages and hands it to later
// allocations of the same size, as PyTorch's caching allocator does for
// CUDA. A training step allocates the same shapes every step, so after the
// first step almost every allocation is served from the cache: no fresh
// pages to fault in and zero (a 64×64 ResNet-50 step faulted in over a
// hundred MiB of pages), and no garbage for the collector, whose work
// otherwise lands in the middle of a step at a different place each run.
//
// Released memory returns to the cache only: the storage's own handle is
// dropped on release (using a released tensor panics as before), and
// every allocation is zeroed again before it is handed out, so a tensor's
// contents never depend on what the cache held.

// cacheEnv names the environment variable that configures the cache:
// "off" allocates fresh memory for every tensor (to compare against),
// "poison" fills released memory with NaN before keeping it, so that a
// kernel reading memory after its tensor's release computes NaN rather
// than plausible numbers (the tests run with it once).
const cacheEnv = "PIPECAST_CPU_CACHE"

// cacheMode is cacheEnv's value at start-up.
var cacheMode = os.Getenv(cacheEnv)

// allocCache is a device's released memory by element count. The device
// lets it keep at most twice its peak of live bytes: a step's backward
// allocates other sizes than the forward released, and with one peak's
// worth a 64×64 ResNet-50 step still dropped 130 MB of its buffers and
// allocated them afresh in the next step.
type allocCache struct {
	mu    sync.Mutex
	free  map[int][][]float32
	bytes int64
}

// take returns a kept buffer of exactly n elements, or nil. The buffer
// holds what its last tensor left: the caller zeroes it.
func (c *allocCache) take(n int) []float32 {
	if cacheMode == "off" {
		return nil
	}
	c.mu.Lock()
	bufs := c.free[n]
	if len(bufs) == 0 {
		c.mu.Unlock()
		return nil
	}
	b := bufs[len(bufs)-1]
	bufs[len(bufs)-1] = nil
	c.free[n] = bufs[:len(bufs)-1]
	c.bytes -= int64(n) * 4
	c.mu.Unlock()
	return b
}

// give keeps b unless the cache would then hold more than limit bytes.
func (c *allocCache) give(b []float32, limit int64) {
	if cacheMode == "off" || len(b) == 0 {
		return
	}
	size := int64(len(b)) * 4
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+size > limit {
		return // the garbage collector takes it
	}
	if cacheMode == "poison" {
		nan := float32(math.NaN())
		for i := range b {
			b[i] = nan
		}
	}
	if c.free == nil {
		c.free = map[int][][]float32{}
	}
	c.free[len(b)] = append(c.free[len(b)], b)
	c.bytes += size
}

// drop empties the cache.
func (c *allocCache) drop() {
	c.mu.Lock()
	c.free, c.bytes = nil, 0
	c.mu.Unlock()
}

// cached returns the bytes the cache holds.
func (c *allocCache) cached() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
