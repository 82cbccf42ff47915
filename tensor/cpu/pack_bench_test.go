package cpu

import "testing"

// BenchmarkPack times packing one gemmMC×gemmKC block of A and one
// gemmKC×144 panel of B, both orientations, with this machine's kernel's
// packers (bytes/s of the matrix packed).
func BenchmarkPack(b *testing.B) {
	const m, k, n = gemmMC, gemmKC, 144
	src := make([]float32, max(m, n)*k)
	dst := make([]float32, roundUp(max(m, n), gemmNRMax)*k)
	pA, pB := packA, packB
	if kernel.packA != nil {
		pA, pB = kernel.packA, kernel.packB
	}
	for _, trans := range []bool{false, true} {
		name := "N"
		if trans {
			name = "T"
		}
		lda, ldb := k, n
		if trans {
			lda, ldb = m, k
		}
		b.Run("A"+name, func(b *testing.B) {
			b.SetBytes(m * k * 4)
			for b.Loop() {
				pA(dst, trans, src, lda, 0, 0, m, k, kernel.mr, 1)
			}
		})
		b.Run("B"+name, func(b *testing.B) {
			b.SetBytes(n * k * 4)
			for b.Loop() {
				pB(dst, trans, src, ldb, 0, 0, k, n, kernel.nr)
			}
		})
	}
}

// BenchmarkKernel times this machine's micro-kernel alone on one
// gemmKC-deep block whose operands stay in L1: its peak.
func BenchmarkKernel(b *testing.B) {
	a := make([]float32, gemmKC*kernel.mr)
	bp := make([]float32, gemmKC*kernel.nr)
	c := make([]float32, kernel.mr*kernel.nr)
	for b.Loop() {
		kernel.fn(gemmKC, a, bp, c, kernel.nr, true)
	}
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(2*float64(gemmKC*kernel.mr*kernel.nr)*float64(b.N)/s/1e9, "GFLOP/s")
	}
}
