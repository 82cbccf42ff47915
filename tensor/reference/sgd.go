package reference

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// SGDStep applies one step of torch.optim.SGD (torch 1.13) to w in place,
// with gradient g and momentum buffer buf (updated in place; nil when
// p.Momentum is 0):
//
//	d = g + WeightDecay·w
//	if Momentum ≠ 0:
//		buf = d                                      on the first step
//		buf = Momentum·buf + (1 − Dampening)·d       afterwards
//		d = d + Momentum·buf if Nesterov, else d = buf
//	w = w − LR·d
func SGDStep(w, g, buf []float64, p tensor.SGDParams, first bool) {
	lensAgree("sgd step", len(w), len(g))
	lr, mom, damp, decay := float64(p.LR), float64(p.Momentum), float64(p.Dampening), float64(p.WeightDecay)
	if mom != 0 {
		if buf == nil {
			panic(fmt.Sprintf("reference: sgd step: momentum %v needs a buffer", mom))
		}
		lensAgree("sgd step", len(w), len(buf))
	}
	for i := range w {
		d := g[i] + decay*w[i]
		if mom != 0 {
			if first {
				buf[i] = d
			} else {
				buf[i] = mom*buf[i] + (1-damp)*d
			}
			if p.Nesterov {
				d += mom * buf[i]
			} else {
				d = buf[i]
			}
		}
		w[i] -= lr * d
	}
}
