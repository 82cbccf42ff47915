package cuda

import (
	"strings"
	"sync"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

func TestRoundBytes(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		want int64
	}{
		{"nothing", 0, 512},
		{"one byte", 1, 512},
		{"one small block", 512, 512},
		{"just past it", 513, 1024},
		{"1 MiB", 1 << 20, 1 << 20},
		{"just past 1 MiB", 1<<20 + 1, 2 << 20},
		{"3 MiB", 3 << 20, 4 << 20},
		{"4 MiB", 4 << 20, 4 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := roundBytes(tc.n); got != tc.want {
				t.Errorf("roundBytes(%d): got %d, want %d", tc.n, got, tc.want)
			}
		})
	}
}

func TestCacheKeepsTwicePeakInUse(t *testing.T) {
	d, f := newFake(t)
	alloc := func(n int) *tensor.Tensor { return d.Alloc(tensor.Activations, n) }
	// 1024 + 512 bytes in use: the peak, and a cap of 3072 cached.
	a, b := alloc(256), alloc(128)
	a.Release()
	b.Release()
	c := alloc(384) // 1536 bytes, fresh: the cache has 1024 and 512
	c.Release()     // 3072 cached, at the cap
	if f.allocs != 3 || f.frees != 0 || d.Reserved() != 3072 {
		t.Fatalf("at the cap: %d allocations, %d frees, %d reserved; want 3, 0, 3072", f.allocs, f.frees, d.Reserved())
	}
	e := alloc(512) // 2048 bytes: the peak in use grows to 2048, the cap to 4096
	e.Release()     // over the cap: back to the driver, at the next alloc
	if f.frees != 0 || d.Reserved() != 3072+2048 {
		t.Errorf("released over the cap: %d frees, %d reserved; want none until the next alloc, 5120 reserved", f.frees, d.Reserved())
	}
	g := alloc(100) // from the cache (512 bytes)
	defer g.Release()
	if f.allocs != 4 || f.frees != 1 || d.Reserved() != 3072 {
		t.Errorf("next alloc: %d allocations, %d frees, %d reserved; want 4, 1, 3072", f.allocs, f.frees, d.Reserved())
	}
	if _, inUse, cached := d.cache.stats(); inUse != 512 || cached != 2560 {
		t.Errorf("in use %d, cached %d; want 512 and 2560", inUse, cached)
	}
}

func TestOutOfMemoryEmptiesTheCache(t *testing.T) {
	d, f := newFake(t)
	f.limit = 6 << 20
	d.Alloc(tensor.Activations, 1<<20).Release() // 4 MiB, cached
	x := d.Alloc(tensor.Activations, 1<<19)      // 2 MiB fits beside it
	defer x.Release()
	y := d.Alloc(tensor.Activations, 1<<18) // 1 MiB: only with the cache emptied
	defer y.Release()
	if f.frees != 1 || d.Reserved() != 3<<20 {
		t.Errorf("after the retry: %d frees, %d reserved; want the cached block freed, 3 MiB reserved", f.frees, d.Reserved())
	}
	msg := panicMessage(func() { d.Alloc(tensor.Activations, 1<<20) })
	if !strings.Contains(msg, "cuda: cudafake:0: alloc of [1048576] (activations)") || !strings.Contains(msg, "out of memory") {
		t.Errorf("alloc past the limit: got panic %q, want one naming the device, the shape and the driver's error", msg)
	}
	if m := d.Memory(); m.LiveTotalBytes != 3<<20 {
		t.Errorf("a failed alloc was accounted: %d bytes live, want %d", m.LiveTotalBytes, 3<<20)
	}
}

// TestReleaseFromOtherGoroutines releases tensors on other goroutines
// while the device's own allocates: the fake driver is not safe for
// concurrent use, so under the race detector this checks that a release
// calls no driver method.
func TestReleaseFromOtherGoroutines(t *testing.T) {
	d, _ := newFake(t)
	ts := make(chan *tensor.Tensor, 64)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := range ts {
				x.Release()
			}
		}()
	}
	for i := range 400 {
		ts <- d.Alloc(tensor.Activations, 1+i%7*300)
	}
	close(ts)
	wg.Wait()
	if m := d.Memory(); m.LiveTotalBytes != 0 {
		t.Errorf("%d bytes live after releasing all", m.LiveTotalBytes)
	}
	if _, inUse, _ := d.cache.stats(); inUse != 0 {
		t.Errorf("%d bytes in use after releasing all", inUse)
	}
}
