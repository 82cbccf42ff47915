//go:build cuda

package driver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// unitRoundoff is float32's unit roundoff u = 2⁻²⁴.
const unitRoundoff = 1.0 / (1 << 24)

// gemmSlack scales the rounding bound of a product: a float32 dot product
// of k terms, summed in any order, with or without FMA, is within
// γ_k·Σ|aᵢbᵢ| ≈ k·u·Σ|aᵢbᵢ| of the exact value (Higham, Accuracy and
// Stability of Numerical Algorithms, 2nd ed., §3.1). The elementwise
// tolerance is gemmSlack·(k+2)·u·(Σ|alpha·aᵢbᵢ| + |beta·c|): the +2
// counts the alpha and beta roundings, the 4 leaves room for split-k
// partial sums. TF32 (u = 2⁻¹¹) exceeds it on the TF32 probes of TestSgemm
// by 2–4×.
const gemmSlack = 4

// tf32Probe is a float32 that TF32's 10-bit mantissa cannot hold: TF32
// rounds it to 1, an error of 2⁻¹² in every term, which adds up.
const tf32Probe = 1 + 1.0/(1<<12)

// closeFloats fails, listing the first mismatches (where names an
// index), unless every got[i] is within slack·bound[i] of want[i]; a
// NaN or infinity where the reference is finite always fails.
func closeFloats(t *testing.T, what string, got []float32, want, bound []float64, slack float64, where func(int) string) {
	t.Helper()
	bad, worst := 0, 0.0
	for i := range want {
		diff := math.Abs(float64(got[i]) - want[i])
		tol := slack * bound[i]
		if diff <= tol {
			continue
		}
		if tol > 0 {
			worst = max(worst, diff/tol)
		}
		if bad < 5 {
			t.Errorf("%s: %s: got %.9g, want %.9g (difference %.3g, tolerance %.3g)", what, where(i), got[i], want[i], diff, tol)
		}
		bad++
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements out of tolerance, the worst %.3g× it", what, bad, len(want), worst)
	}
}

// hostGemm is the float64 reference of Sgemm on row-major operands with
// row strides lda, ldb, ldc; c's elements outside the m×n product (its
// guards) are copied through. bound is Σ|alpha·op(a)·op(b)| + |beta·c|
// per element. With beta 0, c is not read.
func hostGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, bound []float64) {
	want, bound = make([]float64, len(c)), make([]float64, len(c))
	for i, v := range c {
		want[i] = float64(v)
	}
	at := func(i, l int) float64 {
		if transA {
			return float64(a[l*lda+i])
		}
		return float64(a[i*lda+l])
	}
	bt := func(l, j int) float64 {
		if transB {
			return float64(b[j*ldb+l])
		}
		return float64(b[l*ldb+j])
	}
	for i := range m {
		for j := range n {
			var sum, abs float64
			for l := range k {
				p := float64(alpha) * at(i, l) * bt(l, j)
				sum += p
				abs += math.Abs(p)
			}
			if beta != 0 {
				bc := float64(beta) * float64(c[i*ldc+j])
				sum += bc
				abs += math.Abs(bc)
			}
			want[i*ldc+j], bound[i*ldc+j] = sum, abs*float64(k+2)*unitRoundoff
		}
	}
	return want, bound
}

