package format

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
)

// PickleProtocol is the pickle protocol Pickle writes: 5, Python's
// pickle.HIGHEST_PROTOCOL since Python 3.8.
const PickleProtocol = 5

// PickleTuple is a Python tuple for Pickle.
type PickleTuple []any

// The pickle opcodes Pickle writes.
const (
	opProto          = 0x80
	opFrame          = 0x95
	opStop           = '.'
	opMark           = '('
	opTuple          = 't'
	opEmptyTuple     = ')'
	opTuple1         = 0x85
	opBinInt         = 'J'
	opBinInt1        = 'K'
	opBinInt2        = 'M'
	opLong1          = 0x8a
	opLong4          = 0x8b
	opShortBinBytes  = 'C'
	opBinBytes       = 'B'
	opBinBytes8      = 0x8e
	opShortBinUnicod = 0x8c
	opBinUnicode     = 'X'
	opBinUnicode8    = 0x8d
	opMemoize        = 0x94
)

// Framing constants of CPython's pickler: a frame is committed once it
// holds frameTarget bytes, a frame under frameMin bytes gets no FRAME
// opcode, and a bytes or str value of frameTarget bytes or more is
// written outside any frame.
const (
	frameTarget = 64 << 10
	frameMin    = 4
	frameHeader = 9
)

// Pickle returns what Python's pickle.dumps(v, protocol=5) returns (the C
// pickler of CPython 3.8 and later), for the values UCM hashes: []byte
// (bytes), string (str, UTF-8), int, int64, uint32, uint64 and *big.Int
// (int), []uint32 (a tuple of ints) and PickleTuple (a tuple of any of
// these). Python memoizes values by identity and writes a back-reference
// when the same object occurs twice; Pickle writes every value in full, as
// Python does for distinct objects. Any other type is an error.
func Pickle(v any) ([]byte, error) {
	p := pickler{buf: []byte{opProto, PickleProtocol}, frame: -1, framing: true}
	if err := p.save(v); err != nil {
		return nil, err
	}
	p.write(opStop)
	p.commitFrame()
	return p.buf, nil
}

// pickler mirrors the output buffer and framing of CPython's C pickler.
type pickler struct {
	buf     []byte
	frame   int // offset of the open frame's header, -1 when none is open
	framing bool
}

// write appends b, opening a frame first when none is open.
func (p *pickler) write(b ...byte) {
	if p.framing && p.frame < 0 {
		p.frame = len(p.buf)
		p.buf = append(p.buf, make([]byte, frameHeader)...)
	}
	p.buf = append(p.buf, b...)
}

// commitFrame closes the open frame: its FRAME opcode and length, or no
// header at all when it holds fewer than frameMin bytes.
func (p *pickler) commitFrame() {
	if p.frame < 0 {
		return
	}
	n := len(p.buf) - p.frame - frameHeader
	if n >= frameMin {
		p.buf[p.frame] = opFrame
		binary.LittleEndian.PutUint64(p.buf[p.frame+1:], uint64(n))
	} else {
		copy(p.buf[p.frame:], p.buf[p.frame+frameHeader:])
		p.buf = p.buf[:len(p.buf)-frameHeader]
	}
	p.frame = -1
}

// boundary commits the open frame once it reached frameTarget bytes; the
// C pickler checks this before saving any value.
func (p *pickler) boundary() {
	if p.frame >= 0 && len(p.buf)-p.frame-frameHeader >= frameTarget {
		p.commitFrame()
	}
}

// writeData writes an opcode's header and then its data; data of
// frameTarget bytes or more goes outside any frame.
func (p *pickler) writeData(header, data []byte) {
	if len(data) < frameTarget {
		p.write(header...)
		p.write(data...)
		return
	}
	p.commitFrame()
	p.framing = false
	p.write(header...)
	p.write(data...)
	p.framing = true
}

