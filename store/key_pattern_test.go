package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/files"
)

// TestKeyPattern: a files model's user.ucm.key_pattern reads the hash
// from SGLang-like names; without one the default rule (vLLM's names)
// applies; a pattern without exactly one group, or not RE2, is refused.
func TestKeyPattern(t *testing.T) {
	s := newTestStore(t, Options{Layout: files.Name})
	s.Models().Add("sg")
	a := s.Models().Attrs("sg", 0)
	vllm := format.FileKey("sg", "abc/de_g0/"+"abcdef0000000000000000000000000000000000000000000000000000000102.bin")
	sglang := format.FileKey("sg", "00000000000000000000000000000000000000000000000000000000000000ff_qwen_0_1.bin")
	if h, ok := s.EngineHash(vllm); !ok || h != 0x102 {
		t.Errorf("default rule: %x %v", h, ok)
	}
	if _, ok := s.EngineHash(sglang); ok {
		t.Error("default rule: a hash from a name it does not fit")
	}
	for _, bad := range []string{`^([0-9a-f]+)_(.*)$`, `^[0-9a-f]+$`, `(`} {
		if err := a.Set("key_pattern", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("key_pattern %q: %v, want ErrInvalid", bad, err)
		}
	}
	if err := a.Set("key_pattern", `^([0-9a-f]{64})_`); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.Get("key_pattern"); v != `^([0-9a-f]{64})_` {
		t.Errorf("key_pattern reads %q", v)
	}
	if h, ok := s.EngineHash(sglang); !ok || h != 0xff {
		t.Errorf("pattern: %x %v", h, ok)
	}
	if _, ok := s.EngineHash(vllm); ok {
		t.Error("pattern: a hash from a name it does not match")
	}
	if err := a.Set("key_pattern", "default"); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.Get("key_pattern"); v != "default" {
		t.Errorf("after default: %q", v)
	}
}

// TestKeyPatternReannounces: a key_pattern set on a model that holds a
// file (in memory and written back) journals, per tier, its removal
// under the default rule's hash and then its storing under the
// pattern's; a later removal of the file says the pattern's hash.
func TestKeyPatternReannounces(t *testing.T) {
	s := newTestStore(t, Options{Layout: files.Name})
	s.Models().Add("sg")
	k := format.FileKey("sg", "000000000000000a"+strings.Repeat("0", 47)+"b.bin")
	if _, err := publish(t, s, k, []byte("kv")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background(), "sg"); err != nil {
		t.Fatal(err)
	}
	from := s.Events().Next()
	if err := s.Models().Attrs("sg", 0).Set("key_pattern", `^([0-9a-f]{16})`); err != nil {
		t.Fatal(err)
	}
	if err := s.stack.Delete(k); err != nil {
		t.Fatal(err)
	}
	buf := make([]events.Event, 16)
	n, _, _ := s.Events().Read(from, buf)
	var got []string
	for _, e := range buf[:n] {
		got = append(got, fmt.Sprintf("%s %d %x %v", e.Type, e.Tier, e.Hash, e.HasHash))
	}
	// The removal goes from the directory tier first, then memory (a
	// removal a tier fails keeps memory's copy: tiers.Stack.remove).
	want := []string{"removed 0 b true", "stored 0 a true", "removed 1 b true", "stored 1 a true", "removed 1 a true", "removed 0 a true"}
	if !slices.Equal(got, want) {
		t.Errorf("journal:\n got %q\nwant %q", got, want)
	}
}

// TestKeyPatternBounded: a key_pattern of 256 bytes that compiles to a
// program of megabytes is refused, and an owner setting one pattern
// after another leaves a bounded number of them compiled.
func TestKeyPatternBounded(t *testing.T) {
	s := newTestStore(t, Options{Layout: files.Name})
	s.Models().Add("sg")
	a := s.Models().Attrs("sg", 0)
	for _, huge := range []string{"^([0-9a-f]{16})" + strings.Repeat(`\pL{999}`, 24), `^([0-9a-f]{16})_\pL{900}`} {
		if err := a.Set("key_pattern", huge); !errors.Is(err, ErrInvalid) {
			t.Errorf("a pattern of %d bytes compiling to megabytes: %v, want ErrInvalid", len(huge), err)
		}
	}
	before := heapInUse()
	const n = 300
	for i := range n {
		p := fmt.Sprintf(`^([0-9a-f]{16})_%d_\pL[a-z]{900}`, i) // ~100 KiB compiled
		if err := a.Set("key_pattern", p); err != nil {
			t.Fatal(err)
		}
	}
	grown := heapInUse() - before
	t.Logf("%d patterns set one after another: the heap grew by %d KiB", n, grown>>10)
	if grown > 16<<20 {
		t.Errorf("%d patterns set one after another grew the heap by %d MiB", n, grown>>20)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
