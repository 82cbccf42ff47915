package cpu

import (
	"runtime"
	"sync"
)

// pool is a device's fixed set of T worker threads. The goroutine that
// calls parallel counts as one of them; T−1 more wait for chunks, each
// locked to its own OS thread so that a device's parallelism is real and
// bounded.
type pool struct {
	threads int
	work    chan chunk
	wg      sync.WaitGroup
}

type chunk struct {
	fn     func(lo, hi int)
	lo, hi int
	call   *call
}

// call is one parallel call's completion: its chunks count down done, and
// the first panic of any of them is kept to be raised again on the
// calling goroutine, where the device's user can recover it (a panic on a
// worker thread would otherwise end the process).
type call struct {
	done     sync.WaitGroup
	mu       sync.Mutex
	panicked bool
	value    any
}

// run calls fn on [lo, hi), recording a panic instead of unwinding.
func (c *call) run(fn func(lo, hi int), lo, hi int) {
	defer func() {
		if r := recover(); r != nil {
			c.mu.Lock()
			if !c.panicked {
				c.panicked, c.value = true, r
			}
			c.mu.Unlock()
		}
	}()
	fn(lo, hi)
}

func newPool(threads int) *pool {
	p := &pool{threads: threads, work: make(chan chunk)}
	for i := 1; i < threads; i++ {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			runtime.LockOSThread()
			for c := range p.work {
				c.call.run(c.fn, c.lo, c.hi)
				c.call.done.Done()
			}
		}()
	}
	return p
}

// parallel calls fn on disjoint ranges covering [0, n), on up to T
// threads, and returns when all calls have. Each range holds at least
// grain items unless n itself is smaller, so tiny loops stay on one thread.
// If any call panics, parallel waits for the others and then panics on
// the calling goroutine with the first panic's value.
func (p *pool) parallel(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	parts := min(p.threads, n/grain)
	if parts <= 1 {
		fn(0, n)
		return
	}
	c := &call{}
	c.done.Add(parts - 1)
	size, rem := n/parts, n%parts
	lo := 0
	for i := 0; i < parts; i++ {
		hi := lo + size
		if i < rem {
			hi++
		}
		if i == parts-1 {
			c.run(fn, lo, hi) // the caller takes the last range
		} else {
			p.work <- chunk{fn: fn, lo: lo, hi: hi, call: c}
		}
		lo = hi
	}
	c.done.Wait()
	if c.panicked {
		panic(c.value)
	}
}

func (p *pool) close() {
	close(p.work)
	p.wg.Wait()
}
