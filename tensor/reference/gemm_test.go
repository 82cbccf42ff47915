package reference

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestGemmByHand(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5, 6}    // 2×3
	b := []float64{7, 8, 9, 10, 11, 12} // 3×2
	c := []float64{1, -1, 2, -2}
	// a·b = [[58, 64], [139, 154]].
	got := Gemm(false, false, 2, 2, 3, 2, a, b, 0.5, c)
	closeTo(t, "2·a·b + 0.5·c", got, []float64{116.5, 127.5, 279, 307}, 0, 0)
	got = Gemm(false, false, 2, 2, 3, 1, a, b, 0, []float64{math.NaN(), 0, 0, 0})
	closeTo(t, "beta 0 ignores c", got, []float64{58, 64, 139, 154}, 0, 0)
	got = Gemm(false, false, 2, 2, 3, 1, a, b, 1, nil)
	closeTo(t, "nil c", got, []float64{58, 64, 139, 154}, 0, 0)
}

// Every transpose case must equal the plain product of explicitly
// transposed operands.
func TestGemmTransposes(t *testing.T) {
	const m, n, k = 3, 4, 5
	rng := rand.New(rand.NewPCG(5, 6))
	a, b, c := uniform(rng, m*k, -1, 1), uniform(rng, k*n, -1, 1), uniform(rng, m*n, -1, 1)
	want := Gemm(false, false, m, n, k, 1.5, a, b, -0.5, c)
	at, bt := gemmTranspose(a, m, k), gemmTranspose(b, k, n)
	tests := []struct {
		name           string
		transA, transB bool
		a, b           []float64
	}{
		{"NN", false, false, a, b},
		{"TN", true, false, at, b},
		{"NT", false, true, a, bt},
		{"TT", true, true, at, bt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Gemm(tc.transA, tc.transB, m, n, k, 1.5, tc.a, tc.b, -0.5, c)
			closeTo(t, "c", got, want, 1e-15, 1e-15)
		})
	}
}

// gemmTranspose returns the cols×rows transpose of a rows×cols matrix.
func gemmTranspose(a []float64, rows, cols int) []float64 {
	out := make([]float64, len(a))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[j*rows+i] = a[i*cols+j]
		}
	}
	return out
}
