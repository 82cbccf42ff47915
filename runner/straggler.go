package runner

import (
	"slices"

	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
	"golang.org/x/sys/unix"
)

// straggle makes compute op i of the configuration's straggler device,
// which started at start, take Straggler.Factor times as long as it does
// at full speed.
//
// Full speed is measured: in the warm-up steps the straggler runs
// unslowed, and an op's full-speed duration is its median over the
// warm-up steps after the first (which is cold: its allocations and page
// faults are the run's); in the measured steps the straggler sleeps
// until the op has taken Factor times that. Scaling the op's own
// duration instead overshoots: an op that follows a sleep runs slower
// than one that follows work (its caches are cold, its core woke from
// idle), by up to a fifth for short ops on the 2-core machine this was
// measured on, so a device slowed that way ran 1.5–1.8 times as long
// under a factor of 1.5. The minimum over the warm-up steps undershoots
// (1.40–1.47 times as long). Without warm-up steps the op's own duration
// is scaled.
//
// It sleeps rather than spins (with a raw nanosleep: time.Sleep rounds
// short sleeps of an idle process to milliseconds): a spinning straggler,
// with or without yielding to other goroutines, slowed the other device
// too, and coop at K = 2 ran 1.7–2.2 times as long under a factor of 1.5.
// Transfers are not slowed: a slower device does not have a slower link.
func (w *worker) straggle(i int, op schedule.Op, start int64) {
	st := w.t.cfg.Straggler
	if !st.Active() || st.Device != w.d || !op.Kind.Computes() {
		return
	}
	took := w.dev.Now() - start
	if w.step.step < w.t.measureSteps {
		if w.warmupTook == nil {
			w.warmupTook = make([][]int64, len(w.ops))
		}
		if w.step.step > 0 || w.t.measureSteps == 1 {
			w.warmupTook[i] = append(w.warmupTook[i], took)
		}
		return
	}
	if w.unslowed == nil {
		w.unslowed = make([]int64, len(w.ops))
		for j, ds := range w.warmupTook {
			w.unslowed[j] = medianNanos(ds)
		}
		w.warmupTook = nil
	}
	want := int64(float64(took) * st.Factor)
	if u := w.unslowed[i]; u > 0 {
		want = int64(float64(u) * st.Factor)
	}
	// A sleep ends late; what it overslept is taken off the next one, so
	// that over a step the straggler's extra time is its factor's.
	extra := want - took - w.overslept
	until := tensor.Nanotime() + extra
	for left := extra; left > 0; left = until - tensor.Nanotime() {
		ts := unix.NsecToTimespec(left)
		_ = unix.Nanosleep(&ts, nil)
	}
	w.overslept = max(tensor.Nanotime()-until, 0)
	if extra < 0 {
		w.overslept = -extra // still owed
	}
}

// medianNanos returns the median of ds (the lower middle one of an even
// count; 0 for none), reordering ds.
func medianNanos(ds []int64) int64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[(len(ds)-1)/2]
}
