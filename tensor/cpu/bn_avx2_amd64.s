//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 loops of the batch-norm helpers (batchnorm.go) over a run of n
// values, n a positive multiple of 8: bn_amd64.s's loops at half the
// width, for CPUs without AVX-512. The sums convert each value to float64
// before they add it and leave 8 partial sums per quantity for Go to add
// up; the element-wise ones round exactly as the Go loops do (a multiply,
// then an add: no fused multiply-add).

// func bnShiftedSum8(x *float32, n int, k float64, acc *[16]float64)
// acc[0:8] = partial sums of (x − k), acc[8:16] of (x − k)².
TEXT ·bnShiftedSum8(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD k+16(FP), Y7
	MOVQ acc+24(FP), DI
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6

sumloop:
	VCVTPS2PD (SI), Y1
	VCVTPS2PD 16(SI), Y2
	VSUBPD Y7, Y1, Y1
	VSUBPD Y7, Y2, Y2
	VADDPD Y1, Y3, Y3
	VADDPD Y2, Y4, Y4
	VFMADD231PD Y1, Y1, Y5
	VFMADD231PD Y2, Y2, Y6
	ADDQ $32, SI
	SUBQ $8, CX
	JNE sumloop

	VMOVUPD Y3, (DI)
	VMOVUPD Y4, 32(DI)
	VMOVUPD Y5, 64(DI)
	VMOVUPD Y6, 96(DI)
	VZEROUPPER
	RET

// func bnGradientSum8(x, dy *float32, n int, mean float64, acc *[16]float64)
// acc[0:8] = partial sums of dy, acc[8:16] of dy·(x − mean).
TEXT ·bnGradientSum8(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ dy+8(FP), DX
	MOVQ n+16(FP), CX
	VBROADCASTSD mean+24(FP), Y7
	MOVQ acc+32(FP), DI
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6

gradloop:
	VCVTPS2PD (SI), Y1
	VCVTPS2PD 16(SI), Y2
	VCVTPS2PD (DX), Y9
	VCVTPS2PD 16(DX), Y10
	VADDPD Y9, Y3, Y3
	VADDPD Y10, Y4, Y4
	VSUBPD Y7, Y1, Y1
	VSUBPD Y7, Y2, Y2
	VFMADD231PD Y9, Y1, Y5
	VFMADD231PD Y10, Y2, Y6
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JNE gradloop

	VMOVUPD Y3, (DI)
	VMOVUPD Y4, 32(DI)
	VMOVUPD Y5, 64(DI)
	VMOVUPD Y6, 96(DI)
	VZEROUPPER
	RET

// func bnAffine8(x, y *float32, n int, m, a, b float32)
// y = (x − m)·a + b.
TEXT ·bnAffine8(SB), NOSPLIT, $0-36
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS m+24(FP), Y1
	VBROADCASTSS a+28(FP), Y2
	VBROADCASTSS b+32(FP), Y3

affloop:
	VMOVUPS (SI), Y0
	VSUBPS Y1, Y0, Y0
	VMULPS Y2, Y0, Y0
	VADDPS Y3, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNE affloop
	VZEROUPPER
	RET

// func bnGradient8(x, dy, dx *float32, n int, m, p, q, r float32)
// dx = dy·p + (x − m)·q + r.
TEXT ·bnGradient8(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ dy+8(FP), DX
	MOVQ dx+16(FP), DI
	MOVQ n+24(FP), CX
	VBROADCASTSS m+32(FP), Y4
	VBROADCASTSS p+36(FP), Y5
	VBROADCASTSS q+40(FP), Y6
	VBROADCASTSS r+44(FP), Y7

bgloop:
	VMOVUPS (DX), Y0
	VMULPS Y5, Y0, Y0
	VMOVUPS (SI), Y1
	VSUBPS Y4, Y1, Y1
	VMULPS Y6, Y1, Y1
	VADDPS Y1, Y0, Y0
	VADDPS Y7, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNE bgloop
	VZEROUPPER
	RET
