//go:build cuda

package driver

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSgemmStridedBatched checks cuBLAS's strided batch as attention
// calls it (tensor/cuda's attention.go): each product of the batch
// against hostGemm on its own slices, with strides larger than a
// product's operands and a leading dimension larger than a row, so that
// a product read or written at another product's place fails.
func TestSgemmStridedBatched(t *testing.T) {
	d := open(t, 0)
	blas := d.BLAS()
	if blas == nil {
		t.Skip(libraryNote("cublas"))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name           string
		transA, transB bool
		m, n, k, batch int
		alpha, beta    float32
	}{
		{name: "scores: NT", transB: true, m: 17, n: 17, k: 11, batch: 3, alpha: 0.25, beta: 0},
		{name: "context: NN", m: 17, n: 11, k: 17, batch: 3, alpha: 1, beta: 0},
		{name: "key gradient: TN accumulating", transA: true, m: 17, n: 11, k: 17, batch: 2, alpha: 0.5, beta: 1},
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
			lda, ldb, ldc := ac+2, bc+3, tc.n+1
			strideA, strideB, strideC := ar*lda+5, br*ldb+7, tc.m*ldc+9
			a, b := randoms(r, strideA*tc.batch), randoms(r, strideB*tc.batch)
			c := randoms(r, strideC*tc.batch)
			for i := range c {
				if i%strideC >= tc.m*ldc || i%strideC%ldc >= tc.n {
					c[i] = guard
				}
			}
			pa, pb, pc := put(t, d, a), put(t, d, b), put(t, d, c)
			if err := blas.SgemmStridedBatched(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, pa, lda, int64(strideA),
				pb, ldb, int64(strideB), tc.beta, pc, ldc, int64(strideC), tc.batch); err != nil {
				t.Fatalf("SgemmStridedBatched: %v", err)
			}
			got := get(t, d, pc, len(c))
			for z := range tc.batch {
				cz := c[z*strideC : (z+1)*strideC]
				want, bound := hostGemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a[z*strideA:], lda,
					b[z*strideB:], ldb, tc.beta, cz, ldc)
				closeFloats(t, fmt.Sprintf("%s: product %d", tc.name, z), got[z*strideC:(z+1)*strideC], want, bound, gemmSlack,
					func(i int) string { return fmt.Sprintf("element %d (row %d, column %d)", i, i/ldc, i%ldc) })
			}
		})
	}
}
