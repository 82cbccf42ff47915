package models

import (
	"github.com/pipecast/pipecast/tensor"
)

// AdamW is torch.optim.AdamW (amsgrad off): Adam with decoupled weight
// decay (Loshchilov and Hutter, "Decoupled Weight Decay Regularization",
// ICLR 2019). Its per-parameter state, the moment estimates exp_avg and
// exp_avg_sq, is the parameter's two state slots (Param.State), and it
// counts each parameter's steps for the bias corrections, as torch keeps
// state["step"] per parameter: a parameter that joins late (it had no
// gradient at first) starts its count then, and a device that updates
// its stages in turn (interleaved) counts each stage's once a step.
type AdamW struct {
	tensor.AdamWParams
	steps int
	// paramSteps counts each parameter's updates, from its first: the
	// one whose state stateFor allocated.
	paramSteps map[*Param]int
}

var _ Optimizer = (*AdamW)(nil)

// NewAdamW returns an optimizer with hyper-parameters p.
func NewAdamW(p tensor.AdamWParams) *AdamW {
	return &AdamW{AdamWParams: p, paramSteps: map[*Param]int{}}
}

// Name returns "adamw".
func (o *AdamW) Name() string { return "adamw" }

// Slots returns 2: exp_avg and exp_avg_sq.
func (o *AdamW) Slots() int { return 2 }

// Steps counts the calls to Step and Update.
func (o *AdamW) Steps() int { return o.steps }

// Step updates every parameter that has a gradient, skipping the others
// as torch skips a parameter whose .grad is None. A parameter's moments
// are allocated, zeroed in the Optimizer category, on its first update.
func (o *AdamW) Step(dev tensor.Device, params []NamedParam) {
	tensor.AdamWSteps(dev, o.stepsOf(dev, params), o.AdamWParams, false)
	o.steps++
}

// Update is Step followed by zeroing the same gradients (ZeroGrads), in
// one call that on a device with the kernel (tensor.AdamWStepper) steps
// every parameter and zeroes its gradient in the same pass, with the
// same results.
func (o *AdamW) Update(dev tensor.Device, params []NamedParam) {
	tensor.AdamWSteps(dev, o.stepsOf(dev, params), o.AdamWParams, true)
	o.steps++
}

// stepsOf lists the parameters that have a gradient with their step
// numbers, allocating the moments of those updated for the first time. A
// tied parameter, listed once under each of its names, is listed once.
func (o *AdamW) stepsOf(dev tensor.Device, params []NamedParam) []tensor.AdamWParamStep {
	var out []tensor.AdamWParamStep
	seen := make(map[*Param]bool, len(params))
	for _, np := range params {
		p := np.Param
		if p.Grad == nil || seen[p] {
			continue
		}
		seen[p] = true
		state, first := stateFor(dev, p, o.Slots())
		if first {
			o.paramSteps[p] = 0
		}
		o.paramSteps[p]++
		out = append(out, tensor.AdamWParamStep{W: p.Value, G: p.Grad, ExpAvg: state[0], ExpAvgSq: state[1], Step: o.paramSteps[p]})
	}
	return out
}
