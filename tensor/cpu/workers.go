package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // for the go:linkname of procyield
)

// spinWindow is how long a thread that waits on the pool (a worker for
// its next range, the caller for the workers to finish) polls before it
// parks. Waking a parked thread that is locked to its OS thread costs
// 50–150 µs on a 2-core VM (futex wake-ups through the scheduler), and
// once one thread of a call starts that late the other finishes first,
// parks too, and has to be woken in turn: with a 20 µs window a 256³
// product on 2 threads ran at a third of its speed, every worker starting
// 157 µs late. Half a millisecond outlasts the gaps between the kernels of
// a training step, and bounds the CPU an idle pool burns: after it, every
// thread sleeps.
const spinWindow = 500 * time.Microsecond

// spinPause is the number of PAUSE instructions between two polls: it
// keeps the polling loop from hammering the pipeline and the memory bus,
// and is short beside the wake-up a poll can save.
const spinPause = 4

// procyield executes cycles PAUSE instructions (or the platform's spin
// hint). The runtime keeps its signature stable for linkname (Go issue
// 67401).
//
//go:linkname procyield runtime.procyield
func procyield(cycles uint32)

// spinners counts the threads polling in spin past their first few
// polls, over every pool of the process.
var spinners atomic.Int32

// spin polls ready for at most spinWindow and reports whether it became
// true. A polling thread holds one of the runtime's GOMAXPROCS
// processors, so past its first few polls (a µs or two, enough for the
// hand-offs of back-to-back calls) a thread goes on polling only while
// fewer than GOMAXPROCS − 1 others do, over all devices: the rest park,
// leaving a processor to the goroutines that have work (a pipeline's
// other devices, or a caller when GOMAXPROCS is 1). The clock is read
// only every few polls, which keeps each poll short.
func spin(ready func() bool) bool {
	if ready() {
		return true
	}
	start := time.Now()
	for i := 1; ; i++ {
		procyield(spinPause)
		if ready() {
			return true
		}
		if i%32 != 0 {
			continue
		}
		if i == 32 {
			if spinners.Add(1) > int32(runtime.GOMAXPROCS(0)-1) {
				spinners.Add(-1)
				return false
			}
			defer spinners.Add(-1)
		}
		if time.Since(start) > spinWindow {
			return false
		}
	}
}

// pool is a device's fixed set of T worker threads. The goroutine that
// calls parallel counts as one of them; T−1 more wait for ranges, each
// locked to its own OS thread so that a device's parallelism is real and
// bounded.
//
// A call hands range i to worker i through that worker's slot: it writes
// the range, then bumps the slot's sequence number, which the worker
// polls for a while after finishing its last range before it parks on
// its wake channel. The caller likewise polls the count of unfinished
// ranges before parking. So calls in quick succession pass their ranges
// on with a few memory operations, and an idle pool sleeps.
type pool struct {
	threads int
	slots   []slot // one per worker thread
	wg      sync.WaitGroup

	// busy is held by the call in progress. A call that finds it held —
	// one from another goroutine, or one nested in a range of a running
	// call — runs its loop on its own goroutine instead of waiting, which
	// could deadlock when nested.
	busy sync.Mutex

	// pending counts the current call's ranges that workers have not
	// finished; the worker that brings it to zero wakes the caller
	// through done if the caller has parked: waiting holds the number of
	// the call whose caller parks (calls counts them), 0 while none
	// does. The number ties a wake-up to its call: a worker that brought
	// one call's count to zero may look at waiting only after that call
	// has returned and the next one's caller has parked, and must not
	// wake it (it would return before its ranges ran, its count off by
	// one from then on, and a later call could wait forever).
	pending atomic.Int32
	calls   uint32 // the caller's alone, under busy
	waiting atomic.Uint32
	done    chan struct{}

	// The first panic of the current call's ranges, kept to be raised
	// again on the calling goroutine, where the device's user can recover
	// it (a panic on a worker thread would otherwise end the process).
	mu       sync.Mutex
	panicked bool
	value    any

	// afterLastRange, when set (by tests, before the first call), runs
	// on the worker that finished a call's last range, between that and
	// waking the caller: a test delays the wake-up through it.
	afterLastRange func()
}

