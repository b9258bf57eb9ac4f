package fs

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/sparse"
)

// blockShape is the layout of a test block with stated heads and dim.
type blockShape struct {
	layers, tokens, heads, dim int
	dtype                      format.Dtype
}

// small is the shape most sidecar tests use: 2 layers of 5 tokens, 3
// heads of 8 float32 values (K and V).
var small = blockShape{layers: 2, tokens: 5, heads: 3, dim: 8, dtype: format.Float32}

// floatBlock builds block n of model with shape: random keys and values
// (normal, seeded by n), K and V per layer. Blocks with the same seed
// and shape have the same payload whatever their n.
func floatBlock(model string, n int, sh blockShape, seed uint64) (format.Key, []byte) {
	id := format.ID(md5.Sum([]byte(fmt.Sprintf("%s/float/%d", model, n))))
	elems := sh.layers * 2 * sh.tokens * sh.heads * sh.dim
	payload := make([]byte, elems*sh.dtype.Size())
	r := rand.New(rand.NewPCG(seed, 7))
	for i := 0; i < elems; i++ {
		v := float32(r.NormFloat64())
		switch sh.dtype {
		case format.Float32:
			binary.LittleEndian.PutUint32(payload[4*i:], math.Float32bits(v))
		case format.BFloat16:
			binary.LittleEndian.PutUint16(payload[2*i:], uint16(math.Float32bits(v)>>16))
		default:
			payload[i] = byte(r.Uint32())
		}
	}
	h := format.BlockHeader{ID: id, NumLayers: uint32(sh.layers), BlockSize: uint32(sh.tokens), Dtype: sh.dtype,
		NumKVHeads: uint32(sh.heads), HeadDim: uint32(sh.dim), TensorsPerLayer: 2}
	return format.Key{Model: model, ID: id}, format.NewBlock(h, payload)
}

// keyMeans is the reference kind-0 data of a float32 block: per layer and
// head the mean of its block_size key vectors, summed in float64 in token
// order and rounded once. Layout [layers][heads][1][dim].
func keyMeans(block []byte, sh blockShape) []float32 {
	out := make([]float32, 0, sh.layers*sh.heads*sh.dim)
	tensor := sh.tokens * sh.heads * sh.dim
	for l := 0; l < sh.layers; l++ {
		k := format.HeaderSize + 4*(l*2*tensor) // tensor 0 of layer l
		for h := 0; h < sh.heads; h++ {
			for d := 0; d < sh.dim; d++ {
				var sum float64
				for tok := 0; tok < sh.tokens; tok++ {
					off := k + 4*((tok*sh.heads+h)*sh.dim+d)
					sum += float64(math.Float32frombits(binary.LittleEndian.Uint32(block[off:])))
				}
				out = append(out, float32(sum/float64(sh.tokens)))
			}
		}
	}
	return out
}

// sidecarKey is the sidecar key of a block key.
func sidecarKey(k format.Key) format.Key {
	return format.Key{Model: k.Model, ID: k.ID, Kind: format.Repr}
}

// mustDerive derives the sidecar of kind and param of a block.
func mustDerive(t testing.TB, block []byte, kind format.ReprKind, param uint32) []byte {
	t.Helper()
	r, err := sparse.Derive(block, kind, param)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeNoExcl creates path with O_CREAT|O_WRONLY (no O_EXCL), writes
// data and returns close's error: how an engine writes its own sidecar
// over a derivable one.
func writeNoExcl(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// newTestLogger logs into h (warnings and above) and, with
// UCMFS_TEST_LOG set, to stderr too.
func newTestLogger(h *countHandler) *slog.Logger {
	if os.Getenv("UCMFS_TEST_LOG") != "" {
		return slog.New(teeHandler{h, testLogger().Handler()})
	}
	return slog.New(h)
}

// teeHandler sends each record to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}
func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if t.a.Enabled(ctx, r.Level) {
		t.a.Handle(ctx, r)
	}
	if t.b.Enabled(ctx, r.Level) {
		t.b.Handle(ctx, r)
	}
	return nil
}
func (t teeHandler) WithAttrs([]slog.Attr) slog.Handler { return t }
func (t teeHandler) WithGroup(string) slog.Handler      { return t }

// reset forgets the records counted so far.
func (h *countHandler) reset() {
	h.mu.Lock()
	h.n = 0
	h.mu.Unlock()
}

// count is the number of records counted.
func (h *countHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}
