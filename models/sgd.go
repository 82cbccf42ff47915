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
	for _, s := range o.steps(dev, params) {
		tensor.SGDStep(dev, s.W, s.G, s.Buf, o.SGDParams, s.First)
	}
	o.Steps++
}

// Update is Step followed by zeroing the same gradients (ZeroGrads): on a
// device that is a tensor.SGDBatcher, one call that steps every
// parameter and zeroes its gradient in the same pass, with the same
// results.
func (o *SGD) Update(dev tensor.Device, params []NamedParam) {
	tensor.SGDSteps(dev, o.steps(dev, params), o.SGDParams, true)
	o.Steps++
}

// steps lists the parameters that have a gradient, allocating the
// momentum buffers of those updated for the first time.
func (o *SGD) steps(dev tensor.Device, params []NamedParam) []tensor.ParamStep {
	var out []tensor.ParamStep
	for _, np := range params {
		p := np.Param
		if p.Grad == nil {
			continue
		}
		s := tensor.ParamStep{W: p.Value, G: p.Grad}
		if o.Momentum != 0 {
			s.First = p.Momentum == nil
			if s.First {
				p.Momentum = dev.Alloc(tensor.Optimizer, p.Value.Shape()...)
			}
			s.Buf = p.Momentum
		}
		out = append(out, s)
	}
	return out
}
