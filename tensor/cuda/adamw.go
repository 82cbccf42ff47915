package cuda

import (
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// AdamWSteps implements tensor.AdamWStepper: one pc_adamw per parameter,
// which updates its value and moments and, with zeroGrads, zeroes its
// gradient in the same pass. Every entry is checked before any is
// stepped, so that a bad one panics with nothing changed. The kernel does
// tensor.AdamWStepIn's float32 operations in their order, without fused
// multiply-adds, so the results are AdamWStepIn's bit for bit.
func (d *Device) AdamWSteps(steps []tensor.AdamWParamStep, p tensor.AdamWParams, zeroGrads bool) {
	const op = "adamw step"
	for _, s := range steps {
		s.Check()
		n := s.W.Len()
		for _, t := range []*tensor.Tensor{s.W, s.G, s.ExpAvg, s.ExpAvgSq} {
			d.ptr(op, t, n)
		}
	}
	for _, s := range steps {
		n := s.W.Len()
		c := adamwScalarsOf(p, s.Step)
		d.launchAdamw(gridStride(int64(n)), block1D, PtrOf(s.W), PtrOf(s.G), PtrOf(s.ExpAvg), PtrOf(s.ExpAvgSq), int64(n),
			c.decay, p.Beta1, p.Beta2, c.keep1, c.keep2, c.negStepSize, c.bc2Sqrt, p.Eps, flag(zeroGrads))
	}
}

// adamwScalars are the per-step scalars of torch 1.13's
// _single_tensor_adamw, Python floats rounded to float32 where a float32
// tensor operation takes them: those tensor.AdamWStepIn works out before
// its loop, in the same float64 expressions (TestAdamWMatchesStepIn
// holds the two to the same bits).
type adamwScalars struct {
	decay, keep1, keep2, negStepSize, bc2Sqrt float32
}

func adamwScalarsOf(p tensor.AdamWParams, step int) adamwScalars {
	lr, beta1, beta2 := float64(p.LR), float64(p.Beta1), float64(p.Beta2)
	t := float64(step)
	return adamwScalars{
		decay:       float32(1 - lr*float64(p.WeightDecay)),
		keep1:       float32(1 - beta1),
		keep2:       float32(1 - beta2),
		negStepSize: float32(-(lr / (1 - math.Pow(beta1, t)))),
		bc2Sqrt:     float32(math.Sqrt(1 - math.Pow(beta2, t))),
	}
}
