package reference

import (
	"math/rand/v2"
	"testing"
)

func TestLinearByHand(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6}  // 2 samples of 3 features
	w := []float64{1, 0, -1, 2, 1, 0} // 2 outputs
	got := Linear(x, 2, 3, w, 2, []float64{0.5, -1})
	convClose(t, "y", got, []float64{-1.5, 3, -1.5, 12}, 0, 0)
	got = Linear(x, 2, 3, w, 2, nil)
	convClose(t, "y without bias", got, []float64{-2, 4, -2, 13}, 0, 0)
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
			x, w := convRand(rng, tc.n*tc.in), convRand(rng, tc.out*tc.in)
			bias, r := convRand(rng, tc.out), convRand(rng, tc.n*tc.out)
			f := func() float64 { return convDot(Linear(x, tc.n, tc.in, w, tc.out, bias), r) }
			dx := LinearBackwardData(r, tc.n, tc.out, w, tc.in)
			convClose(t, "dx", dx, convNumericGrad(f, x, convGradStep), convGradRTol, convGradATol)
			dw, db := LinearBackwardParams(x, tc.n, tc.in, r, tc.out)
			convClose(t, "dw", dw, convNumericGrad(f, w, convGradStep), convGradRTol, convGradATol)
			convClose(t, "dbias", db, convNumericGrad(f, bias, convGradStep), convGradRTol, convGradATol)
		})
	}
}
