package tensor

import (
	"fmt"
	"math"
)

// AdamWParams are torch.optim.AdamW's hyper-parameters; amsgrad and
// maximize are off.
type AdamWParams struct {
	LR float32
	// Beta1 and Beta2 are torch's betas: the decay rates of the first
	// and second moment estimates.
	Beta1, Beta2 float32
	Eps          float32
	WeightDecay  float32
}

// DefaultAdamW returns torch.optim.AdamW's defaults: lr 1e-3, betas
// (0.9, 0.999), eps 1e-8, weight decay 1e-2.
func DefaultAdamW() AdamWParams {
	return AdamWParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2}
}

// AdamWParamStep is one parameter's part of an AdamW step: its value,
// gradient, moment estimates (torch's exp_avg and exp_avg_sq, zeros
// before the parameter's first step) and Step, the parameter's step
// number counting this one (1 on the first), which the bias corrections
// raise the betas to: torch keeps it per parameter, in state["step"].
type AdamWParamStep struct {
	W, G, ExpAvg, ExpAvgSq *Tensor
	Step                   int
}

// Check panics unless the step's tensors share one shape and Step is at
// least 1: the checks every AdamW kernel makes.
func (s AdamWParamStep) Check() {
	const op = "adamw step"
	SameShape(op, s.W, s.G, s.ExpAvg, s.ExpAvgSq)
	if s.Step < 1 {
		panic(fmt.Sprintf("tensor: %s: step %d, want at least 1 (the first step is 1)", op, s.Step))
	}
}

// AdamWSteps does one step of torch.optim.AdamW (see AdamWStepIn) on
// every entry of steps, then with zeroGrads zeroes each gradient —
// torch's optimizer step followed by zero_grad(set_to_none=False): with
// dev's kernel where dev is an AdamWStepper, else on host copies of the
// tensors, in AdamWStepIn's loop, with the same results. Adam needs a
// square root and a division, which Kernels cannot compose. A symbolic
// device's tensors hold no values, and there the fallback only checks
// the arguments.
func AdamWSteps(dev Device, steps []AdamWParamStep, p AdamWParams, zeroGrads bool) {
	if s, ok := dev.(AdamWStepper); ok {
		s.AdamWSteps(steps, p, zeroGrads)
		return
	}
	for _, s := range steps {
		s.Check()
	}
	if IsSymbolic(dev) {
		return
	}
	for _, s := range steps {
		n := s.W.Len()
		w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		dev.Download(w, s.W)
		dev.Download(g, s.G)
		dev.Download(m, s.ExpAvg)
		dev.Download(v, s.ExpAvgSq)
		AdamWStepIn(w, g, m, v, p, s.Step)
		dev.Upload(s.W, w)
		dev.Upload(s.ExpAvg, m)
		dev.Upload(s.ExpAvgSq, v)
		if zeroGrads {
			dev.Fill(s.G, 0)
		}
	}
}

// AdamWStepIn applies step number step (1 on the first) of
// torch.optim.AdamW to the values w with gradients g, updating the moment
// estimates m and v in place, in float32 with the operations of torch
// 1.13's _single_tensor_adamw in their order. With t = step, and the
// scalars worked out in float64 as torch's Python does:
//
//	w = w·(1 − LR·WeightDecay)
//	m = m·β1 + (1 − β1)·g
//	v = v·β2 + (1 − β2)·g·g
//	denom = √v / √(1 − β2^t) + Eps
//	w = w + (−LR/(1 − β1^t))·m / denom
//
// It is the fallback's loop and the CPU kernel's, which runs it on
// ranges of the values.
func AdamWStepIn(w, g, m, v []float32, p AdamWParams, step int) {
	lr, beta1, beta2 := float64(p.LR), float64(p.Beta1), float64(p.Beta2)
	t := float64(step)
	// torch's scalars: Python floats, each rounded to float32 where a
	// float32 tensor operation takes it.
	decay := float32(1 - lr*float64(p.WeightDecay))
	keep1, keep2 := float32(1-beta1), float32(1-beta2)
	negStepSize := float32(-(lr / (1 - math.Pow(beta1, t))))
	bc2Sqrt := float32(math.Sqrt(1 - math.Pow(beta2, t)))
	b1, b2, eps := p.Beta1, p.Beta2, p.Eps
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	for i, wi := range w {
		gi := g[i]
		wi *= decay
		mi := m[i]*b1 + keep1*gi
		vi := v[i]*b2 + keep2*gi*gi
		m[i], v[i] = mi, vi
		denom := float32(math.Sqrt(float64(vi)))/bc2Sqrt + eps
		// addcdiv: self + value·t1 / t2, the product first, as ATen's
		// CPU kernel has it.
		w[i] = wi + negStepSize*mi/denom
	}
}
