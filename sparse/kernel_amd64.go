package sparse

import "golang.org/x/sys/cpu"

// useAVX2 and usePOPCNT select the assembly kernels; tests turn them off
// to check the Go ones.
var (
	useAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	usePOPCNT = cpu.X86.HasPOPCNT
)

// dot1AVX returns the dot product of q[:n] and r[:n]; n is a positive
// multiple of 8.
//
//go:noescape
func dot1AVX(q, r *float32, n int) float32

// dot4AVX writes to out the dot products of q[:n] with the rows starting
// at m, m+stride, m+2×stride, m+3×stride (in elements); n is a positive
// multiple of 8.
//
//go:noescape
func dot4AVX(q, m *float32, n, stride int, out *[4]float32)

// sumAVX returns the sum of p[:n]; n is a positive multiple of 32. It is
// the memory-bandwidth probe of the benchmarks.
//
//go:noescape
func sumAVX(p *float32, n int) float32

// hammingPOPCNT returns the number of differing bits of a[:n] and b[:n].
//
//go:noescape
func hammingPOPCNT(a, b *uint64, n int) int

// hashSumsAVX writes to sums[:bits] the dot products (as dot64 computes
// them) of x[:dim] with the projection rows, given cols, the projection
// transposed ([dim][bits]); bits is a positive multiple of 16.
//
//go:noescape
func hashSumsAVX(cols, x *float64, dim, bits int, sums *float64)
