package models

import (
	"github.com/pipecast/pipecast/tensor"
)

// SGD is torch.optim.SGD. Its per-parameter state, the momentum buffer,
// is the parameter's one state slot (Param.State) when momentum is on.
type SGD struct {
	tensor.SGDParams
	steps int
}

var _ Optimizer = (*SGD)(nil)

// NewSGD returns an optimizer with hyper-parameters p.
func NewSGD(p tensor.SGDParams) *SGD { return &SGD{SGDParams: p} }

// Name returns "sgd".
func (o *SGD) Name() string { return "sgd" }

// Slots returns 1 with momentum, the buffer, and 0 without.
func (o *SGD) Slots() int {
	if o.Momentum != 0 {
		return 1
	}
	return 0
}

// Steps counts the calls to Step and Update.
func (o *SGD) Steps() int { return o.steps }

// Step updates every parameter that has a gradient, skipping the others
// as torch skips a parameter whose .grad is None. With momentum, a
// parameter's buffer is allocated (in the Optimizer category) on its
// first update, which — as in torch — sets the buffer to the gradient
// rather than blending it into zeros.
func (o *SGD) Step(dev tensor.Device, params []NamedParam) {
	for _, s := range o.paramSteps(dev, params) {
		tensor.SGDStep(dev, s.W, s.G, s.Buf, o.SGDParams, s.First)
	}
	o.steps++
}

// Update is Step followed by zeroing the same gradients (ZeroGrads): on a
// device that is a tensor.SGDBatcher, one call that steps every
// parameter and zeroes its gradient in the same pass, with the same
// results.
func (o *SGD) Update(dev tensor.Device, params []NamedParam) {
	tensor.SGDSteps(dev, o.paramSteps(dev, params), o.SGDParams, true)
	o.steps++
}

// paramSteps lists the parameters that have a gradient, allocating the
// momentum buffers of those updated for the first time.
func (o *SGD) paramSteps(dev tensor.Device, params []NamedParam) []tensor.ParamStep {
	var out []tensor.ParamStep
	slots := o.Slots()
	for _, np := range params {
		p := np.Param
		if p.Grad == nil {
			continue
		}
		s := tensor.ParamStep{W: p.Value, G: p.Grad}
		if slots > 0 {
			var state []*tensor.Tensor
			state, s.First = stateFor(dev, p, slots)
			s.Buf = state[0]
		}
		out = append(out, s)
	}
	return out
}
