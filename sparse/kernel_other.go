//go:build !amd64

package sparse

// useAVX2 and usePOPCNT are false: there are no assembly kernels for
// this architecture.
var (
	useAVX2   = false
	usePOPCNT = false
)

func dot1AVX(q, r *float32, n int) float32                       { panic("sparse: no AVX2 kernel") }
func dot4AVX(q, m *float32, n, stride int, out *[4]float32)      { panic("sparse: no AVX2 kernel") }
func sumAVX(p *float32, n int) float32                           { panic("sparse: no AVX2 kernel") }
func hammingPOPCNT(a, b *uint64, n int) int                      { panic("sparse: no POPCNT kernel") }
func hashSumsAVX(cols, x *float64, dim, bits int, sums *float64) { panic("sparse: no AVX2 kernel") }
