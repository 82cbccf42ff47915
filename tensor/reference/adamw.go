package reference

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// AdamWStep applies step number t (1 on the first) of torch.optim.AdamW
// (torch 1.13, amsgrad off; Loshchilov and Hutter, "Decoupled Weight
// Decay Regularization", ICLR 2019, Algorithm 2) to w in place, with
// gradient g and the moment estimates m and v (zeros before the first
// step) updated in place:
//
//	w = w·(1 − LR·WeightDecay)
//	m = β1·m + (1 − β1)·g
//	v = β2·v + (1 − β2)·g²
//	w = w − LR/(1 − β1^t) · m / (√v / √(1 − β2^t) + Eps)
func AdamWStep(w, g, m, v []float64, p tensor.AdamWParams, t int) {
	const op = "adamw step"
	lensAgree(op, len(w), len(g))
	lensAgree(op, len(w), len(m))
	lensAgree(op, len(w), len(v))
	if t < 1 {
		panic(fmt.Sprintf("reference: %s: step %d, want at least 1", op, t))
	}
	lr, b1, b2 := float64(p.LR), float64(p.Beta1), float64(p.Beta2)
	eps, decay := float64(p.Eps), float64(p.WeightDecay)
	bc1 := 1 - math.Pow(b1, float64(t))
	bc2 := 1 - math.Pow(b2, float64(t))
	for i := range w {
		w[i] *= 1 - lr*decay
		m[i] = b1*m[i] + (1-b1)*g[i]
		v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
		w[i] -= lr / bc1 * m[i] / (math.Sqrt(v[i])/math.Sqrt(bc2) + eps)
	}
}
