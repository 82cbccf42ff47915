package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipecast/pipecast/tensor"
)

// span is one call of a parallel body.
type span struct{ lo, hi int }

// record runs p.parallel(n, grain) with a body that notes the ranges it
// was called with and how many times each index was visited.
func record(p *pool, n, grain int) (spans []span, visits []int32) {
	visits = make([]int32, max(n, 0))
	var mu sync.Mutex
	p.parallel(n, grain, func(lo, hi int) {
		mu.Lock()
		spans = append(spans, span{lo, hi})
		mu.Unlock()
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&visits[i], 1)
		}
	})
	return spans, visits
}

func TestParallelCoversOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 4, 7} {
		p := newPool(threads)
		for _, n := range []int{0, 1, 2, 3, 5, 10, 11, 50, 1001} {
			for _, grain := range []int{-1, 0, 1, 2, 3, 7, 64, 2000} {
				t.Run(fmt.Sprintf("threads=%d/n=%d/grain=%d", threads, n, grain), func(t *testing.T) {
					spans, visits := record(p, n, grain)
					for i, v := range visits {
						if v != 1 {
							t.Fatalf("index %d visited %d times, want once (ranges %v)", i, v, spans)
						}
					}
					if n == 0 && len(spans) != 0 {
						t.Errorf("n=0: got calls %v, want none", spans)
					}
					if len(spans) > threads {
						t.Errorf("got %d ranges, want at most %d threads' worth: %v", len(spans), threads, spans)
					}
					g := max(grain, 1)
					for _, s := range spans {
						if s.lo < 0 || s.hi > n || s.lo >= s.hi {
							t.Errorf("range [%d, %d) is empty or outside [0, %d)", s.lo, s.hi, n)
						}
						if len(spans) > 1 && s.hi-s.lo < g {
							t.Errorf("range [%d, %d) holds fewer than grain=%d items", s.lo, s.hi, g)
						}
					}
					// The pool splits as finely as grain and threads
					// allow, so big loops really use every thread.
					if want := min(threads, n/g); want > 1 && len(spans) != want {
						t.Errorf("got %d ranges, want %d", len(spans), want)
					}
				})
			}
		}
		p.close()
	}
}

func TestParallelSmallLoopStaysOnOneCall(t *testing.T) {
	p := newPool(4)
	defer p.close()
	tests := []struct {
		name     string
		n, grain int
	}{
		{name: "fewer items than grain", n: 5, grain: 8},
		{name: "exactly grain", n: 8, grain: 8},
		{name: "under two grains", n: 15, grain: 8},
		{name: "one item", n: 1, grain: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spans, _ := record(p, tc.n, tc.grain)
			if len(spans) != 1 || spans[0] != (span{0, tc.n}) {
				t.Errorf("got calls %v, want the single call [0, %d)", spans, tc.n)
			}
		})
	}
}

func TestParallelBoundedConcurrency(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			p := newPool(threads)
			defer p.close()
			var active, peak atomic.Int32
			body := func(lo, hi int) {
				a := active.Add(1)
				for {
					m := peak.Load()
					if a <= m || peak.CompareAndSwap(m, a) {
						break
					}
				}
				time.Sleep(50 * time.Microsecond) // give the other ranges a chance to overlap
				active.Add(-1)
			}
			for _, n := range []int{1, 3, 7, 64, 1000} {
				for rep := 0; rep < 5; rep++ {
					p.parallel(n, 1, body)
				}
			}
			if got := peak.Load(); got > int32(threads) {
				t.Errorf("got %d ranges running at once, want at most %d", got, threads)
			}
			if got := active.Load(); got != 0 {
				t.Errorf("%d ranges still running after parallel returned", got)
			}
		})
	}
}

func TestParallelUsesEveryThread(t *testing.T) {
	// Every range waits until all threads are inside the body at once: the
	// call completes only if the pool really runs threads ranges in
	// parallel, and the deadline turns a serialised pool into a failure
	// instead of a hang.
	for _, threads := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			p := newPool(threads)
			defer p.close()
			var arrived atomic.Int32
			all := make(chan struct{})
			var timedOut atomic.Bool
			p.parallel(threads, 1, func(lo, hi int) {
				if arrived.Add(1) == int32(threads) {
					close(all)
				}
				select {
				case <-all:
				case <-time.After(10 * time.Second):
					timedOut.Store(true)
				}
			})
			if timedOut.Load() {
				t.Errorf("only %d of %d ranges ran at once", arrived.Load(), threads)
			}
		})
	}
}

func TestPoolCloseStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	const threads = 6
	p := newPool(threads)
	if got := runtime.NumGoroutine() - before; got < threads-1 {
		t.Fatalf("newPool(%d) started %d goroutines, want %d workers", threads, got, threads-1)
	}
	p.parallel(100, 1, func(lo, hi int) {})
	done := make(chan struct{})
	go func() {
		p.close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return: the workers did not stop")
	}
	// A worker has called Done before it has fully exited, so give the
	// scheduler a moment to retire the goroutines.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > before {
		t.Errorf("goroutines after close: got %d, want at most %d as before newPool", got, before)
	}
}

func TestDeviceCloseStopsPool(t *testing.T) {
	before := runtime.NumGoroutine()
	d := New(tensor.Options{Threads: 4})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > before {
		t.Errorf("goroutines after Device.Close: got %d, want at most %d", got, before)
	}
}

// The dispatch benchmarks measure what one parallel call costs beyond its
// work, which tells how large a grain must be for splitting to pay.
func BenchmarkParallelDispatch1(b *testing.B) { benchmarkParallelDispatch(b, 1) }
func BenchmarkParallelDispatch2(b *testing.B) { benchmarkParallelDispatch(b, 2) }
func BenchmarkParallelDispatch4(b *testing.B) { benchmarkParallelDispatch(b, 4) }

func benchmarkParallelDispatch(b *testing.B, threads int) {
	p := newPool(threads)
	defer p.close()
	var sink atomic.Int64
	body := func(lo, hi int) { sink.Add(int64(hi - lo)) }
	for b.Loop() {
		p.parallel(threads, 1, body)
	}
}

// BenchmarkParallelEmpty times a call whose ranges do nothing on a pool
// of two threads: the hand-off to the worker and back, all that a call
// costs beyond its work when calls follow each other closely.
func BenchmarkParallelEmpty(b *testing.B) {
	p := newPool(2)
	defer p.close()
	body := func(lo, hi int) {}
	for b.Loop() {
		p.parallel(2, 1, body)
	}
}

// The gap benchmarks keep the caller busy for a while between empty calls,
// as a model's serial code does between kernels; gap-ns/op is the time per
// call beyond that gap. A gap longer than the pool's polling window finds
// the worker parked, so it shows what a wake-up costs.
func BenchmarkParallelAfterGap5us(b *testing.B)   { benchmarkParallelAfterGap(b, 5*time.Microsecond) }
func BenchmarkParallelAfterGap100us(b *testing.B) { benchmarkParallelAfterGap(b, 100*time.Microsecond) }

func benchmarkParallelAfterGap(b *testing.B, gap time.Duration) {
	p := newPool(2)
	defer p.close()
	body := func(lo, hi int) {}
	for b.Loop() {
		// Busy rather than asleep: a sleeping caller would add its own
		// wake-up to what is measured.
		for start := time.Now(); time.Since(start) < gap; {
		}
		p.parallel(2, 1, body)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)-float64(gap.Nanoseconds()), "gap-ns/op")
}

// TestParallelAfterIdle checks calls that find the workers still polling,
// just parked or long asleep, and a caller that parks because the
// workers' ranges outlast its polling window: every call covers its loop
// once and returns.
func TestParallelAfterIdle(t *testing.T) {
	p := newPool(3)
	defer p.close()
	for _, idle := range []time.Duration{0, spinWindow / 2, spinWindow, 2 * spinWindow, time.Millisecond} {
		for _, work := range []time.Duration{0, 4 * spinWindow} {
			for rep := 0; rep < 20; rep++ {
				time.Sleep(idle)
				var visits [3]atomic.Int32
				p.parallel(3, 1, func(lo, hi int) {
					if lo != 2 { // the workers' ranges, not the caller's
						time.Sleep(work)
					}
					for i := lo; i < hi; i++ {
						visits[i].Add(1)
					}
				})
				for i := range visits {
					if v := visits[i].Load(); v != 1 {
						t.Fatalf("idle %v, work %v: index %d visited %d times, want once", idle, work, i, v)
					}
				}
			}
		}
	}
}

