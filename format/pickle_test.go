package format

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// pickleCase is a value, the Python expression of the same value, and the
// length and MD5 of pickle.dumps(value, protocol=5) as Python 3.11 computes
// it (testdata/pickle_vectors.py). hex is the whole pickle, for short ones.
type pickleCase struct {
	py  string
	v   func() any
	n   int
	md5 string
	hex string
}

func rep[T any](n int, f func(i int) T) PickleTuple {
	t := make(PickleTuple, n)
	for i := range t {
		t[i] = f(i)
	}
	return t
}

func bigPow2(n uint, neg bool) *big.Int {
	v := new(big.Int).Lsh(big.NewInt(1), n)
	if neg {
		v.Neg(v)
	}
	return v
}

var pickleCases = []pickleCase{
	{`'UCM_HASH_SEED'`, func() any { return "UCM_HASH_SEED" }, 28, "b51255085fd1619b797a4f6fad1cf807",
		"80059511000000000000008c0d55434d5f484153485f53454544942e"},
	{`(b'\x00'*16, (1, 2, 3, 4))`, func() any { return PickleTuple{make([]byte, 16), []uint32{1, 2, 3, 4}} },
		44, "50486054c31a4dadf7e384e8154f75e7",
		"800595210000000000000043100000000000000000000000000000000094284b014b024b034b04749486942e"},
	{`(bytes(range(16)), (0, 255, 256, 65535, 65536, 2147483647, 2147483648, 4294967295))`, func() any {
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(i)
		}
		return PickleTuple{b, []uint32{0, 255, 256, 65535, 65536, 2147483647, 2147483648, 4294967295}}
	}, 70, "cc4baba856d2435327e2935a206296d1",
		"8005953b000000000000004310000102030405060708090a0b0c0d0e0f94284b004bff4d00014dffff4a000001004affffff7f8a0500000080008a05ffffffff00749486942e"},
	{`(-1, -128, -129, -32768, -2147483648, -2147483649, 2**63, -2**63, 2**64, -2**64, 2**2100, -2**2100)`, func() any {
		return PickleTuple{-1, -128, int64(-129), -32768, -2147483648, int64(-2147483649), uint64(1) << 63,
			int64(-1 << 63), bigPow2(64, false), bigPow2(64, true), bigPow2(2100, false), bigPow2(2100, true)}
	}, 626, "1c99da31dc9c0b8fe3422820cc588eb2", ""},
	{`()`, func() any { return PickleTuple{} }, 4, "e71d7d1332fe9c82992798dc37f38e43", "8005292e"},
	{`(1,)`, func() any { return PickleTuple{1} }, 16, "289f603dcbfb783e374426b46a6f5fde", "80059505000000000000004b0185942e"},
	{`(1, 2)`, func() any { return []uint32{1, 2} }, 18, "092a536dfcfc142dd61a4461f1db5e57", "80059507000000000000004b014b0286942e"},
	{`(1, 2, 3)`, func() any { return PickleTuple{1, 2, 3} }, 20, "af748d44ff853b26c3685561d522d777", "80059509000000000000004b014b024b0387942e"},
	{`((), (1,), ((1, 2), 'é'))`, func() any { return PickleTuple{PickleTuple{}, PickleTuple{1}, PickleTuple{[]uint32{1, 2}, "é"}} },
		32, "33bf4a45cbc809c3b65359ffeef56ec5", "8005951500000000000000294b0185944b014b0286948c02c3a994869487942e"},
	{`b'x'*255`, func() any { return bytes.Repeat([]byte("x"), 255) }, 270, "95a635124cae0e8119eadb4ba315c75c", ""},
	{`b'x'*256`, func() any { return bytes.Repeat([]byte("x"), 256) }, 274, "2b46ba6b97eac69b6c7712dcd0a0d850", ""},
	{`'é'*200`, func() any { return strings.Repeat("é", 200) }, 418, "fbd046aa1592ae579fcc1f232f049d8e", ""},
	{`tuple(range(20000))`, func() any { return rep(20000, func(i int) int { return i }) }, 59759, "72dfa4ec448dc799de9d25b894e978c0", ""},
	// One frame past 64 KiB: a frame ends only before a value, and the last
	// int starts at 65535.
	{`(b'p'*16, tuple([70000]*13104))`, func() any {
		t := make([]uint32, 13104)
		for i := range t {
			t[i] = 70000
		}
		return PickleTuple{bytes.Repeat([]byte("p"), 16), t}
	}, 65556, "2f08e557b97b602276a52668b7d99b4f", ""},
	// Frames end before the first value once they reach 64 KiB.
	{`tuple('s%05d' % i + 'x' * 20 for i in range(5000))`, func() any {
		return rep(5000, func(i int) string { return fmt.Sprintf("s%05d", i) + strings.Repeat("x", 20) })
	}, 145033, "9b86377226d2988b3d539917c0b4cae6", ""},
	{`tuple((i, (i, i + 1)) for i in range(20000))`, func() any {
		return rep(20000, func(i int) PickleTuple { return PickleTuple{i, []uint32{uint32(i), uint32(i + 1)}} })
	}, 259275, "442cbe0d8d5c90ca7666d6f4e35fe498", ""},
	// Values of 64 KiB or more go outside any frame.
	{`(b'a'*70000, 'b'*65536, (1, b'c'*65535))`, func() any {
		return PickleTuple{bytes.Repeat([]byte("a"), 70000), strings.Repeat("b", 65536),
			PickleTuple{1, bytes.Repeat([]byte("c"), 65535)}}
	}, 201107, "2c4b58013fe7304c3ea38962fffe1ac9", ""},
	{`b'z'*65536`, func() any { return bytes.Repeat([]byte("z"), 65536) }, 65545, "260dcf2e8086431a57d81fca04bee627", ""},
	{`'z'*3`, func() any { return "zzz" }, 18, "8d33be23d644b198e02334627e4a82cd", "80059507000000000000008c037a7a7a942e"},
}

