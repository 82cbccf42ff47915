package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

var (
	_ tensor.SGDStepper = (*Device)(nil)
	_ tensor.SGDBatcher = (*Device)(nil)
)

// SGDStep implements tensor.SGDStepper: it applies one step of
// torch.optim.SGD (torch 1.13's _single_tensor_sgd) to w: d = g +
// WeightDecay·w; with momentum, buf = d on the first step, else
// Momentum·buf + (1 − Dampening)·d, and d = d + Momentum·buf with
// Nesterov, else buf; w −= LR·d. buf is not used, and may be nil, when
// Momentum is 0.
func (d *Device) SGDStep(w, g, buf *tensor.Tensor, p tensor.SGDParams, first bool) {
	wd, gd, bd := d.sgdData(w, g, buf, p)
	d.pool.parallel(len(wd), elementGrain, func(lo, hi int) {
		sgdSlice(wd[lo:hi], gd[lo:hi], sub(bd, lo, hi), p, first, false)
	})
}

// SGDSteps implements tensor.SGDBatcher: SGDStep on every parameter of
// steps, and with zeroGrads each gradient zeroed behind the step while it
// is still in cache, all their values shared out over the pool as one
// run. Step by step over ResNet-50's 161 tensors, most of them too small
// to share, one thread did most of the work while the other waited.
func (d *Device) SGDSteps(steps []tensor.ParamStep, p tensor.SGDParams, zeroGrads bool) {
	type part struct{ w, g, b []float32 }
	parts := make([]part, len(steps))
	starts := make([]int, len(steps)+1)
	for k, s := range steps {
		w, g, b := d.sgdData(s.W, s.G, s.Buf, p)
		parts[k] = part{w, g, b}
		starts[k+1] = starts[k] + len(w)
	}
	d.pool.parallel(starts[len(steps)], elementGrain, func(lo, hi int) {
		eachRun(starts, lo, hi, func(k, a, b int) {
			pt := parts[k]
			sgdSlice(pt.w[a:b], pt.g[a:b], sub(pt.b, a, b), p, steps[k].First, zeroGrads)
		})
	})
}

// sub is s[lo:hi], or nil for a nil s.
func sub(s []float32, lo, hi int) []float32 {
	if s == nil {
		return nil
	}
	return s[lo:hi]
}

// sgdData checks an SGD step's tensors and returns their values; the
// buffer's are nil without momentum.
func (d *Device) sgdData(w, g, buf *tensor.Tensor, p tensor.SGDParams) (wd, gd, bd []float32) {
	const op = "sgd step"
	mustAgree(op, w, g)
	wd = d.data(op, w, w.Len())
	gd = d.data(op, g, w.Len())
	if p.Momentum == 0 {
		return wd, gd, nil
	}
	if buf == nil {
		panic(fmt.Sprintf("cpu: %s: momentum %v needs a momentum buffer", op, p.Momentum))
	}
	mustAgree(op, w, buf)
	return wd, gd, d.data(op, buf, w.Len())
}

// sgdBlock is how many values sgdSlice steps before it zeroes their
// gradients, so that the zeroes overwrite lines still in L1.
const sgdBlock = 2048

// sgdSlice steps ws with gradients gs and momentum buffer bs (nil without
// momentum), zeroing gs behind it with zero. The five cases get a loop
// each, so that no loop tests first or Nesterov per element; each does
// the same float32 operations in the same order as torch.
func sgdSlice(ws, gs, bs []float32, p tensor.SGDParams, first, zero bool) {
	for lo := 0; lo < len(ws); lo += sgdBlock {
		hi := min(lo+sgdBlock, len(ws))
		sgdLoop(ws[lo:hi], gs[lo:hi], sub(bs, lo, hi), p, first)
		if zero {
			clear(gs[lo:hi])
		}
	}
}

func sgdLoop(ws, gs, bs []float32, p tensor.SGDParams, first bool) {
	lr, decay := p.LR, p.WeightDecay
	gs = gs[:len(ws)]
	if p.Momentum == 0 {
		for i, w := range ws {
			ws[i] = w - lr*(gs[i]+decay*w)
		}
		return
	}
	bs = bs[:len(ws)]
	mom, keep := p.Momentum, 1-p.Dampening
	switch {
	case first && p.Nesterov:
		// torch clones d into the buffer on the first step, without
		// dampening.
		for i, w := range ws {
			step := gs[i] + decay*w
			bs[i] = step
			ws[i] = w - lr*(step+mom*step)
		}
	case first:
		for i, w := range ws {
			step := gs[i] + decay*w
			bs[i] = step
			ws[i] = w - lr*step
		}
	case p.Nesterov:
		for i, w := range ws {
			step := gs[i] + decay*w
			b := mom*bs[i] + keep*step
			bs[i] = b
			ws[i] = w - lr*(step+mom*b)
		}
	default:
		for i, w := range ws {
			step := gs[i] + decay*w
			b := mom*bs[i] + keep*step
			bs[i] = b
			ws[i] = w - lr*b
		}
	}
}
