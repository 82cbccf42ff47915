//go:build amd64 && !noasm

#include "textflag.h"

// Strided row loops of the convolution lowering (rows.go): rows rows of n
// values each, rows ds elements apart in dst and ss elements apart in
// src, n and rows positive. Each row runs in whole 16-value vectors (the
// AVX-512 loops) or 8-value ones (AVX2), then one vector each of 8 and 4
// values and up to 3 scalars for what is left: no masked loads or stores,
// which some CPUs run slowly (AMD's VMASKMOVPS stores are microcoded),
// and nothing read or written past a row. Each computes exactly what its
// Go loop computes, bit for bit: dst + src, dst the first operand.

// func addRows16(dst *float32, ds int, src *float32, ss int, rows, n int)
// dst[r·ds + q] += src[r·ss + q], AVX-512.
TEXT ·addRows16(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ds+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ ss+24(FP), R11
	MOVQ rows+32(FP), BX
	MOVQ n+40(FP), DX
	SHLQ $2, R10
	SHLQ $2, R11

addRows16row:
	MOVQ DI, R8
	MOVQ SI, R9
	MOVQ DX, CX

addRows16full:
	CMPQ CX, $16
	JL addRows16part
	VMOVUPS (R8), Z1
	VADDPS (R9), Z1, Z1
	VMOVUPS Z1, (R8)
	ADDQ $64, R8
	ADDQ $64, R9
	SUBQ $16, CX
	JMP addRows16full

addRows16part:
	TESTQ $8, CX
	JE addRows16lt8
	VMOVUPS (R8), Y1
	VADDPS (R9), Y1, Y1
	VMOVUPS Y1, (R8)
	ADDQ $32, R8
	ADDQ $32, R9

addRows16lt8:
	TESTQ $4, CX
	JE addRows16lt4
	VMOVUPS (R8), X1
	VADDPS (R9), X1, X1
	VMOVUPS X1, (R8)
	ADDQ $16, R8
	ADDQ $16, R9

addRows16lt4:
	ANDQ $3, CX
	JE addRows16next

addRows16one:
	VMOVSS (R8), X1
	VADDSS (R9), X1, X1
	VMOVSS X1, (R8)
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JNE addRows16one

addRows16next:
	ADDQ R10, DI
	ADDQ R11, SI
	DECQ BX
	JNE addRows16row
	VZEROUPPER
	RET

// func copyRows16(dst *float32, ds int, src *float32, ss int, rows, n int)
// dst[r·ds + q] = src[r·ss + q], AVX-512.
TEXT ·copyRows16(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ds+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ ss+24(FP), R11
	MOVQ rows+32(FP), BX
	MOVQ n+40(FP), DX
	SHLQ $2, R10
	SHLQ $2, R11

copyRows16row:
	MOVQ DI, R8
	MOVQ SI, R9
	MOVQ DX, CX

copyRows16full:
	CMPQ CX, $16
	JL copyRows16part
	VMOVUPS (R9), Z0
	VMOVUPS Z0, (R8)
	ADDQ $64, R8
	ADDQ $64, R9
	SUBQ $16, CX
	JMP copyRows16full

copyRows16part:
	TESTQ $8, CX
	JE copyRows16lt8
	VMOVUPS (R9), Y0
	VMOVUPS Y0, (R8)
	ADDQ $32, R8
	ADDQ $32, R9

copyRows16lt8:
	TESTQ $4, CX
	JE copyRows16lt4
	VMOVUPS (R9), X0
	VMOVUPS X0, (R8)
	ADDQ $16, R8
	ADDQ $16, R9

copyRows16lt4:
	ANDQ $3, CX
	JE copyRows16next

copyRows16one:
	VMOVSS (R9), X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JNE copyRows16one

copyRows16next:
	ADDQ R10, DI
	ADDQ R11, SI
	DECQ BX
	JNE copyRows16row
	VZEROUPPER
	RET

// func addRows8(dst *float32, ds int, src *float32, ss int, rows, n int)
// addRows16 in AVX2.
TEXT ·addRows8(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ds+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ ss+24(FP), R11
	MOVQ rows+32(FP), BX
	MOVQ n+40(FP), DX
	SHLQ $2, R10
	SHLQ $2, R11

addRows8row:
	MOVQ DI, R8
	MOVQ SI, R9
	MOVQ DX, CX

addRows8full:
	CMPQ CX, $8
	JL addRows8part
	VMOVUPS (R8), Y1
	VADDPS (R9), Y1, Y1
	VMOVUPS Y1, (R8)
	ADDQ $32, R8
	ADDQ $32, R9
	SUBQ $8, CX
	JMP addRows8full

addRows8part:
	TESTQ $4, CX
	JE addRows8lt4
	VMOVUPS (R8), X1
	VADDPS (R9), X1, X1
	VMOVUPS X1, (R8)
	ADDQ $16, R8
	ADDQ $16, R9

addRows8lt4:
	ANDQ $3, CX
	JE addRows8next

addRows8one:
	VMOVSS (R8), X1
	VADDSS (R9), X1, X1
	VMOVSS X1, (R8)
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JNE addRows8one

addRows8next:
	ADDQ R10, DI
	ADDQ R11, SI
	DECQ BX
	JNE addRows8row
	VZEROUPPER
	RET

// func copyRows8(dst *float32, ds int, src *float32, ss int, rows, n int)
// copyRows16 in AVX2.
TEXT ·copyRows8(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ds+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ ss+24(FP), R11
	MOVQ rows+32(FP), BX
	MOVQ n+40(FP), DX
	SHLQ $2, R10
	SHLQ $2, R11

copyRows8row:
	MOVQ DI, R8
	MOVQ SI, R9
	MOVQ DX, CX

copyRows8full:
	CMPQ CX, $8
	JL copyRows8part
	VMOVUPS (R9), Y0
	VMOVUPS Y0, (R8)
	ADDQ $32, R8
	ADDQ $32, R9
	SUBQ $8, CX
	JMP copyRows8full

copyRows8part:
	TESTQ $4, CX
	JE copyRows8lt4
	VMOVUPS (R9), X0
	VMOVUPS X0, (R8)
	ADDQ $16, R8
	ADDQ $16, R9

copyRows8lt4:
	ANDQ $3, CX
	JE copyRows8next

copyRows8one:
	VMOVSS (R9), X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JNE copyRows8one

copyRows8next:
	ADDQ R10, DI
	ADDQ R11, SI
	DECQ BX
	JNE copyRows8row
	VZEROUPPER
	RET