func digest(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

func TestPickleVectors(t *testing.T) {
	for _, c := range pickleCases {
		got, err := Pickle(c.v())
		if err != nil {
			t.Fatalf("Pickle(%s): %v", c.py, err)
		}
		if len(got) != c.n || digest(got) != c.md5 {
			t.Errorf("Pickle(%s): %d bytes, md5 %s; Python: %d bytes, md5 %s", c.py, len(got), digest(got), c.n, c.md5)
		}
		if c.hex != "" && hex.EncodeToString(got) != c.hex {
			t.Errorf("Pickle(%s) = %x, Python %s", c.py, got, c.hex)
		}
	}
	if _, err := Pickle(1.5); err == nil {
		t.Error("Pickle(float) succeeded")
	}
}

// pythonPickles runs testdata/pickle_vectors.py on the expressions and
// returns its "<len> <md5>" lines; it skips the test without python3.
func pythonPickles(t *testing.T, exprs []string) []string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the fixed vectors of TestPickleVectors still apply")
	}
	cmd := exec.Command(py, "testdata/pickle_vectors.py")
	cmd.Stdin = strings.NewReader(strings.Join(exprs, "\n") + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 testdata/pickle_vectors.py: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(exprs) {
		t.Fatalf("python3 printed %d lines for %d expressions", len(lines), len(exprs))
	}
	return lines
}

// TestPickleAgainstPython checks the fixed vectors, and random nested
// values, against the python3 of this machine.
func TestPickleAgainstPython(t *testing.T) {
	var exprs []string
	var want []string
	for _, c := range pickleCases {
		exprs = append(exprs, c.py)
		want = append(want, fmt.Sprintf("%d %s", c.n, c.md5))
	}
	r := rand.New(rand.NewPCG(14, 14))
	var values []any
	seq := 0
	for i := 0; i < 80; i++ {
		v, py := randomValue(r, 3, &seq)
		values = append(values, v)
		exprs = append(exprs, py)
	}
	got := pythonPickles(t, exprs)
	for i, c := range pickleCases {
		if got[i] != want[i] {
			t.Errorf("python3 pickles %s as %s, the fixed vector says %s", c.py, got[i], want[i])
		}
	}
	for i, v := range values {
		b, err := Pickle(v)
		if err != nil {
			t.Fatal(err)
		}
		if g, p := fmt.Sprintf("%d %s", len(b), digest(b)), got[len(pickleCases)+i]; g != p {
			t.Errorf("Pickle(%.200s...) = %s, python3 %s", exprs[len(pickleCases)+i], g, p)
		}
	}
}

// randomValue returns a random value and its Python expression. Python
// writes a back-reference for an object it already pickled, and one
// expression holds equal constants as one object, so every bytes, str and
// non-empty tuple it returns is unique: it starts with the next value of
// *seq.
func randomValue(r *rand.Rand, depth int, seq *int) (any, string) {
	*seq++
	n := *seq
	switch k := r.IntN(7); {
	case k <= 1 && depth > 0:
		size := []int{0, 1, 2, 3, 4, 17}[r.IntN(6)]
		if depth == 1 {
			size = []int{size, 3000, 14000}[r.IntN(3)]
		}
		if size == 0 {
			return PickleTuple{}, "()"
		}
		t, py := PickleTuple{n}, []string{strconv.Itoa(n)}
		for i := 1; i < size; i++ {
			v, p := randomValue(r, depth-1, seq)
			t, py = append(t, v), append(py, p)
		}
		return t, pyTuple(py)
	case k == 2:
		b := fmt.Appendf(nil, "%08d", n)
		for i := r.IntN([]int{16, 256, 70000}[min(depth, 2)]); i > 0; i-- {
			b = append(b, byte(r.Uint32()))
		}
		return b, "bytes.fromhex('" + hex.EncodeToString(b) + "')"
	case k == 3:
		s := fmt.Sprint(n) + strings.Repeat(string(rune('a'+r.IntN(26)))+"é\n\"", r.IntN(100+depth*9000))
		return s, strconv.Quote(s)
	case k == 4:
		toks := []uint32{uint32(n)}
		for i := []int{r.IntN(40), 13200, 20000}[r.IntN(3)] % (41 + depth*20000); i > 0; i-- {
			toks = append(toks, []uint32{r.Uint32N(256), r.Uint32N(65536), r.Uint32(), 4294967295, 151643}[r.IntN(5)])
		}
		py := make([]string, len(toks))
		for i, t := range toks {
			py[i] = strconv.FormatUint(uint64(t), 10)
		}
		return toks, pyTuple(py)
	default:
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		v := new(big.Int).SetBytes(b)
		if r.IntN(2) == 0 {
			v.Neg(v)
		}
		return v, v.String()
	}
}

// pyTuple is the Python expression of a tuple of the expressions elems.
func pyTuple(elems []string) string {
	if len(elems) == 0 {
		return "()"
	}
	return "(" + strings.Join(elems, ", ") + ",)"
}
