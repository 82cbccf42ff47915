package cpu

import "github.com/pipecast/pipecast/tensor"

var _ tensor.AdamWStepper = (*Device)(nil)

// AdamWSteps implements tensor.AdamWStepper: tensor.AdamWStepIn on every
// parameter of steps and, with zeroGrads, each gradient zeroed behind the
// step while it is still in cache (in blocks of sgdBlock values), all
// their values shared out over the pool as one run, as SGDSteps does. The
// loop is the fallback's, run on ranges of each parameter's values, so
// the results are the fallback's bit for bit.
func (d *Device) AdamWSteps(steps []tensor.AdamWParamStep, p tensor.AdamWParams, zeroGrads bool) {
	const op = "adamw step"
	type part struct{ w, g, m, v []float32 }
	parts := make([]part, len(steps))
	starts := make([]int, len(steps)+1)
	for k, s := range steps {
		s.Check()
		n := s.W.Len()
		parts[k] = part{d.data(op, s.W, n), d.data(op, s.G, n), d.data(op, s.ExpAvg, n), d.data(op, s.ExpAvgSq, n)}
		starts[k+1] = starts[k] + n
	}
	d.pool.parallel(starts[len(steps)], elementGrain, func(lo, hi int) {
		eachRun(starts, lo, hi, func(k, a, b int) {
			pt := parts[k]
			for lo := a; lo < b; lo += sgdBlock {
				hi := min(lo+sgdBlock, b)
				tensor.AdamWStepIn(pt.w[lo:hi], pt.g[lo:hi], pt.m[lo:hi], pt.v[lo:hi], p, steps[k].Step)
				if zeroGrads {
					clear(pt.g[lo:hi])
				}
			}
		})
	})
}
