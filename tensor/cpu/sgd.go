package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// SGDStep applies one step of torch.optim.SGD (torch 1.13's
// _single_tensor_sgd) to w: d = g + WeightDecay·w; with momentum, buf = d
// on the first step, else Momentum·buf + (1 − Dampening)·d, and d = d +
// Momentum·buf with Nesterov, else buf; w −= LR·d. buf is not used, and
// may be nil, when Momentum is 0.
func (d *Device) SGDStep(w, g, buf *tensor.Tensor, p tensor.SGDParams, first bool) {
	const op = "sgd step"
	mustAgree(op, w, g)
	wd := d.data(op, w, w.Len())
	gd := d.data(op, g, w.Len())
	lr, decay := p.LR, p.WeightDecay
	if p.Momentum == 0 {
		d.pool.parallel(len(wd), elementGrain, func(lo, hi int) {
			ws, gs := wd[lo:hi], gd[lo:hi]
			gs = gs[:len(ws)]
			for i, w := range ws {
				ws[i] = w - lr*(gs[i]+decay*w)
			}
		})
		return
	}
	if buf == nil {
		panic(fmt.Sprintf("cpu: %s: momentum %v needs a momentum buffer", op, p.Momentum))
	}
	mustAgree(op, w, buf)
	bd := d.data(op, buf, w.Len())
	mom, keep := p.Momentum, 1-p.Dampening
	// The four cases get a loop each, so that no loop tests first or
	// Nesterov per element; each does the same float32 operations in the
	// same order as torch.
	d.pool.parallel(len(wd), elementGrain, func(lo, hi int) {
		ws, gs, bs := wd[lo:hi], gd[lo:hi], bd[lo:hi]
		gs, bs = gs[:len(ws)], bs[:len(ws)]
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
	})
}