func TestSgemm(t *testing.T) {
	d := open(t, 0)
	blas := d.BLAS()
	if blas == nil {
		t.Skip(libraryNote("cublas"))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name           string
		transA, transB bool
		m, n, k        int
		alpha, beta    float32
		fillA, fillB   float32 // every element, where not 0 (else random)
	}{
		{name: "NN", m: 37, n: 29, k: 45, alpha: 1.5, beta: 0.5},
		{name: "TN", transA: true, m: 37, n: 29, k: 45, alpha: 1.5, beta: 0.5},
		{name: "NT", transB: true, m: 37, n: 29, k: 45, alpha: 1.5, beta: 0.5},
		{name: "TT", transA: true, transB: true, m: 37, n: 29, k: 45, alpha: 1.5, beta: 0.5},
		{name: "NN/beta 0 overwrites NaN", m: 5, n: 11, k: 3, alpha: 1, beta: 0},
		{name: "TT/beta 0 overwrites NaN", transA: true, transB: true, m: 64, n: 96, k: 128, alpha: -1, beta: 0},
		{name: "NT/one row", transB: true, m: 1, n: 50, k: 10, alpha: 1, beta: 1},
		{name: "TN/one column", transA: true, m: 50, n: 1, k: 10, alpha: 1, beta: 1},
		{name: "NN/k 0 scales c", m: 5, n: 7, k: 0, alpha: 1, beta: 0.5},
		{name: "NN/large", m: 256, n: 192, k: 320, alpha: 1, beta: 0},
		{name: "NN/TF32 probe", m: 256, n: 256, k: 256, alpha: 1, beta: 0, fillA: tf32Probe, fillB: 1},
		{name: "TT/TF32 probe", transA: true, transB: true, m: 128, n: 128, k: 512, alpha: 1, beta: 0, fillA: 1, fillB: tf32Probe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ar, ac := tc.m, tc.k
			if tc.transA {
				ar, ac = tc.k, tc.m
			}
			br, bc := tc.k, tc.n
			if tc.transB {
				br, bc = tc.n, tc.k
			}
			// Row strides beyond the rows, and guards after c, catch
			// reads and writes out of place.
			lda, ldb, ldc := ac+3, bc+1, tc.n+2
			const tail = 17
			a, b := randoms(r, ar*lda), randoms(r, br*ldb)
			if tc.fillA != 0 {
				a = filled(ar*lda, tc.fillA)
			}
			if tc.fillB != 0 {
				b = filled(br*ldb, tc.fillB)
			}
			c := randoms(r, tc.m*ldc+tail)
			for i := range c {
				if i >= tc.m*ldc || i%ldc >= tc.n {
					c[i] = guard
				} else if tc.beta == 0 {
					c[i] = float32(math.NaN())
				}
			}
			want, bound := hostGemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
			pa, pb, pc := put(t, d, a), put(t, d, b), put(t, d, c)
			if err := blas.Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, pa, lda, pb, ldb, tc.beta, pc, ldc); err != nil {
				t.Fatalf("Sgemm: %v", err)
			}
			got := get(t, d, pc, len(c))
			what := fmt.Sprintf("Sgemm transA=%t transB=%t m=%d n=%d k=%d alpha=%g beta=%g lda=%d ldb=%d ldc=%d",
				tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, tc.beta, lda, ldb, ldc)
			if tc.fillA != 0 && tc.m > 0 && tc.n > 0 && float64(got[0]) == float64(tc.k) {
				t.Errorf("%s: c[0][0] = %d exactly: 1+2⁻¹² was rounded to 1, as TF32 does", what, tc.k)
			}
			closeFloats(t, what, got, want, bound, gemmSlack, func(i int) string {
				if i >= tc.m*ldc || i%ldc >= tc.n {
					return fmt.Sprintf("guard at element %d (row %d, column %d)", i, i/ldc, i%ldc)
				}
				return fmt.Sprintf("c[%d][%d]", i/ldc, i%ldc)
			})
		})
	}
}

func TestSgemmRejectsNegativeSizes(t *testing.T) {
	d := open(t, 0)
	blas := d.BLAS()
	if blas == nil {
		t.Skip(libraryNote("cublas"))
	}
	if err := blas.Sgemm(false, false, -1, 2, 2, 1, 0, 2, 0, 2, 0, 0, 2); err == nil {
		t.Errorf("Sgemm with m = -1: no error")
	}
	// Nothing to compute: no call, no error, even on null pointers.
	if err := blas.Sgemm(false, false, 0, 3, 3, 1, 0, 3, 0, 3, 0, 0, 3); err != nil {
		t.Errorf("Sgemm with m = 0: %v", err)
	}
}
