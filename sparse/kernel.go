package sparse

import "math/bits"

// The scan kernels. dot1 and dot4 compute every product and sum in the
// same order for a given row, so a candidate's score does not depend on
// which kernel, worker or position scored it. On amd64 with AVX2 and FMA
// they run the assembly of kernel_amd64.s on the first len(q) &^ 7
// elements; otherwise dot1Go and dot4Go. hamming runs the POPCNT assembly
// on amd64 (math/bits.OnesCount64 compiles to POPCNT too, but behind a
// CPU-feature test per word that halves its speed), else hammingGo.

// dot1 returns the dot product of q and r[:len(q)].
func dot1(q, r []float32) float32 {
	if useAVX2 && len(q) >= 8 {
		n8 := len(q) &^ 7
		s := dot1AVX(&q[0], &r[:n8][0], n8)
		for i := n8; i < len(q); i++ {
			s += q[i] * r[i]
		}
		return s
	}
	return dot1Go(q, r)
}

// dot4 returns the dot products of q with the four rows m[i×s:i×s+len(q)],
// i = 0..3.
func dot4(q, m []float32, s int) (out [4]float32) {
	n := len(q)
	if useAVX2 && n >= 8 {
		n8 := n &^ 7
		_ = m[3*s+n-1]
		dot4AVX(&q[0], &m[0], n8, s, &out)
		for r := 0; r < 4; r++ {
			row := m[r*s : r*s+n]
			for i := n8; i < n; i++ {
				out[r] += q[i] * row[i]
			}
		}
		return out
	}
	return dot4Go(q, m, s)
}

// dot1Go is dot1 in Go: two accumulators (even and odd elements).
func dot1Go(q, r []float32) float32 {
	n := len(q) &^ 1
	a := r[:n]
	var a0, a1 float32
	for i := 0; i+1 < len(a); i += 2 {
		a0 += q[i] * a[i]
		a1 += q[i+1] * a[i+1]
	}
	if n < len(q) {
		a0 += q[n] * r[n]
	}
	return a0 + a1
}

// dot4Go is dot4 in Go, with the arithmetic of dot1Go for each row; the
// query is loaded once for the four rows.
func dot4Go(q, m []float32, s int) [4]float32 {
	n := len(q)
	n2 := n &^ 1
	a := m[0:n2]
	b := m[s : s+n2]
	c := m[2*s : 2*s+n2]
	d := m[3*s : 3*s+n2]
	var a0, a1, b0, b1, c0, c1, d0, d1 float32
	for i := 0; i+1 < len(a); i += 2 {
		x0, x1 := q[i], q[i+1]
		a0 += x0 * a[i]
		b0 += x0 * b[i]
		c0 += x0 * c[i]
		d0 += x0 * d[i]
		a1 += x1 * a[i+1]
		b1 += x1 * b[i+1]
		c1 += x1 * c[i+1]
		d1 += x1 * d[i+1]
	}
	if n2 < n {
		x := q[n2]
		a0 += x * m[n2]
		b0 += x * m[s+n2]
		c0 += x * m[2*s+n2]
		d0 += x * m[3*s+n2]
	}
	return [4]float32{a0 + a1, b0 + b1, c0 + c1, d0 + d1}
}

// hamming is the number of differing bits of a and b[:len(a)].
func hamming(a, b []uint64) int {
	if usePOPCNT && len(a) > 0 {
		return hammingPOPCNT(&a[0], &b[:len(a)][0], len(a))
	}
	return hammingGo(a, b)
}

// hammingGo is hamming in Go, eight words at a time.
func hammingGo(a, b []uint64) int {
	b = b[:len(a)]
	var n0, n1 int
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x := a[i : i+8 : i+8]
		y := b[i : i+8 : i+8]
		n0 += bits.OnesCount64(x[0]^y[0]) + bits.OnesCount64(x[1]^y[1]) +
			bits.OnesCount64(x[2]^y[2]) + bits.OnesCount64(x[3]^y[3])
		n1 += bits.OnesCount64(x[4]^y[4]) + bits.OnesCount64(x[5]^y[5]) +
			bits.OnesCount64(x[6]^y[6]) + bits.OnesCount64(x[7]^y[7])
	}
	for ; i < len(a); i++ {
		n0 += bits.OnesCount64(a[i] ^ b[i])
	}
	return n0 + n1
}
