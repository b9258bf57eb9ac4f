package format

import "fmt"

// Dtype is the element type of a block's tensors (UCMB offset 32) and of a
// sidecar's vectors (UCMR offset 28).
type Dtype uint32

// The dtype enum of docs/spec.md §4.
const (
	Float16      Dtype = 0 // IEEE half, 2 bytes
	BFloat16     Dtype = 1 // bfloat16, 2 bytes
	Float32      Dtype = 2 // IEEE single, 4 bytes
	Float8E4M3FN Dtype = 3 // float8_e4m3fn, 1 byte
	Float8E5M2   Dtype = 4 // float8_e5m2, 1 byte
	Int8         Dtype = 5 // signed byte
	Uint8        Dtype = 6 // unsigned byte
)

var dtypeInfo = [...]struct {
	name string
	size int
}{
	Float16:      {"float16", 2},
	BFloat16:     {"bfloat16", 2},
	Float32:      {"float32", 4},
	Float8E4M3FN: {"float8_e4m3fn", 1},
	Float8E5M2:   {"float8_e5m2", 1},
	Int8:         {"int8", 1},
	Uint8:        {"uint8", 1},
}

// Valid reports whether d is one of the known dtypes.
func (d Dtype) Valid() bool { return uint64(d) < uint64(len(dtypeInfo)) }

// Size is the element size in bytes, or 0 for an unknown dtype.
func (d Dtype) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// String is the dtype's name as engines and xattrs spell it ("bfloat16"),
// or "dtype(N)" for an unknown value.
func (d Dtype) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", uint32(d))
	}
	return dtypeInfo[d].name
}

// ParseDtype parses a dtype name as String writes it.
func ParseDtype(s string) (Dtype, error) {
	for d, info := range dtypeInfo {
		if info.name == s {
			return Dtype(d), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown dtype %q", ErrFormat, s)
}

// ReprKind is the kind of representation a sidecar holds (UCMR offset 24).
type ReprKind uint32

// The sidecar kinds of docs/spec.md §5.
const (
	// ReprMean holds mean-pooled keys: one vector per head (rows = 1).
	ReprMean ReprKind = 0
	// ReprMax holds max-pooled keys: one vector per head (rows = 1).
	ReprMax ReprKind = 1
	// ReprMerged holds token-merged keys (KVStar): rows = block_size / merge,
	// param = merge factor.
	ReprMerged ReprKind = 2
	// ReprSignHash holds sign-hash bit codes (GSA): dtype uint8,
	// dim = hash_bits / 8, param = hash_bits.
	ReprSignHash ReprKind = 3
)

var reprKindNames = [...]string{
	ReprMean:     "mean",
	ReprMax:      "max",
	ReprMerged:   "merged",
	ReprSignHash: "signhash",
}

// Valid reports whether k is one of the known kinds.
func (k ReprKind) Valid() bool { return uint64(k) < uint64(len(reprKindNames)) }

// String is the kind's name ("mean", "max", "merged", "signhash"), or
// "kind(N)" for an unknown value.
func (k ReprKind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("kind(%d)", uint32(k))
	}
	return reprKindNames[k]
}

// ParseReprKind parses a kind name as String writes it.
func ParseReprKind(s string) (ReprKind, error) {
	for k, name := range reprKindNames {
		if name == s {
			return ReprKind(k), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown sidecar kind %q", ErrFormat, s)
}
