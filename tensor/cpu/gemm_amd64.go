//go:build amd64 && !noasm

package cpu

import (
	"os"

	"golang.org/x/sys/cpu"
)

//go:generate go run gen_gemm_amd64.go

// The amd64 micro-kernels (gemm_amd64.s, written by gen_gemm_amd64.go) keep an MR×NR block of C in
// vector registers and, per step, load one row of the B sliver and
// broadcast each of the MR values of the A sliver: avx512 holds 12×32 in
// 24 of the 32 ZMM registers, avx2 6×16 in 12 of the 16 YMM registers.

//go:noescape
func kernAVX512(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX512x8(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX512x4(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX2(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX2x4(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func kernAVX2x2(kc int, a, b, c *float32, ldc int, acc bool)

//go:noescape
func packA12N(kc int, src *float32, idx *int32, dst *float32, mask int, alpha float32)

//go:noescape
func packA12T(kc int, src *float32, lda int, dst *float32, mask int, alpha float32)

//go:noescape
func packB32N(kc int, src *float32, ldb int, dst *float32, mask int)

//go:noescape
func packB32T(kc int, src *float32, idx *int32, dst *float32, mask int, half int)

//go:noescape
func packA12N8(kc8 int, src *float32, lda int, dst *float32, alpha float32)

//go:noescape
func packBT8(kc8 int, src *float32, ldb int, dst *float32, groups int)

//go:noescape
func packA6N(kc8 int, src *float32, lda int, dst *float32, alpha float32)

//go:noescape
func packA6T(kc int, src *float32, lda int, dst *float32, alpha float32)

// gatherMaxLD bounds the leading dimensions the gathering packers take:
// their offsets are 32-bit.
const gatherMaxLD = 1 << 26

var (
	gemmKernelAVX512 = gemmKernel{name: "avx512", mr: 12, nr: 32, fn: kern512, partial: partialAVX512, packA: packA512, packB: packB512,
		strided: kern512S, narrow: &gemmKernelAVX512N16}
	gemmKernelAVX2 = gemmKernel{name: "avx2", mr: 6, nr: 16, fn: kern256, partial: partialAVX2, packA: packA256, packB: packB256,
		strided: kern256S, narrow: &gemmKernelAVX2N8}
)

// gemmKernels lists the micro-kernels this CPU can run, fastest first.
func gemmKernels() []gemmKernel {
	var ks []gemmKernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, gemmKernelAVX512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, gemmKernelAVX2)
	}
	return append(ks, gemmKernelGo)
}

// selectKernel returns the fastest micro-kernel the CPU runs, or the one
// PIPECAST_GEMM_KERNEL names (avx512, avx2, go) when the CPU runs it.
// The variable chooses the batch-norm and element-wise loops' width too
// (bnSIMD, elemSIMD), so that avx2 runs what an AVX2-only CPU runs.
func selectKernel() gemmKernel {
	ks := gemmKernels()
	if want := os.Getenv("PIPECAST_GEMM_KERNEL"); want != "" {
		for _, k := range ks {
			if k.name == want {
				return k
			}
		}
	}
	return ks[0]
}

// packA512 is packA for 12-row slivers with AVX-512 loads and gathers,
// but for full slivers of rows along the inner dimension, which move 8
// steps at a time through register transposes (packA12N8): gathers are
// slow on AMD's cores, and the transposes packed a 144×256 block 4.6
// times as fast on a Zen CPU.
func packA512(dst []float32, transA bool, a []float32, lda, ic, pc, mc, kc, mr int, alpha float32) {
	if lda >= gatherMaxLD {
		packA(dst, transA, a, lda, ic, pc, mc, kc, mr, alpha)
		return
	}
	var idx [16]int32
	for r := range 12 {
		idx[r] = int32(r * lda)
	}
	for s := 0; s*12 < mc; s++ {
		rows := min(12, mc-s*12)
		i0 := ic + s*12
		out := dst[s*12*kc : (s+1)*12*kc]
		mask := 1<<rows - 1
		if transA { // step p of the sliver is a[(pc+p)·lda + i0 …]
			base := pc*lda + i0
			_ = a[base+(kc-1)*lda+rows-1]
			packA12T(kc, &a[base], lda, &out[0], mask, alpha)
		} else { // row r of the sliver is a[(i0+r)·lda + pc …]
			base := i0*lda + pc
			_ = a[base+(rows-1)*lda+kc-1]
			kc8 := 0
			if rows == 12 { // full slivers by transposes, 8 steps at a time
				kc8 = kc &^ 7
				if kc8 > 0 {
					packA12N8(kc8, &a[base], lda, &out[0], alpha)
				}
			}
			if kc8 < kc {
				packA12N(kc-kc8, &a[base+kc8], &idx[0], &out[kc8*12], mask, alpha)
			}
		}
	}
}

// packB512 is packB for 32-column slivers with AVX-512 loads and gathers,
// but for full slivers of transposed B, which move 8 steps at a time
// through register transposes (packBT8).
func packB512(dst []float32, transB bool, b []float32, ldb, pc, jc, kc, nc, nr int) {
	if ldb >= gatherMaxLD/16 {
		packB(dst, transB, b, ldb, pc, jc, kc, nc, nr)
		return
	}
	var idx [16]int32
	for j := range 16 {
		idx[j] = int32(j * ldb)
	}
	for t := 0; t*32 < nc; t++ {
		cols := min(32, nc-t*32)
		j0 := jc + t*32
		out := dst[t*32*kc : (t+1)*32*kc]
		mask := 1<<cols - 1
		if !transB { // step p of the sliver is b[(pc+p)·ldb + j0 …]
			base := pc*ldb + j0
			_ = b[base+(kc-1)*ldb+cols-1]
			packB32N(kc, &b[base], ldb, &out[0], mask)
		} else { // column j of the sliver is b[(j0+j)·ldb + pc …]
			base := j0*ldb + pc
			_ = b[base+(cols-1)*ldb+kc-1]
			kc8 := 0
			if cols == 32 { // full slivers by transposes, 8 steps at a time
				kc8 = kc &^ 7
				if kc8 > 0 {
					packBT8(kc8, &b[base], ldb, &out[0], 4)
				}
			}
			if kc8 < kc {
				packB32T(kc-kc8, &b[base+kc8], &idx[0], &out[kc8*32], mask, 16*ldb)
			}
		}
	}
}

// partialAVX512 returns the avx512 kernel over the first 4 or 8 rows of a
// sliver, the fewest that cover mb.
func partialAVX512(mb int) (int, func(kc int, a, b, c []float32, ldc int, acc bool)) {
	switch {
	case mb <= 4:
		return 4, func(kc int, a, b, c []float32, ldc int, acc bool) {
			_, _, _ = a[kc*12-1], b[kc*32-1], c[3*ldc+31]
			kernAVX512x4(kc, &a[0], &b[0], &c[0], ldc, acc)
		}
	case mb <= 8:
		return 8, func(kc int, a, b, c []float32, ldc int, acc bool) {
			_, _, _ = a[kc*12-1], b[kc*32-1], c[7*ldc+31]
			kernAVX512x8(kc, &a[0], &b[0], &c[0], ldc, acc)
		}
	}
	return 12, kern512
}

func kern512(kc int, a, b, c []float32, ldc int, acc bool) {
	_, _, _ = a[kc*12-1], b[kc*32-1], c[11*ldc+31]
	kernAVX512(kc, &a[0], &b[0], &c[0], ldc, acc)
}

// partialAVX2 returns the avx2 kernel over the first 2 or 4 rows of a
// sliver, the fewest that cover mb.
func partialAVX2(mb int) (int, func(kc int, a, b, c []float32, ldc int, acc bool)) {
	switch {
	case mb <= 2:
		return 2, func(kc int, a, b, c []float32, ldc int, acc bool) {
			_, _, _ = a[kc*6-1], b[kc*16-1], c[1*ldc+15]
			kernAVX2x2(kc, &a[0], &b[0], &c[0], ldc, acc)
		}
	case mb <= 4:
		return 4, func(kc int, a, b, c []float32, ldc int, acc bool) {
			_, _, _ = a[kc*6-1], b[kc*16-1], c[3*ldc+15]
			kernAVX2x4(kc, &a[0], &b[0], &c[0], ldc, acc)
		}
	}
	return 6, kern256
}

func kern256(kc int, a, b, c []float32, ldc int, acc bool) {
	_, _, _ = a[kc*6-1], b[kc*16-1], c[5*ldc+15]
	kernAVX2(kc, &a[0], &b[0], &c[0], ldc, acc)
}

// packA256 is packA for 6-row slivers: full slivers through packA6N and
// packA6T, the ragged last one and the kc mod 8 steps packA6N leaves
// through the portable loops.
func packA256(dst []float32, transA bool, a []float32, lda, ic, pc, mc, kc, mr int, alpha float32) {
	full := mc / 6 * 6
	for s := 0; s < full; s += 6 {
		out := dst[s*kc : (s+6)*kc]
		i0 := ic + s
		if transA { // step p of the sliver is a[(pc+p)·lda + i0 …]
			base := pc*lda + i0
			_ = a[base+(kc-1)*lda+5]
			packA6T(kc, &a[base], lda, &out[0], alpha)
			continue
		}
		// row r of the sliver is a[(i0+r)·lda + pc …]
		base := i0*lda + pc
		kc8 := kc &^ 7
		if kc8 > 0 {
			_ = a[base+5*lda+kc8-1]
			packA6N(kc8, &a[base], lda, &out[0], alpha)
		}
		if kc8 < kc {
			packA(out[kc8*6:], false, a, lda, i0, pc+kc8, 6, kc-kc8, 6, alpha)
		}
	}
	if full < mc {
		packA(dst[full*kc:], transA, a, lda, ic+full, pc, mc-full, kc, mr, alpha)
	}
}

// packB256 is packB for slivers of 8 or 16 columns (nr): a run of
// columns per step is a copy already, and full slivers of transposed B go
// through packBT8 for whole groups of 8 steps.
func packB256(dst []float32, transB bool, b []float32, ldb, pc, jc, kc, nc, nr int) {
	full := nc / nr * nr
	kc8 := kc &^ 7
	if !transB || kc8 == 0 {
		packB(dst, transB, b, ldb, pc, jc, kc, nc, nr)
		return
	}
	for t := 0; t < full; t += nr {
		out := dst[t*kc : (t+nr)*kc]
		base := (jc+t)*ldb + pc
		_ = b[base+(nr-1)*ldb+kc8-1]
		packBT8(kc8, &b[base], ldb, &out[0], nr/8)
		if kc8 < kc {
			packB(out[kc8*nr:], true, b, ldb, pc+kc8, jc+t, kc-kc8, nr, nr)
		}
	}
	if full < nc {
		packB(dst[full*kc:], true, b, ldb, pc, jc+full, kc, nc-full, nr)
	}
}