func (p *pickler) save(v any) error {
	p.boundary()
	switch x := v.(type) {
	case int:
		p.int64(int64(x))
		return nil
	case int64:
		p.int64(x)
		return nil
	case uint32:
		p.int64(int64(x))
		return nil
	case uint64:
		p.bigInt(new(big.Int).SetUint64(x))
		return nil
	case *big.Int:
		p.bigInt(x)
		return nil
	}
	switch x := v.(type) {
	case []byte:
		p.sized(x, opShortBinBytes, opBinBytes, opBinBytes8)
	case string:
		p.sized([]byte(x), opShortBinUnicod, opBinUnicode, opBinUnicode8)
	case []uint32:
		p.tupleOf(len(x), func(i int) error { p.boundary(); p.int64(int64(x[i])); return nil })
	case PickleTuple:
		return p.tupleOf(len(x), func(i int) error { return p.save(x[i]) })
	default:
		return fmt.Errorf("pickle: cannot encode a %T", v)
	}
	return nil
}

// sized writes a bytes or str value with the opcode its length calls
// for (1-, 4- or 8-byte length), then MEMOIZE.
func (p *pickler) sized(b []byte, short, long, huge byte) {
	var h []byte
	switch n := uint64(len(b)); {
	case n <= math.MaxUint8:
		h = []byte{short, byte(n)}
	case n <= math.MaxUint32:
		h = binary.LittleEndian.AppendUint32([]byte{long}, uint32(n))
	default:
		h = binary.LittleEndian.AppendUint64([]byte{huge}, n)
	}
	p.writeData(h, b)
	p.write(opMemoize)
}

// tupleOf writes a tuple of n elements, saving element i with elem:
// EMPTY_TUPLE (not memoized), TUPLE1..3 after up to three elements, or
// MARK, the elements, TUPLE; then MEMOIZE.
func (p *pickler) tupleOf(n int, elem func(i int) error) error {
	if n == 0 {
		p.write(opEmptyTuple)
		return nil
	}
	if n > 3 {
		p.write(opMark)
	}
	for i := 0; i < n; i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	if n > 3 {
		p.write(opTuple)
	} else {
		p.write(opTuple1 + byte(n-1))
	}
	p.write(opMemoize)
	return nil
}

// int64 writes an int: BININT1 (0..255), BININT2 (256..65535), BININT
// (the rest of the signed 32-bit range) or LONG1.
func (p *pickler) int64(v int64) {
	switch {
	case v >= 0 && v <= math.MaxUint8:
		p.write(opBinInt1, byte(v))
	case v >= 0 && v <= math.MaxUint16:
		p.write(opBinInt2, byte(v), byte(v>>8))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		p.write(binary.LittleEndian.AppendUint32([]byte{opBinInt}, uint32(v))...)
	default:
		p.bigInt(big.NewInt(v))
	}
}

// bigInt writes an int of any size: as int64 does when it fits 32 bits,
// else LONG1 (or LONG4 past 255 bytes) with the shortest little-endian
// two's complement.
func (p *pickler) bigInt(v *big.Int) {
	if v.IsInt64() && v.Int64() >= math.MinInt32 && v.Int64() <= math.MaxInt32 {
		p.int64(v.Int64())
		return
	}
	b := twosComplementLE(v)
	if len(b) <= math.MaxUint8 {
		p.write(opLong1, byte(len(b)))
	} else {
		p.write(binary.LittleEndian.AppendUint32([]byte{opLong4}, uint32(len(b)))...)
	}
	p.write(b...)
}

// twosComplementLE is the shortest little-endian two's complement of v
// (v != 0), as Python's int.to_bytes(..., "little", signed=True) with the
// fewest bytes.
func twosComplementLE(v *big.Int) []byte {
	n := v.BitLen()/8 + 1
	x := new(big.Int).Set(v)
	if v.Sign() < 0 {
		x.Add(x, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	be := x.FillBytes(make([]byte, n))
	if v.Sign() < 0 && n > 1 && be[0] == 0xff && be[1]&0x80 != 0 {
		be = be[1:]
	}
	for i, j := 0, len(be)-1; i < j; i, j = i+1, j-1 {
		be[i], be[j] = be[j], be[i]
	}
	return be
}
