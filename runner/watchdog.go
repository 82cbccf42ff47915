package runner

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// progress is a worker's position in its program: the step and the
// index of the op it started last, and a count that moves with every op,
// read by the watchdog while the worker runs.
type progress struct {
	step, op, moves atomic.Int64
}

func (p *progress) at(step, op int) {
	p.step.Store(int64(step))
	p.op.Store(int64(op))
	p.moves.Add(1)
}

// ErrStalled is the cause of a run the watchdog stopped.
var ErrStalled = fmt.Errorf("no progress")

// watchdog cancels the run's context, with a cause naming every local
// device's position in its program, when none of the trainer's workers
// starts an op for timeout: a peer that stopped (a process stopped with
// SIGSTOP, a host that went away) leaves the others waiting for it. The
// returned stop ends the watchdog.
func (t *Trainer) watchdog(ctx context.Context, timeout time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if timeout <= 0 {
		return ctx, func() { cancel(nil) }
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(min(timeout/4, time.Second))
		defer tick.Stop()
		last, since := t.moves(), time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if m := t.moves(); m != last {
					last, since = m, now
					continue
				}
				if now.Sub(since) >= timeout {
					cancel(fmt.Errorf("%w for %v: %s", ErrStalled, timeout.Round(time.Millisecond), t.positions()))
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// alive tells the watchdog that the run moved on without starting an op
// (it finished a phase such as the calibration).
func (t *Trainer) alive() {
	if len(t.workers) > 0 {
		t.workers[0].progress.moves.Add(1)
	}
}

// moves sums the local workers' op counts.
func (t *Trainer) moves() int64 {
	var n int64
	for _, w := range t.workers {
		n += w.progress.moves.Load()
	}
	return n
}

// positions describes where every local device is in its program.
func (t *Trainer) positions() string {
	var out []string
	for _, w := range t.workers {
		step, i := int(w.progress.step.Load()), int(w.progress.op.Load())
		op := "before its first op"
		if w.progress.moves.Load() > 0 && i < len(w.ops) {
			op = fmt.Sprintf("op %d of %d (%v)", i+1, len(w.ops), w.ops[i])
		}
		out = append(out, fmt.Sprintf("device %d at step %d, %s", w.d, step, op))
	}
	return strings.Join(out, "; ")
}
