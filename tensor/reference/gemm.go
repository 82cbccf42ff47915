package reference

import "fmt"

// Gemm returns alpha·op(a)·op(b) + beta·c as a new row-major m×n slice.
// op(a) is m×k: a is stored m×k, or k×m when transA. op(b) is k×n: b is
// stored k×n, or n×k when transB. c is m×n, or nil for zeros; with beta 0
// it is not read, as in BLAS.
func Gemm(transA, transB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) []float64 {
	if m < 0 || n < 0 || k < 0 || len(a) != m*k || len(b) != k*n || (c != nil && len(c) != m*n) {
		panic(fmt.Sprintf("reference: gemm: m=%d n=%d k=%d with %d values in a, %d in b, %d in c",
			m, n, k, len(a), len(b), len(c)))
	}
	opA := func(i, l int) float64 {
		if transA {
			return a[l*m+i]
		}
		return a[i*k+l]
	}
	opB := func(l, j int) float64 {
		if transB {
			return b[j*k+l]
		}
		return b[l*n+j]
	}
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for l := 0; l < k; l++ {
				s += opA(i, l) * opB(l, j)
			}
			out[i*n+j] = alpha * s
			if beta != 0 && c != nil {
				out[i*n+j] += beta * c[i*n+j]
			}
		}
	}
	return out
}
