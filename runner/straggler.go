package runner

import (
	"github.com/pipecast/pipecast/runner/schedule"
	"github.com/pipecast/pipecast/tensor"
	"golang.org/x/sys/unix"
)

// straggle makes a compute op of the configuration's straggler device,
// which started at start, take Straggler.Factor times as long as its
// work did: the worker sleeps for the difference, with a raw nanosleep
// (time.Sleep rounds short sleeps of an idle process to milliseconds).
// It sleeps rather than spins: on the 2-core machine it was measured on,
// a spinning straggler (with or without yielding to other goroutines)
// slowed the other device too, and coop at K = 2 ran 1.7–2.2 times as
// long under a straggler of 1.5.
// Transfers are not slowed: a slower device does not have a slower link.
func (w *worker) straggle(op schedule.Op, start int64) {
	st := w.t.cfg.Straggler
	if !st.Active() || st.Device != w.k || !op.Kind.Computes() {
		return
	}
	took := w.dev.Now() - start
	// A sleep ends late; what it overslept is taken off the next one, so
	// that over a step the straggler's extra time is its factor's.
	extra := int64(float64(took)*(st.Factor-1)) - w.overslept
	begin := tensor.Nanotime()
	until := begin + extra
	for left := until - tensor.Nanotime(); left > 0; left = until - tensor.Nanotime() {
		ts := unix.NsecToTimespec(left)
		_ = unix.Nanosleep(&ts, nil)
	}
	w.overslept = max(tensor.Nanotime()-until, 0)
	if extra < 0 {
		w.overslept = -extra // still owed
	}
}