// TestPoolParksWhenIdle checks that an idle pool's workers stop polling and
// park, so that an idle device burns no CPU.
func TestPoolParksWhenIdle(t *testing.T) {
	p := newPool(4)
	defer p.close()
	p.parallel(4, 1, func(lo, hi int) {})
	deadline := time.Now().Add(10 * time.Second)
	for i := range p.slots {
		for !p.slots[i].sleeping.Load() {
			if time.Now().After(deadline) {
				t.Fatalf("worker %d still polling long after its polling window of %v", i, spinWindow)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Parked workers wake for the next call.
	spans, visits := record(p, 8, 1)
	if len(spans) != 4 {
		t.Errorf("after parking: got %d ranges, want 4", len(spans))
	}
	for i, v := range visits {
		if v != 1 {
			t.Errorf("after parking: index %d visited %d times, want once", i, v)
		}
	}
}

// TestParallelConcurrentCallers checks calls made on one pool from several
// goroutines at once, and a call nested in a range of another: each covers
// its own loop exactly once, and none waits for another forever.
func TestParallelConcurrentCallers(t *testing.T) {
	p := newPool(3)
	defer p.close()
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := 0; rep < 200; rep++ {
				n := 1 + (g*37+rep*11)%300
				_, visits := record(p, n, 1)
				for i, v := range visits {
					if v != 1 {
						errs <- fmt.Sprintf("caller %d, n=%d: index %d visited %d times, want once", g, n, i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	var inner atomic.Int64
	p.parallel(3, 1, func(lo, hi int) {
		p.parallel(100, 1, func(lo, hi int) { inner.Add(int64(hi - lo)) })
	})
	if got := inner.Load(); got != 300 {
		t.Errorf("nested calls covered %d items, want 3×100", got)
	}
}

// TestParallelOneProcessor checks a pool with more threads than the
// runtime has processors, where no thread may poll for long without
// starving the one that has work: every call still covers its loop once
// and returns.
func TestParallelOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := newPool(3)
	defer p.close()
	for rep := 0; rep < 200; rep++ {
		n := 1 + rep%17
		spans, visits := record(p, n, 1)
		for i, v := range visits {
			if v != 1 {
				t.Fatalf("n=%d: index %d visited %d times, want once (ranges %v)", n, i, v, spans)
			}
		}
	}
	if got := spinners.Load(); got != 0 {
		t.Errorf("%d threads still counted as polling with no call running", got)
	}
}

// TestParallelPanicReachesCaller checks that a panic in any range, on a
// worker thread or the caller's, is raised on the calling goroutine after
// every range has finished, and that the pool still works afterwards.
func TestParallelPanicReachesCaller(t *testing.T) {
	p := newPool(3)
	defer p.close()
	for _, bad := range []int{0, 1, 2} { // ranges 0 and 1 run on workers, 2 on the caller
		var finished atomic.Int32
		func() {
			defer func() {
				r := recover()
				if r != "boom" {
					t.Errorf("range %d panicked: recovered %v, want boom", bad, r)
				}
				if got := finished.Load(); got != 2 {
					t.Errorf("range %d panicked: %d other ranges finished before the panic was raised, want 2", bad, got)
				}
			}()
			p.parallel(3, 1, func(lo, hi int) {
				if lo == bad {
					panic("boom")
				}
				finished.Add(1)
			})
		}()
	}
	var sum atomic.Int64
	p.parallel(100, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
	if sum.Load() != 100 {
		t.Errorf("after panics: covered %d of 100", sum.Load())
	}
}

// TestParallelLateWakeUp delays the worker that finished a call's last
// range between finishing it and looking for a parked caller, until the
// next call's caller has parked: that call must still return only once
// its own ranges have run, and later calls must neither return early nor
// wait forever. (A wake-up not tied to its call did both: the late look
// woke the next call's caller before its worker range ran, which left
// the count of unfinished ranges off by one, and a later call waited for
// ever; gemmbench hung so on a 2-core VM.)
func TestParallelLateWakeUp(t *testing.T) {
	p := newPool(2)
	defer p.close()
	// The delay falls on the third call, whose caller found the worker
	// awake (calls in quick succession) and so polls the count rather
	// than parking: it sees the count reach zero and returns while the
	// worker sleeps; the fourth call's caller then polls in vain and
	// parks before the worker looks.
	var finished, delayed atomic.Int32
	p.afterLastRange = func() {
		if finished.Add(1) == 3 {
			delayed.Add(1)
			time.Sleep(20 * spinWindow) // longer than a caller polls
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for call := range 50 {
			visits := make([]atomic.Int32, 2)
			p.parallel(2, 1, func(lo, hi int) {
				if lo == 0 && call == 3 {
					// The worker's range (the caller takes the last)
					// in the call after the delay outlasts a parked
					// caller's wake-up.
					time.Sleep(2 * spinWindow)
				}
				for i := lo; i < hi; i++ {
					visits[i].Add(1)
				}
			})
			for i := range visits {
				if v := visits[i].Load(); v != 1 {
					t.Errorf("call %d returned with index %d visited %d times, want once", call, i, v)
				}
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a call still waits for its workers after 20 s")
	}
	if delayed.Load() != 1 {
		t.Fatal("no worker finished a third call's last range: the delay never ran")
	}
}
