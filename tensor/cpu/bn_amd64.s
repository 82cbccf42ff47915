//go:build amd64 && !noasm

#include "textflag.h"

// AVX-512 loops of the batch-norm helpers (batchnorm.go) over a run of n
// values, n a positive multiple of 16. The sums convert each value to
// float64 before they add it, like the Go loops, and leave 8 partial sums
// per quantity for Go to add up; the element-wise ones round exactly as
// the Go loops do (a multiply, then an add: no fused multiply-add).

// func bnShiftedSum16(x *float32, n int, k float64, acc *[16]float64)
// acc[0:8] = partial sums of (x − k), acc[8:16] of (x − k)².
TEXT ·bnShiftedSum16(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD k+16(FP), Z7
	MOVQ acc+24(FP), DI
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6

sumloop:
	VMOVUPS (SI), Z0
	VEXTRACTF32X8 $1, Z0, Y2
	VCVTPS2PD Y0, Z1
	VCVTPS2PD Y2, Z2
	VSUBPD Z7, Z1, Z1
	VSUBPD Z7, Z2, Z2
	VADDPD Z1, Z3, Z3
	VADDPD Z2, Z4, Z4
	VFMADD231PD Z1, Z1, Z5
	VFMADD231PD Z2, Z2, Z6
	ADDQ $64, SI
	SUBQ $16, CX
	JNE sumloop

	VADDPD Z4, Z3, Z3
	VADDPD Z6, Z5, Z5
	VMOVUPD Z3, (DI)
	VMOVUPD Z5, 64(DI)
	VZEROUPPER
	RET

// func bnGradientSum16(x, dy *float32, n int, mean float64, acc *[16]float64)
// acc[0:8] = partial sums of dy, acc[8:16] of dy·(x − mean).
TEXT ·bnGradientSum16(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ dy+8(FP), DX
	MOVQ n+16(FP), CX
	VBROADCASTSD mean+24(FP), Z7
	MOVQ acc+32(FP), DI
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6

gradloop:
	VMOVUPS (SI), Z0
	VMOVUPS (DX), Z8
	VEXTRACTF32X8 $1, Z0, Y2
	VEXTRACTF32X8 $1, Z8, Y10
	VCVTPS2PD Y0, Z1
	VCVTPS2PD Y2, Z2
	VCVTPS2PD Y8, Z9
	VCVTPS2PD Y10, Z10
	VADDPD Z9, Z3, Z3
	VADDPD Z10, Z4, Z4
	VSUBPD Z7, Z1, Z1
	VSUBPD Z7, Z2, Z2
	VFMADD231PD Z9, Z1, Z5
	VFMADD231PD Z10, Z2, Z6
	ADDQ $64, SI
	ADDQ $64, DX
	SUBQ $16, CX
	JNE gradloop

	VADDPD Z4, Z3, Z3
	VADDPD Z6, Z5, Z5
	VMOVUPD Z3, (DI)
	VMOVUPD Z5, 64(DI)
	VZEROUPPER
	RET

// func bnAffine16(x, y *float32, n int, m, a, b float32)
// y = (x − m)·a + b.
TEXT ·bnAffine16(SB), NOSPLIT, $0-36
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS m+24(FP), Z1
	VBROADCASTSS a+28(FP), Z2
	VBROADCASTSS b+32(FP), Z3

affloop:
	VMOVUPS (SI), Z0
	VSUBPS Z1, Z0, Z0
	VMULPS Z2, Z0, Z0
	VADDPS Z3, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNE affloop
	VZEROUPPER
	RET

// func bnGradient16(x, dy, dx *float32, n int, m, p, q, r float32)
// dx = dy·p + (x − m)·q + r.
TEXT ·bnGradient16(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ dy+8(FP), DX
	MOVQ dx+16(FP), DI
	MOVQ n+24(FP), CX
	VBROADCASTSS m+32(FP), Z4
	VBROADCASTSS p+36(FP), Z5
	VBROADCASTSS q+40(FP), Z6
	VBROADCASTSS r+44(FP), Z7

bgloop:
	VMOVUPS (DX), Z0
	VMULPS Z5, Z0, Z0
	VMOVUPS (SI), Z1
	VSUBPS Z4, Z1, Z1
	VMULPS Z6, Z1, Z1
	VADDPS Z1, Z0, Z0
	VADDPS Z7, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, CX
	JNE bgloop
	VZEROUPPER
	RET
