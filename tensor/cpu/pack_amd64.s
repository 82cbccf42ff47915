//go:build amd64 && !noasm

#include "textflag.h"

// Packing routines of the avx512 micro-kernel (12×32 blocks). Masked
// loads and gathers never touch the lanes their mask leaves out, so a
// ragged last sliver reads nothing past its matrix and is padded with
// zeros.

// func packA12N(kc int, src *float32, idx *int32, dst *float32, mask int, alpha float32)
// dst[p·12 + r] = alpha·src[idx[r] + p] for the rows r in mask, 0 for the others.
TEXT ·packA12N(SB), NOSPLIT, $0-44
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ idx+16(FP), AX
	VMOVDQU32 (AX), Z1
	MOVQ dst+24(FP), DI
	MOVQ mask+32(FP), R8
	VBROADCASTSS alpha+40(FP), Z2
	MOVL $0xfff, R9
	KMOVW R9, K2
	TESTQ CX, CX
	JEQ a12ndone

a12nloop:
	KMOVW R8, K1
	VPXORD Z0, Z0, Z0
	VGATHERDPS (SI)(Z1*4), K1, Z0
	VMULPS Z2, Z0, Z0
	VMOVUPS Z0, K2, (DI)
	ADDQ $4, SI
	ADDQ $48, DI
	DECQ CX
	JNE a12nloop

a12ndone:
	VZEROUPPER
	RET

// func packA12T(kc int, src *float32, lda int, dst *float32, mask int, alpha float32)
// dst[p·12 + r] = alpha·src[p·lda + r] for the rows r in mask, 0 for the others.
TEXT ·packA12T(SB), NOSPLIT, $0-44
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), DX
	SHLQ $2, DX
	MOVQ dst+24(FP), DI
	MOVQ mask+32(FP), R8
	KMOVW R8, K1
	VBROADCASTSS alpha+40(FP), Z2
	MOVL $0xfff, R9
	KMOVW R9, K2
	TESTQ CX, CX
	JEQ a12tdone

a12tloop:
	VMOVUPS.Z (SI), K1, Z0
	VMULPS Z2, Z0, Z0
	VMOVUPS Z0, K2, (DI)
	ADDQ DX, SI
	ADDQ $48, DI
	DECQ CX
	JNE a12tloop

a12tdone:
	VZEROUPPER
	RET

// func packB32N(kc int, src *float32, ldb int, dst *float32, mask int)
// dst[p·32 + j] = src[p·ldb + j] for the columns j in mask, 0 for the others.
TEXT ·packB32N(SB), NOSPLIT, $0-40
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ ldb+16(FP), DX
	SHLQ $2, DX
	MOVQ dst+24(FP), DI
	MOVQ mask+32(FP), R8
	KMOVW R8, K1
	SHRQ $16, R8
	KMOVW R8, K3
	TESTQ CX, CX
	JEQ b32ndone

b32nloop:
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z 64(SI), K3, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ DX, SI
	ADDQ $128, DI
	DECQ CX
	JNE b32nloop

b32ndone:
	VZEROUPPER
	RET

// func packB32T(kc int, src *float32, idx *int32, dst *float32, mask int, half int)
// dst[p·32 + j] = src[idx[j mod 16] + (j div 16)·half + p] for the columns
// j in mask, 0 for the others.
TEXT ·packB32T(SB), NOSPLIT, $0-48
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ idx+16(FP), AX
	VMOVDQU32 (AX), Z4
	MOVQ dst+24(FP), DI
	MOVQ mask+32(FP), R8
	MOVQ R8, R9
	SHRQ $16, R9
	MOVQ half+40(FP), R10
	LEAQ (SI)(R10*4), R10
	TESTQ CX, CX
	JEQ b32tdone

b32tloop:
	KMOVW R8, K1
	KMOVW R9, K3
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VGATHERDPS (SI)(Z4*4), K1, Z0
	VGATHERDPS (R10)(Z4*4), K3, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ $4, SI
	ADDQ $4, R10
	ADDQ $128, DI
	DECQ CX
	JNE b32tloop

b32tdone:
	VZEROUPPER
	RET
