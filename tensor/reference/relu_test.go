package reference

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestReLUByHand(t *testing.T) {
	nan := math.NaN()
	y := ReLU([]float64{-2, -0.5, 0, 0.5, 3, nan})
	closeTo(t, "y", y, []float64{0, 0, 0, 0.5, 3, nan}, 0, 0)
	dx := ReLUBackward(y, []float64{1, 2, 3, 4, 5, 6})
	closeTo(t, "dx", dx, []float64{0, 0, 0, 4, 5, 6}, 0, 0)
}

func TestReLUBackwardMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// Keep every input at least 0.01 from the kink at 0, so that the
	// steps of the central difference stay on one side of it.
	x := uniform(rng, 40, -1, 1)
	for i, v := range x {
		if math.Abs(v) < 0.01 {
			x[i] = 0.5
		}
	}
	r := uniform(rng, len(x), -1, 1)
	f := func([]float64) float64 { return dot(ReLU(x), r) }
	dx := ReLUBackward(ReLU(x), r)
	closeTo(t, "dx", dx, numericGrad(f, x, bnGradStep), bnGradRTol, bnGradATol)
}
