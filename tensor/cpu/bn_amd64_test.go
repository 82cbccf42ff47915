//go:build amd64 && !noasm

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// withBNSIMD runs f with the batch-norm helpers' runs of width (0: the Go
// loops alone).
func withBNSIMD(width int, f func()) {
	old := bnSIMD
	bnSIMD = width
	defer func() { bnSIMD = old }()
	f()
}

// withoutBNSIMD runs f with the batch-norm helpers on their Go loops.
func withoutBNSIMD(f func()) { withBNSIMD(0, f) }

// simdWidths returns the assembly widths the CPU runs: 16 with AVX-512,
// 8 with AVX2 and FMA.
func simdWidths() []int {
	var out []int
	if bnWidth("") == 16 {
		out = append(out, 16)
	}
	if bnWidth("avx2") == 8 {
		out = append(out, 8)
	}
	return out
}

// TestBNSIMDMatchesGo checks the AVX-512 and AVX2 batch-norm loops against
// the Go loops over lengths around every multiple of 8 and 16: the sums
// agree to float64 rounding (they add in another order), the element-wise
// results bit for bit (the same float32 operations in the same order).
func TestBNSIMDMatchesGo(t *testing.T) {
	widths := simdWidths()
	if len(widths) == 0 {
		t.Skip("the CPU has neither AVX-512 nor AVX2 with FMA")
	}
	for _, w := range widths {
		withBNSIMD(w, func() { checkBNSIMD(t, w) })
	}
}

// checkBNSIMD is TestBNSIMDMatchesGo at bnSIMD's current width w.
func checkBNSIMD(t *testing.T, w int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64()*3 + 1)
		}
		return v
	}
	close := func(got, want, scale float64) bool { return math.Abs(got-want) <= 1e-12*scale }
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 47, 64, 100, 1024, 1031} {
		x, dy := vals(n), vals(n)
		const k, mean = 0.75, -0.25
		s1, s2 := bnShiftedSum(x, k)
		g1, g2 := bnGradientSum(x, dy, mean)
		var w1, w2, h1, h2 float64
		withoutBNSIMD(func() {
			w1, w2 = bnShiftedSum(x, k)
			h1, h2 = bnGradientSum(x, dy, mean)
		})
		var scale float64
		for i := range x {
			scale += math.Abs(float64(x[i])-k)*(1+math.Abs(float64(x[i])-k)) + math.Abs(float64(dy[i]))*(1+math.Abs(float64(x[i])-mean))
		}
		if !close(s1, w1, scale) || !close(s2, w2, scale) || !close(g1, h1, scale) || !close(g2, h2, scale) {
			t.Errorf("width %d n=%d: sums %v %v %v %v, Go loops %v %v %v %v", w, n, s1, s2, g1, g2, w1, w2, h1, h2)
		}

		// Element-wise, over two channels of n values each.
		xx, dd := vals(2*n), vals(2*n)
		mm, aa, bb := []float32{0.5, -1}, []float32{1.5, 0.25}, []float32{-2, 3}
		pp, qq, rr := []float32{0.3, -0.7}, []float32{1.1, 0.9}, []float32{0.01, -0.02}
		y, dx := make([]float32, 2*n), make([]float32, 2*n)
		bnAffine(xx, y, n, mm, aa, bb)
		bnGradient(xx, dd, dx, n, mm, pp, qq, rr)
		wy, wdx := make([]float32, 2*n), make([]float32, 2*n)
		withoutBNSIMD(func() {
			bnAffine(xx, wy, n, mm, aa, bb)
			bnGradient(xx, dd, wdx, n, mm, pp, qq, rr)
		})
		for i := range y {
			if math.Float32bits(y[i]) != math.Float32bits(wy[i]) || math.Float32bits(dx[i]) != math.Float32bits(wdx[i]) {
				t.Fatalf("width %d n=%d element %d: affine %v gradient %v, Go loops %v %v", w, n, i, y[i], dx[i], wy[i], wdx[i])
			}
		}
	}
}