// slot is one worker's mailbox. fn, lo and hi are written by the caller
// before seq is bumped and read by the worker after it sees the bump; fn
// nil tells the worker to exit. The padding keeps two workers' slots off
// one cache line, so that one's polling does not slow the other's.
type slot struct {
	seq      atomic.Uint32
	sleeping atomic.Bool   // the worker has parked, or is about to, on wake
	wake     chan struct{} // capacity 1: a wake-up is never lost nor blocks
	fn       func(lo, hi int)
	lo, hi   int
	call     uint32 // the number of the call the range belongs to
	_        [64]byte
}

func newPool(threads int) *pool {
	p := &pool{threads: threads, done: make(chan struct{}, 1)}
	p.slots = make([]slot, threads-1)
	for i := range p.slots {
		s := &p.slots[i]
		s.wake = make(chan struct{}, 1)
		p.wg.Add(1)
		go p.worker(s)
	}
	return p
}

// worker runs the ranges posted to s, on a thread of its own, until it is
// posted a nil function.
func (p *pool) worker(s *slot) {
	defer p.wg.Done()
	runtime.LockOSThread()
	var seen uint32
	for {
		seen = s.await(seen)
		if s.fn == nil {
			return
		}
		call := s.call
		p.run(s.fn, s.lo, s.hi)
		if p.pending.Add(-1) == 0 {
			if p.afterLastRange != nil {
				p.afterLastRange()
			}
			if p.waiting.CompareAndSwap(call, 0) {
				p.done <- struct{}{}
			}
		}
	}
}

// await returns s's sequence number once it differs from seen, polling
// first and then parking. Whoever clears sleeping — the worker
// on finding the new range itself, or the caller on posting it — decides
// whether a token goes through wake, so that exactly one is sent per park
// and consumed by it.
func (s *slot) await(seen uint32) uint32 {
	if spin(func() bool { return s.seq.Load() != seen }) {
		return s.seq.Load()
	}
	s.sleeping.Store(true)
	if s.seq.Load() != seen && s.sleeping.Swap(false) {
		return s.seq.Load() // posted meanwhile, and the caller saw no sleeper
	}
	<-s.wake
	return s.seq.Load()
}

// post hands [lo, hi) of fn (or the order to exit, fn nil) to s's worker,
// waking it if it has parked, and reports whether it had to.
func (s *slot) post(fn func(lo, hi int), lo, hi int, call uint32) (woke bool) {
	s.fn, s.lo, s.hi, s.call = fn, lo, hi, call
	s.seq.Add(1)
	if s.sleeping.Load() && s.sleeping.Swap(false) {
		s.wake <- struct{}{}
		return true
	}
	return false
}

// run calls fn on [lo, hi), recording a panic instead of unwinding.
func (p *pool) run(fn func(lo, hi int), lo, hi int) {
	defer func() {
		if r := recover(); r != nil {
			p.mu.Lock()
			if !p.panicked {
				p.panicked, p.value = true, r
			}
			p.mu.Unlock()
		}
	}()
	fn(lo, hi)
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
	if parts <= 1 || !p.busy.TryLock() {
		fn(0, n)
		return
	}
	defer p.busy.Unlock()
	p.panicked, p.value = false, nil
	p.calls++
	if p.calls == 0 {
		p.calls = 1 // 0 means no caller waits
	}
	p.pending.Store(int32(parts - 1))
	size, rem := n/parts, n%parts
	lo, woke := 0, false
	for i := 0; i < parts-1; i++ {
		hi := lo + size
		if i < rem {
			hi++
		}
		if p.slots[i].post(fn, lo, hi, p.calls) {
			woke = true
		}
		lo = hi
	}
	p.run(fn, lo, n) // the caller takes the last range
	// A worker that had to be woken is tens of µs from starting, and it
	// is queued to run on this goroutine's processor: polling would only
	// delay it, so the caller parks at once then.
	p.wait(!woke)
	if p.panicked {
		panic(p.value)
	}
}

// wait returns once the workers have finished the current call's ranges,
// polling first (if poll) and then parking on done; as in slot.await,
// whoever clears waiting decides whether a token goes through done.
func (p *pool) wait(poll bool) {
	if poll && spin(func() bool { return p.pending.Load() == 0 }) {
		return
	}
	p.waiting.Store(p.calls)
	if p.pending.Load() == 0 && p.waiting.CompareAndSwap(p.calls, 0) {
		return
	}
	<-p.done
}

// close stops the workers and returns once they have exited.
func (p *pool) close() {
	p.busy.Lock()
	defer p.busy.Unlock()
	for i := range p.slots {
		p.slots[i].post(nil, 0, 0, 0)
	}
	p.wg.Wait()
}
