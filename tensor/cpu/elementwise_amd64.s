//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 loops of the element-wise kernels (relu.go, elementwise.go) over n
// values, n a positive multiple of 8. Each computes exactly what its Go
// loop computes, bit for bit.

// func reluForward8(x, y *float32, n int)
// y = x where x > 0 or x is NaN, else +0: the bits of x with every lane
// where x ≤ 0 (an ordered compare, false for NaN; true for −0) cleared.
TEXT ·reluForward8(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y15, Y15, Y15

reluloop:
	VMOVUPS (SI), Y0
	VCMPPS $2, Y15, Y0, Y1
	VANDNPS Y0, Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNE reluloop
	VZEROUPPER
	RET

// func reluBackward8(y, dy, dx *float32, n int)
// dx = dy where y > 0 or y is NaN, else +0.
TEXT ·reluBackward8(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), SI
	MOVQ dy+8(FP), DX
	MOVQ dx+16(FP), DI
	MOVQ n+24(FP), CX
	VXORPS Y15, Y15, Y15

rbloop:
	VMOVUPS (SI), Y0
	VCMPPS $2, Y15, Y0, Y1
	VMOVUPS (DX), Y2
	VANDNPS Y2, Y1, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNE rbloop
	VZEROUPPER
	RET

// func add8(y, a, b *float32, n int)
// y = a + b.
TEXT ·add8(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX

addloop:
	VMOVUPS (SI), Y0
	VADDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNE addloop
	VZEROUPPER
	RET
