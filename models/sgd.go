package models

import (
	"github.com/pipecast/pipecast/tensor"
)

// SGD is torch.optim.SGD. Its per-parameter state, the momentum buffer,
// lives in each Param (Param.Momentum) so that it moves and is freed with
// the parameter; SGD holds the hyper-parameters and counts its steps.
type SGD struct {
	tensor.SGDParams
	// Steps counts the calls to Step.
	Steps int
}

// NewSGD returns an optimizer with hyper-parameters p.
func NewSGD(p tensor.SGDParams) *SGD { return &SGD{SGDParams: p} }

// Step updates every parameter that has a gradient, skipping the others
// as torch skips a parameter whose .grad is None. With momentum, a
// parameter's buffer is allocated (in the Optimizer category) on its
// first update, which — as in torch — sets the buffer to the gradient
// rather than blending it into zeros.
func (o *SGD) Step(dev tensor.Device, params []NamedParam) {
	for _, np := range params {
		p := np.Param
		if p.Grad == nil {
			continue
		}
		if o.Momentum == 0 {
			dev.SGDStep(p.Value, p.Grad, nil, o.SGDParams, false)
			continue
		}
		first := p.Momentum == nil
		if first {
			p.Momentum = dev.Alloc(tensor.Optimizer, p.Value.Shape()...)
		}
		dev.SGDStep(p.Value, p.Grad, p.Momentum, o.SGDParams, first)
	}
	o.Steps++
}
