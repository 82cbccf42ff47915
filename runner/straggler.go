package runner

import (
	"github.com/pipecast/pipecast/runner/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// straggle makes a compute op of the configuration's straggler device,
// which started at start, take Straggler.Factor times as long as its
// work did: the worker spins for the difference, keeping its core busy
// as a slower device would (a sleep would free the core to the other
// devices and model something else). Transfers are not slowed: a slower
// device does not have a slower link.
func (w *worker) straggle(op schedule.Op, start int64) {
	st := w.t.cfg.Straggler
	if !st.Active() || st.Device != w.k || !slowed(op.Kind) {
		return
	}
	took := w.dev.Now() - start
	until := tensor.Nanotime() + int64(float64(took)*(st.Factor-1))
	for tensor.Nanotime() < until {
	}
}

// slowed reports whether a straggler runs ops of kind k slower: every
// op that computes.
func slowed(k schedule.OpKind) bool {
	switch k {
	case schedule.Forward, schedule.Recompute, schedule.Backward, schedule.Predict, schedule.Loss, schedule.Update:
		return true
	}
	return false
}
