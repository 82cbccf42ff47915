//go:build amd64 && !noasm

package cpu

// The narrow and strided micro-kernels (gemm_amd64.s). A product of few
// columns (a convolution on 1×1 maps: as many columns as samples) fills
// a fraction of a 32-column sliver of B, and its A operand, the layer's
// weights, serves one sliver only: packing A then costs as much as the
// multiply-adds. The narrow kernels (12×16 for avx512, 6×8 for avx2) hold
// one vector register per row of C; the strided ones read a transposed A
// where it lies, step p of a sliver lda values after step p−1, which is
// the packed layout but for the step.

//go:noescape
func kernAVX512N16(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX512N16x8(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX512N16x4(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX2N8(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX2N8x4(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX2N8x2(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX512S(kc int, a *float32, lda int, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX512N16S(kc int, a *float32, lda int, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX2S(kc int, a *float32, lda int, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX2N8S(kc int, a *float32, lda int, b, c *float32, ldc int, acc bool)

var (
	gemmKernelAVX512N16 = gemmKernel{name: "avx512", mr: 12, nr: 16, fn: kern512n16, partial: partialAVX512N16,
		packA: packA512, packB: packB256, strided: kern512n16S}
	gemmKernelAVX2N8 = gemmKernel{name: "avx2", mr: 6, nr: 8, fn: kern256n8, partial: partialAVX2N8,
		packA: packA256, packB: packB256, strided: kern256n8S}
)

func kern512n16(kc int, a, b, c []float32, ldc int, acc bool) {
	_, _, _ = a[kc*12-1], b[kc*16-1], c[11*ldc+15]
	kernAVX512N16(kc, &a[0], &b[0], &c[0], ldc, acc)
}

// partialAVX512N16 is partialAVX512 for the 16-column kernel.
func partialAVX512N16(mb int) (int, func(kc int, a, b, c []float32, ldc int, acc bool)) {
	switch {
	case mb <= 4:
		return 4, func(kc int, a, b, c []float32, ldc int, acc bool) {
			_, _, _ = a[kc*12-1], b[kc*16-1], c[3*ldc+15]
			kernAVX512N16x4(kc, &a[0], &b[0], &c[0], ldc, acc)
		}
	case mb <= 8:
		return 8, func(kc int, a, b, c []float32, ldc int, acc bool) {
			_, _, _ = a[kc*12-1], b[kc*16-1], c[7*ldc+15]
			kernAVX512N16x8(kc, &a[0], &b[0], &c[0], ldc, acc)
		}
	}
	return 12, kern512n16
}

func kern256n8(kc int, a, b, c []float32, ldc int, acc bool) {
	_, _, _ = a[kc*6-1], b[kc*8-1], c[5*ldc+7]
	kernAVX2N8(kc, &a[0], &b[0], &c[0], ldc, acc)
}

// partialAVX2N8 is partialAVX2 for the 8-column kernel.
func partialAVX2N8(mb int) (int, func(kc int, a, b, c []float32, ldc int, acc bool)) {
	switch {
	case mb <= 2:
		return 2, func(kc int, a, b, c []float32, ldc int, acc bool) {
			_, _, _ = a[kc*6-1], b[kc*8-1], c[1*ldc+7]
			kernAVX2N8x2(kc, &a[0], &b[0], &c[0], ldc, acc)
		}
	case mb <= 4:
		return 4, func(kc int, a, b, c []float32, ldc int, acc bool) {
			_, _, _ = a[kc*6-1], b[kc*8-1], c[3*ldc+7]
			kernAVX2N8x4(kc, &a[0], &b[0], &c[0], ldc, acc)
		}
	}
	return 6, kern256n8
}

func kern512S(kc int, a []float32, lda int, b, c []float32, ldc int, acc bool) {
	_, _, _ = a[(kc-1)*lda+11], b[kc*32-1], c[11*ldc+31]
	kernAVX512S(kc, &a[0], lda, &b[0], &c[0], ldc, acc)
}

func kern512n16S(kc int, a []float32, lda int, b, c []float32, ldc int, acc bool) {
	_, _, _ = a[(kc-1)*lda+11], b[kc*16-1], c[11*ldc+15]
	kernAVX512N16S(kc, &a[0], lda, &b[0], &c[0], ldc, acc)
}

func kern256S(kc int, a []float32, lda int, b, c []float32, ldc int, acc bool) {
	_, _, _ = a[(kc-1)*lda+5], b[kc*16-1], c[5*ldc+15]
	kernAVX2S(kc, &a[0], lda, &b[0], &c[0], ldc, acc)
}

func kern256n8S(kc int, a []float32, lda int, b, c []float32, ldc int, acc bool) {
	_, _, _ = a[(kc-1)*lda+5], b[kc*8-1], c[5*ldc+7]
	kernAVX2N8S(kc, &a[0], lda, &b[0], &c[0], ldc, acc)
}
