// Package tiertest is the conformance suite of tiers.Tier: one set of
// tests that every tier implementation (memory, directory) passes, so the
// stack can rely on the same publish, read, remove and accounting
// semantics whichever tier holds a block.
package tiertest

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// Run runs the suite. newTier returns a new, empty tier with room for at
// least 16 MiB, and registers its own cleanup; the suite may Close the
// tier itself first, so Close must be safe to call twice.
func Run(t *testing.T, newTier func(t *testing.T) tiers.Tier) {
	tests := []struct {
		name string
		fn   func(t *testing.T, tier tiers.Tier)
	}{
		{"WriteCommitRead", testWriteCommitRead},
		{"WriteThroughFile", testWriteThroughFile},
		{"InvisibleBeforeCommit", testInvisibleBeforeCommit},
		{"Abort", testAbort},
		{"SecondCommitExists", testSecondCommitExists},
		{"Remove", testRemove},
		{"RemovedWhileOpen", testRemovedWhileOpen},
		{"List", testList},
		{"Usage", testUsage},
		{"ConcurrentDistinct", testConcurrentDistinct},
		{"ConcurrentSameKey", testConcurrentSameKey},
		{"CRC", testCRC},
		{"NotFound", testNotFound},
		{"BlockAndRepr", testBlockAndRepr},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newTier(t)) })
	}
}

// Key returns a deterministic key of model: the n-th block id.
func Key(model string, n int) format.Key {
	return format.Key{Model: model, ID: format.ID(md5.Sum(fmt.Appendf(nil, "%s/%d", model, n))), Kind: format.Block}
}

// Payload returns size deterministic pseudo-random bytes for seed.
func Payload(seed uint64, size int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(size)))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Put writes data under key (in chunks, through Write) and commits it.
func Put(t testing.TB, tier tiers.Tier, key format.Key, data []byte, opts tiers.CommitOptions) tiers.Info {
	t.Helper()
	info, err := put(tier, key, data, opts)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return info
}

// put is Put returning the Commit error instead of failing.
func put(tier tiers.Tier, key format.Key, data []byte, opts tiers.CommitOptions) (tiers.Info, error) {
	w, err := tier.Create(key)
	if err != nil {
		return tiers.Info{}, fmt.Errorf("create: %w", err)
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+len(data)/3)
		if _, err := w.Write(rest[:n]); err != nil {
			w.Abort()
			return tiers.Info{}, fmt.Errorf("write: %w", err)
		}
		rest = rest[n:]
	}
	return w.Commit(opts)
}

// Read returns the bytes of key's published file.
func Read(t testing.TB, tier tiers.Tier, key format.Key) []byte {
	t.Helper()
	f, err := tier.Open(key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

// wantErr fails unless errors.Is(err, target).
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// wantUsage fails unless the tier reports exactly files and used bytes.
func wantUsage(t testing.TB, tier tiers.Tier, files, used int64) {
	t.Helper()
	u := tier.Usage()
	if u.Files != files || u.Used != used {
		t.Fatalf("usage: %d files, %d bytes; want %d files, %d bytes", u.Files, u.Used, files, used)
	}
	if u.Used > u.Capacity {
		t.Fatalf("usage: %d bytes used over capacity %d", u.Used, u.Capacity)
	}
}

// listed returns the Infos List gives for model.
func listed(tier tiers.Tier, model string) map[format.Key]tiers.Info {
	out := make(map[format.Key]tiers.Info)
	tier.List(model, func(info tiers.Info) bool {
		out[info.Key] = info
		return true
	})
	return out
}

func testWriteCommitRead(t *testing.T, tier tiers.Tier) {
	var total int64
	for i, size := range []int{0, 1, 64, 4096 + 7, 300 << 10} {
		key := Key("m", i)
		data := Payload(uint64(i), size)
		info := Put(t, tier, key, data, tiers.CommitOptions{})
		if info.Key != key || info.Size != int64(size) || info.MTime.IsZero() {
			t.Fatalf("commit info %+v, want key %s size %d and a publish time", info, key, size)
		}
		st, err := tier.Stat(key)
		if err != nil || st.Key != key || st.Size != int64(size) {
			t.Fatalf("stat %s: %+v %v", key, st, err)
		}
		if got := Read(t, tier, key); !bytes.Equal(got, data) {
			t.Fatalf("%s: read %d bytes that differ from the %d written", key, len(got), size)
		}
		total += int64(size)
	}
	wantUsage(t, tier, 5, total)
	// Reads at any offset.
	f, err := tier.Open(Key("m", 4))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1000)
	if _, err := f.ReadAt(buf, 12345); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, Payload(4, 300<<10)[12345:13345]) {
		t.Fatal("ReadAt at an offset returned other bytes")
	}
}

func testWriteThroughFile(t *testing.T, tier tiers.Tier) {
	key := Key("m", 1)
	data := Payload(7, 10000)
	w, err := tier.Create(key)
	if err != nil {
		t.Fatal(err)
	}
	f := w.File()
	if _, err := f.WriteAt(data[5000:], 5000); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data[:5000], 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(tiers.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := Read(t, tier, key); !bytes.Equal(got, data) {
		t.Fatal("bytes written with pwrite on File differ after commit")
	}
}

// BlockFile is a valid block file of id: 2 layers of 4 float16 tokens, 2
// KV heads of dim 8, a payload that depends on id.
func BlockFile(id format.ID) []byte {
	h := format.BlockHeader{ID: id, NumLayers: 2, BlockSize: 4, Dtype: format.Float16, NumKVHeads: 2, HeadDim: 8}
	payload := make([]byte, 2*2*4*2*8*2)
	for i := range payload {
		payload[i] = byte(i*13 + int(id[0]))
	}
	return format.NewBlock(h, payload)
}

// ReprFile is a valid mean-pooled sidecar of BlockFile(id).
func ReprFile(id format.ID) []byte {
	h := format.ReprHeader{ID: id, Kind: format.ReprMean, Dtype: format.Float16, NumLayers: 2, NumKVHeads: 2, Rows: 1, Dim: 8}
	return format.NewRepr(h, make([]byte, 2*2*1*8*2))
}

// WriteFile writes data read-only at dir/rel, creating the directories,
// and returns its path: a file put into a tier directory by hand.
func WriteFile(t testing.TB, dir, rel string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o444); err != nil {
		t.Fatal(err)
	}
	return p
}
