package cpu

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// withCacheMode runs f with the cache configured as by PIPECAST_CPU_CACHE=mode.
func withCacheMode(t *testing.T, mode string, f func()) {
	t.Helper()
	old := cacheMode
	cacheMode = mode
	defer func() { cacheMode = old }()
	f()
}

// TestAllocZeroesLargeReusedBuffers reuses a buffer large enough for its
// zeroing to be spread over the device's threads.
func TestAllocZeroesLargeReusedBuffers(t *testing.T) {
	withCacheMode(t, "", func() {
		d := New(tensor.Options{Threads: 3})
		defer d.Close()
		const n = 5*elementGrain + 7
		a := d.Alloc(tensor.Activations, n)
		for i := range Data(a) {
			Data(a)[i] = float32(i + 1)
		}
		first := &Data(a)[0]
		a.Release()
		b := d.Alloc(tensor.Activations, n)
		defer b.Release()
		if &Data(b)[0] != first {
			t.Fatal("the released buffer was not reused")
		}
		for i, v := range Data(b) {
			if v != 0 {
				t.Fatalf("reused memory not zeroed: element %d = %v", i, v)
			}
		}
	})
}

func TestAllocReusesReleasedMemoryZeroed(t *testing.T) {
	withCacheMode(t, "", func() {
		d := New(tensor.Options{Threads: 1})
		defer d.Close()
		a := d.Alloc(tensor.Activations, 4, 8)
		da := Data(a)
		for i := range da {
			da[i] = float32(i + 1)
		}
		first := &da[0]
		a.Release()
		if got := d.cache.cached(); got != 32*4 {
			t.Fatalf("cache holds %d bytes after releasing 128, want 128", got)
		}
		b := d.Alloc(tensor.Gradients, 8, 4) // same size, another shape and category
		db := Data(b)
		if &db[0] != first {
			t.Error("an allocation of the released size got fresh memory, want the released memory")
		}
		for i, v := range db {
			if v != 0 {
				t.Fatalf("reused memory not zeroed: element %d = %v", i, v)
			}
		}
		if got := d.cache.cached(); got != 0 {
			t.Errorf("cache holds %d bytes after handing its buffer out, want 0", got)
		}
		c := d.Alloc(tensor.Activations, 31) // another size: fresh
		if &Data(c)[0] == first {
			t.Error("an allocation of another size got the cached buffer")
		}
		if s := d.Memory(); s.LiveTotalBytes != (32+31)*4 {
			t.Errorf("live bytes %d, want %d: the cache must not change the accounting", s.LiveTotalBytes, (32+31)*4)
		}
		b.Release()
		c.Release()
	})
}

func TestAllocCacheLimit(t *testing.T) {
	withCacheMode(t, "", func() {
		var c allocCache
		c.give(make([]float32, 10), 100)
		c.give(make([]float32, 20), 100) // 40 + 80 > 100: dropped
		if got := c.cached(); got != 40 {
			t.Errorf("cache holds %d bytes, want 40 (the second buffer over the limit)", got)
		}
		if c.take(20) != nil {
			t.Error("take(20) found a buffer the limit dropped")
		}
		if b := c.take(10); len(b) != 10 {
			t.Errorf("take(10) = %d elements, want the kept 10", len(b))
		}
	})
}

func TestAllocCacheOffAndPoison(t *testing.T) {
	withCacheMode(t, "off", func() {
		var c allocCache
		c.give(make([]float32, 10), 1<<20)
		if c.cached() != 0 || c.take(10) != nil {
			t.Error("PIPECAST_CPU_CACHE=off kept a buffer")
		}
	})
	withCacheMode(t, "poison", func() {
		var c allocCache
		b := []float32{1, 2, 3}
		c.give(b, 1<<20)
		for i, v := range b {
			if !math.IsNaN(float64(v)) {
				t.Errorf("poisoned buffer element %d = %v, want NaN", i, v)
			}
		}
		// take hands the poisoned buffer back as it is: zeroing is
		// Alloc's (TestAllocReusesReleasedMemoryZeroed).
		if got := c.take(3); !math.IsNaN(float64(got[0])) {
			t.Errorf("take after poisoning = %v, want the poisoned buffer", got)
		}
	})
}
