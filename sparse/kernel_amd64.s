// AVX2 + FMA scan kernels (see kernel.go). Each row has two accumulators:
// Y0..Y3 take the first 8 elements of every 16, Y4..Y7 the second 8; an
// n that is 8 more than a multiple of 16 ends with one step into Y0..Y3.
// The horizontal sum is the same in dot1AVX and dot4AVX, so both give the
// same result for the same row.

#include "textflag.h"

// func dot4AVX(q, m *float32, n, stride int, out *[4]float32)
TEXT ·dot4AVX(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ m+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ stride+24(FP), DX
	MOVQ out+32(FP), R11
	SHLQ $2, DX
	LEAQ (DI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R10
	SHLQ $2, CX
	MOVQ CX, BX
	ANDQ $-64, BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ AX, AX

loop4:
	CMPQ AX, BX
	JGE  tail4
	VMOVUPS     (SI)(AX*1), Y8
	VMOVUPS     32(SI)(AX*1), Y9
	VFMADD231PS (DI)(AX*1), Y8, Y0
	VFMADD231PS 32(DI)(AX*1), Y9, Y4
	VFMADD231PS (R8)(AX*1), Y8, Y1
	VFMADD231PS 32(R8)(AX*1), Y9, Y5
	VFMADD231PS (R9)(AX*1), Y8, Y2
	VFMADD231PS 32(R9)(AX*1), Y9, Y6
	VFMADD231PS (R10)(AX*1), Y8, Y3
	VFMADD231PS 32(R10)(AX*1), Y9, Y7
	ADDQ        $64, AX
	JMP         loop4

tail4:
	CMPQ AX, CX
	JGE  sum4
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (DI)(AX*1), Y8, Y0
	VFMADD231PS (R8)(AX*1), Y8, Y1
	VFMADD231PS (R9)(AX*1), Y8, Y2
	VFMADD231PS (R10)(AX*1), Y8, Y3

sum4:
	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	VEXTRACTF128 $1, Y0, X8
	VADDPS       X8, X0, X0
	VEXTRACTF128 $1, Y1, X8
	VADDPS       X8, X1, X1
	VEXTRACTF128 $1, Y2, X8
	VADDPS       X8, X2, X2
	VEXTRACTF128 $1, Y3, X8
	VADDPS       X8, X3, X3
	VHADDPS      X1, X0, X0
	VHADDPS      X3, X2, X2
	VHADDPS      X2, X0, X0
	VMOVUPS      X0, (R11)
	VZEROUPPER
	RET

// func dot1AVX(q, r *float32, n int) float32
TEXT ·dot1AVX(SB), NOSPLIT, $0-28
	MOVQ q+0(FP), SI
	MOVQ r+8(FP), DI
	MOVQ n+16(FP), CX
	SHLQ $2, CX
	MOVQ CX, BX
	ANDQ $-64, BX
	VXORPS Y0, Y0, Y0
	VXORPS Y4, Y4, Y4
	XORQ AX, AX

loop1:
	CMPQ AX, BX
	JGE  tail1
	VMOVUPS     (SI)(AX*1), Y8
	VMOVUPS     32(SI)(AX*1), Y9
	VFMADD231PS (DI)(AX*1), Y8, Y0
	VFMADD231PS 32(DI)(AX*1), Y9, Y4
	ADDQ        $64, AX
	JMP         loop1

tail1:
	CMPQ AX, CX
	JGE  sum1
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (DI)(AX*1), Y8, Y0

sum1:
	VADDPS       Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X8
	VADDPS       X8, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func sumAVX(p *float32, n int) float32
TEXT ·sumAVX(SB), NOSPLIT, $0-20
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	SHLQ $2, CX
	XORQ AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loops:
	CMPQ   AX, CX
	JGE    sums
	VADDPS (SI)(AX*1), Y0, Y0
	VADDPS 32(SI)(AX*1), Y1, Y1
	VADDPS 64(SI)(AX*1), Y2, Y2
	VADDPS 96(SI)(AX*1), Y3, Y3
	ADDQ   $128, AX
	JMP    loops

sums:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

// func hammingPOPCNT(a, b *uint64, n int) int
TEXT ·hammingPOPCNT(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ CX, DX
	ANDQ $-4, DX
	XORQ AX, AX
	XORQ R8, R8
	XORQ R9, R9
	XORQ R10, R10
	XORQ BX, BX

looph:
	CMPQ    BX, DX
	JGE     tailh
	MOVQ    (SI)(BX*8), R11
	XORQ    (DI)(BX*8), R11
	POPCNTQ R11, R11
	ADDQ    R11, AX
	MOVQ    8(SI)(BX*8), R12
	XORQ    8(DI)(BX*8), R12
	POPCNTQ R12, R12
	ADDQ    R12, R8
	MOVQ    16(SI)(BX*8), R13
	XORQ    16(DI)(BX*8), R13
	POPCNTQ R13, R13
	ADDQ    R13, R9
	MOVQ    24(SI)(BX*8), R11
	XORQ    24(DI)(BX*8), R11
	POPCNTQ R11, R11
	ADDQ    R11, R10
	ADDQ    $4, BX
	JMP     looph

tailh:
	CMPQ    BX, CX
	JGE     doneh
	MOVQ    (SI)(BX*8), R11
	XORQ    (DI)(BX*8), R11
	POPCNTQ R11, R11
	ADDQ    R11, AX
	INCQ    BX
	JMP     tailh

doneh:
	ADDQ R8, AX
	ADDQ R10, R9
	ADDQ R9, AX
	MOVQ AX, ret+24(FP)
	RET

// func hashSumsAVX(cols, x *float64, dim, bits int, sums *float64)
//
// sums[i] = Σ_k cols[k×bits+i] × x[k], k ascending, each product and sum
// rounded on its own (VMULPD then VADDPD, no FMA): dot64 of projection row
// i with x, sixteen rows at a time. bits is a positive multiple of 16.
TEXT ·hashSumsAVX(SB), NOSPLIT, $0-40
	MOVQ cols+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ dim+16(FP), CX
	MOVQ bits+24(FP), R9
	MOVQ sums+32(FP), R8
	SHLQ $3, R9
	XORQ R10, R10

groups:
	CMPQ   R10, R9
	JGE    doneg
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	LEAQ   (SI)(R10*1), R11
	XORQ   BX, BX

kloop:
	CMPQ         BX, CX
	JGE          storeg
	VBROADCASTSD (DI)(BX*8), Y4
	VMULPD       (R11), Y4, Y5
	VADDPD       Y5, Y0, Y0
	VMULPD       32(R11), Y4, Y6
	VADDPD       Y6, Y1, Y1
	VMULPD       64(R11), Y4, Y7
	VADDPD       Y7, Y2, Y2
	VMULPD       96(R11), Y4, Y8
	VADDPD       Y8, Y3, Y3
	ADDQ         R9, R11
	INCQ         BX
	JMP          kloop

storeg:
	VMOVUPD Y0, (R8)(R10*1)
	VMOVUPD Y1, 32(R8)(R10*1)
	VMOVUPD Y2, 64(R8)(R10*1)
	VMOVUPD Y3, 96(R8)(R10*1)
	ADDQ    $128, R10
	JMP     groups

doneg:
	VZEROUPPER
	RET
