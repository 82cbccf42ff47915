package reference

import (
	"math/rand/v2"
	"testing"
)

func TestLinearByHand(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6}  // 2 samples of 3 features
	w := []float64{1, 0, -1, 2, 1, 0} // 2 outputs
	got := Linear(x, 2, 3, w, 2, []float64{0.5, -1})
	closeTo(t, "y", got, []float64{-1.5, 3, -1.5, 12}, 0, 0)
	got = Linear(x, 2, 3, w, 2, nil)
	closeTo(t, "y without bias", got, []float64{-2, 4, -2, 13}, 0, 0)
}

func TestLinearBackwardMatchesFiniteDifferences(t *testing.T) {
	tests := []struct {
		name       string
		n, in, out int
	}{
		{"batch 1", 1, 4, 3},
		{"batch 3", 3, 5, 2},
		{"one output", 2, 3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.n)))
			x, w := uniform(rng, tc.n*tc.in, -1, 1), uniform(rng, tc.out*tc.in, -1, 1)
			bias, r := uniform(rng, tc.out, -1, 1), uniform(rng, tc.n*tc.out, -1, 1)
			f := func([]float64) float64 { return dot(Linear(x, tc.n, tc.in, w, tc.out, bias), r) }
			dx := LinearBackwardData(r, tc.n, tc.out, w, tc.in)
			closeTo(t, "dx", dx, numericGrad(f, x, convGradStep), convGradRTol, convGradATol)
			dw, db := LinearBackwardParams(x, tc.n, tc.in, r, tc.out)
			closeTo(t, "dw", dw, numericGrad(f, w, convGradStep), convGradRTol, convGradATol)
			closeTo(t, "dbias", db, numericGrad(f, bias, convGradStep), convGradRTol, convGradATol)
		})
	}
}
