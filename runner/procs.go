package runner

import (
	"runtime"
	"sync"
)

// A single-device run computes on its device's T threads, and any more
// of the runtime's processors (GOMAXPROCS) only give the scheduler
// somewhere else to resume the device's goroutine after it is preempted,
// on another core, away from the caches its blocks just filled. Measured
// on two cores: a resnet50 K = 1, T = 1 run (width 0.25, 32×32) took 5–8 %
// less time per step with GOMAXPROCS 1 than with 2, and its blocks had
// run 5–8 % slower than the same blocks in K = 2 runs, where both
// processors are busy. So Run holds GOMAXPROCS at the threads of the
// single-device runs in progress while they step. Multi-device runs keep
// every processor: their transports hand tensors between goroutines that
// need a free one.

// procs is the processors the single-device runs in progress hold.
var procs struct {
	mu     sync.Mutex
	active int // threads of the runs in progress
	saved  int // GOMAXPROCS before the first of them
}

// reserveProcs sets GOMAXPROCS to the threads of the runs holding it,
// threads more, but never above what it was before the first of them;
// release gives them back, and the last release restores it.
func reserveProcs(threads int) (release func()) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.active == 0 {
		procs.saved = runtime.GOMAXPROCS(0)
	}
	procs.active += threads
	runtime.GOMAXPROCS(min(procs.active, procs.saved))
	var once sync.Once
	return func() {
		once.Do(func() {
			procs.mu.Lock()
			defer procs.mu.Unlock()
			procs.active -= threads
			if procs.active == 0 {
				runtime.GOMAXPROCS(procs.saved)
				return
			}
			runtime.GOMAXPROCS(min(procs.active, procs.saved))
		})
	}
}
