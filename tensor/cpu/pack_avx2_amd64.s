//go:build amd64 && !noasm

#include "textflag.h"

// Packing routines in AVX2 instructions. For the avx2 micro-kernel (6×16
// blocks), the two layouts whose portable loops scatter: rows of A along
// the inner dimension (packA6N) and columns of B stored as rows
// (packBT8); for the avx512 one (12×32), the same two layouts, which its
// gathers pack slowly on AMD's cores (packA12N8, at the end, and packBT8).
// All three move 8 steps at a time through registers with an 8×8
// transpose (unpack, shuffle, lane permute: 24 shuffles for 64 values),
// and touch exactly the elements they pack: full slivers and whole
// groups of 8 steps only; the callers pack ragged slivers and the last
// kc mod 8 steps otherwise. packA6T, the contiguous layout, moves one
// step of 6 values at a time.

// TRANSPOSE8 transposes the 8×8 block of rows Y0–Y7 into columns
// Y8 (column 0) … Y15 (column 7), leaving Y0–Y7 undefined.
#define TRANSPOSE8 \
	VUNPCKLPS Y1, Y0, Y8 \
	VUNPCKHPS Y1, Y0, Y9 \
	VUNPCKLPS Y3, Y2, Y10 \
	VUNPCKHPS Y3, Y2, Y11 \
	VUNPCKLPS Y5, Y4, Y12 \
	VUNPCKHPS Y5, Y4, Y13 \
	VUNPCKLPS Y7, Y6, Y14 \
	VUNPCKHPS Y7, Y6, Y15 \
	VSHUFPS $0x44, Y10, Y8, Y0 \
	VSHUFPS $0xEE, Y10, Y8, Y1 \
	VSHUFPS $0x44, Y11, Y9, Y2 \
	VSHUFPS $0xEE, Y11, Y9, Y3 \
	VSHUFPS $0x44, Y14, Y12, Y4 \
	VSHUFPS $0xEE, Y14, Y12, Y5 \
	VSHUFPS $0x44, Y15, Y13, Y6 \
	VSHUFPS $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15

// func packA6N(kc8 int, src *float32, lda int, dst *float32, alpha float32)
// dst[p·6 + r] = alpha·src[r·lda + p] for r < 6 and p < kc8 (a multiple
// of 8): rows of A along the inner dimension into a 6-row sliver.
TEXT ·packA6N(SB), NOSPLIT, $0-36
	MOVQ kc8+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), DX
	SHLQ $2, DX
	MOVQ dst+24(FP), DI
	SHRQ $3, CX
	JEQ a6ndone
	LEAQ (DX)(DX*2), R8 // 3·lda bytes

a6nloop:
	VBROADCASTSS alpha+32(FP), Y15
	VMULPS (SI), Y15, Y0
	VMULPS (SI)(DX*1), Y15, Y1
	VMULPS (SI)(DX*2), Y15, Y2
	VMULPS (SI)(R8*1), Y15, Y3
	LEAQ (SI)(DX*4), R9
	VMULPS (R9), Y15, Y4
	VMULPS (R9)(DX*1), Y15, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TRANSPOSE8
	// Step p's 6 values are lanes 0–5 of column p; each store but the
	// last writes 2 lanes more, which the next step's store overwrites.
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 24(DI)
	VMOVUPS Y10, 48(DI)
	VMOVUPS Y11, 72(DI)
	VMOVUPS Y12, 96(DI)
	VMOVUPS Y13, 120(DI)
	VMOVUPS Y14, 144(DI)
	VMOVUPS X15, 168(DI)
	VEXTRACTF128 $1, Y15, X15
	VMOVQ X15, 184(DI)
	ADDQ $32, SI
	ADDQ $192, DI
	DECQ CX
	JNE a6nloop

a6ndone:
	VZEROUPPER
	RET

// func packA6T(kc int, src *float32, lda int, dst *float32, alpha float32)
// dst[p·6 + r] = alpha·src[p·lda + r] for r < 6 and p < kc: steps of A
// that are contiguous runs of rows into a 6-row sliver.
TEXT ·packA6T(SB), NOSPLIT, $0-36
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), DX
	SHLQ $2, DX
	MOVQ dst+24(FP), DI
	VBROADCASTSS alpha+32(FP), X2
	TESTQ CX, CX
	JEQ a6tdone

a6tloop:
	VMULPS (SI), X2, X0
	VMOVQ 16(SI), X1
	VMULPS X1, X2, X1
	VMOVUPS X0, (DI)
	VMOVQ X1, 16(DI)
	ADDQ DX, SI
	ADDQ $24, DI
	DECQ CX
	JNE a6tloop

a6tdone:
	RET

