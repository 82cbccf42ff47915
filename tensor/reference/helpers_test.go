package reference

import (
	"math"
	"math/rand/v2"
	"testing"
)

// numericGrad returns the central finite-difference gradient of f at x,
// (f(x+h) − f(x−h)) / 2h per coordinate, perturbing x in place.
func numericGrad(f func([]float64) float64, x []float64, h float64) []float64 {
	g := make([]float64, len(x))
	for i := range x {
		old := x[i]
		x[i] = old + h
		fp := f(x)
		x[i] = old - h
		fm := f(x)
		x[i] = old
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

// dot returns Σ a[i]·b[i]: ⟨y(x), r⟩ is the scalar whose gradient the
// backward of r computes.
func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// uniform returns n values uniform in [lo, hi).
func uniform(rng *rand.Rand, n int, lo, hi float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = lo + (hi-lo)*rng.Float64()
	}
	return s
}

// closeTo fails the test unless every got[i] is within atol +
// rtol·|want[i]| of want[i]; a NaN must be matched by a NaN.
func closeTo(t *testing.T, what string, got, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.IsNaN(got[i]) && math.IsNaN(want[i]) {
			continue
		}
		if !(math.Abs(got[i]-want[i]) <= atol+rtol*math.Abs(want[i])) {
			t.Errorf("%s[%d]: got %.12g, want %.12g", what, i, got[i], want[i])
			return
		}
	}
}