// func packBT8(kc8 int, src *float32, ldb int, dst *float32, groups int)
// dst[p·8·groups + j] = src[j·ldb + p] for j < 8·groups and p < kc8 (a
// multiple of 8): rows of B (columns of op(B)) into a sliver of
// 8·groups columns, one 8×8 transpose per group of 8 columns and 8
// steps. packB256 calls it with 2 groups (16 columns), packB512 with 4.
TEXT ·packBT8(SB), NOSPLIT, $0-40
	MOVQ kc8+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ ldb+16(FP), DX
	SHLQ $2, DX
	MOVQ dst+24(FP), DI
	MOVQ groups+32(FP), R13
	SHLQ $5, R13        // a step's bytes in the sliver: 32 per group
	SHRQ $3, CX
	JEQ bt8done
	LEAQ (DX)(DX*2), R8  // 3·ldb bytes
	LEAQ (R13)(R13*2), R14 // 3 steps' bytes

bt8loop:
	MOVQ SI, R9
	MOVQ DI, R10
	MOVQ groups+32(FP), R11

bt8group:
	VMOVUPS (R9), Y0
	VMOVUPS (R9)(DX*1), Y1
	VMOVUPS (R9)(DX*2), Y2
	VMOVUPS (R9)(R8*1), Y3
	LEAQ (R9)(DX*4), R12
	VMOVUPS (R12), Y4
	VMOVUPS (R12)(DX*1), Y5
	VMOVUPS (R12)(DX*2), Y6
	VMOVUPS (R12)(R8*1), Y7
	TRANSPOSE8
	LEAQ (R10)(R13*4), BX
	VMOVUPS Y8, (R10)
	VMOVUPS Y9, (R10)(R13*1)
	VMOVUPS Y10, (R10)(R13*2)
	VMOVUPS Y11, (R10)(R14*1)
	VMOVUPS Y12, (BX)
	VMOVUPS Y13, (BX)(R13*1)
	VMOVUPS Y14, (BX)(R13*2)
	VMOVUPS Y15, (BX)(R14*1)
	LEAQ (R12)(DX*4), R9
	ADDQ $32, R10
	DECQ R11
	JNE bt8group

	ADDQ $32, SI
	LEAQ (DI)(R13*8), DI
	DECQ CX
	JNE bt8loop

bt8done:
	VZEROUPPER
	RET

// func packA12N8(kc8 int, src *float32, lda int, dst *float32, alpha float32)
// dst[p·12 + r] = alpha·src[r·lda + p] for r < 12 and p < kc8 (a
// multiple of 8): packA12N for full slivers without gathers, which are
// slow on some CPUs (AMD's among them). Rows 0–7 go through one 8×8
// transpose, rows 8–11 through another with four rows of zeros, of
// which each step keeps the low four lanes.
TEXT ·packA12N8(SB), NOSPLIT, $0-36
	MOVQ kc8+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), DX
	SHLQ $2, DX
	MOVQ dst+24(FP), DI
	SHRQ $3, CX
	JEQ a12n8done
	LEAQ (DX)(DX*2), R8 // 3·lda bytes

a12n8loop:
	VBROADCASTSS alpha+32(FP), Y15
	VMULPS (SI), Y15, Y0
	VMULPS (SI)(DX*1), Y15, Y1
	VMULPS (SI)(DX*2), Y15, Y2
	VMULPS (SI)(R8*1), Y15, Y3
	LEAQ (SI)(DX*4), R9
	VMULPS (R9), Y15, Y4
	VMULPS (R9)(DX*1), Y15, Y5
	VMULPS (R9)(DX*2), Y15, Y6
	VMULPS (R9)(R8*1), Y15, Y7
	TRANSPOSE8
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 48(DI)
	VMOVUPS Y10, 96(DI)
	VMOVUPS Y11, 144(DI)
	VMOVUPS Y12, 192(DI)
	VMOVUPS Y13, 240(DI)
	VMOVUPS Y14, 288(DI)
	VMOVUPS Y15, 336(DI)
	LEAQ (R9)(DX*4), R9
	VBROADCASTSS alpha+32(FP), Y15
	VMULPS (R9), Y15, Y0
	VMULPS (R9)(DX*1), Y15, Y1
	VMULPS (R9)(DX*2), Y15, Y2
	VMULPS (R9)(R8*1), Y15, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TRANSPOSE8
	VMOVUPS X8, 32(DI)
	VMOVUPS X9, 80(DI)
	VMOVUPS X10, 128(DI)
	VMOVUPS X11, 176(DI)
	VMOVUPS X12, 224(DI)
	VMOVUPS X13, 272(DI)
	VMOVUPS X14, 320(DI)
	VMOVUPS X15, 368(DI)
	ADDQ $32, SI
	ADDQ $384, DI
	DECQ CX
	JNE a12n8loop

a12n8done:
	VZEROUPPER
	RET

