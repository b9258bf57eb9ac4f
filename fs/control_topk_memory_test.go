package fs

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// big is a 4 MiB block of 2-byte values: 32 layers of 32 tokens, 8 heads
// of 128 (K and V). Its merged:1 sidecar keeps every key, so a candidate
// of it takes 4 MiB of float32 in a topk index of every layer.
var big = blockShape{layers: 32, tokens: 32, heads: 8, dim: 128, dtype: format.BFloat16}

// TestTopKMemoryBounded: a topk request is sized by what it may cost
// before the daemon allocates it. 100 000 copies of one id of a 4 MiB
// block, a 3.3 MB line, rank that block once (it reserved 400 GB and
// killed the daemon: "fatal error: runtime: out of memory"); an index
// past control.MaxRequestMemory is E2BIG; sessions of one user that
// would hold more than control.MaxUserMemory together get ENOMEM, until
// one of them holds less.
func TestTopKMemoryBounded(t *testing.T) {
	m := newMount(t, Options{})
	if err := os.Mkdir(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	k, d := floatBlock(testModel, 1, big, 1)
	put(t, m.st, k, d)
	q := randomQuery(rand.New(rand.NewPCG(9, 9)), big.layers*big.heads*big.dim)
	ask := func(c *ctl, ids []format.ID) string {
		return c.ask(topkLine(testModel, "merged:1", "all", 4, big.heads, big.dim, q, ids))
	}
	copies := make([]format.ID, control.MaxIDs)
	for i := range copies {
		copies[i] = k.ID
	}
	c := openCtl(t, m, "topk")
	if a := ask(c, copies); !strings.HasPrefix(a, "ok n=1 missing=0 "+k.ID.String()+":") {
		t.Fatalf("100000 copies of one id: %.200q, want it ranked once", a)
	}

	// The block and absent ids: each may have a sidecar of 4 MiB.
	withAbsent := func(n int) []format.ID {
		ids := []format.ID{k.ID}
		for _, a := range absentKeys(testModel, n) {
			ids = append(ids, a.ID)
		}
		return ids
	}
	perCand := int64(big.layers * big.heads * big.tokens * big.dim * 4)
	tooMany := int(control.MaxRequestMemory/perCand) + 1 // one more than a request may hold
	if a := ask(c, withAbsent(tooMany)); errnoOfAnswer(a) != "E2BIG" {
		t.Fatalf("an index of %d candidates of %d bytes: %.200q, want E2BIG", tooMany+1, perCand, a)
	}

	// Sessions of one user, each holding an index of nearly a request's
	// most (the absent candidates count: the index is sized before their
	// sidecars are looked for).
	near := tooMany - 10
	perSession := int64(near+1) * (perCand + 128) // and what it keeps of each beside
	fit := int(control.MaxUserMemory / perSession)
	sessions := []*ctl{c}
	for i := 1; i <= fit; i++ {
		sessions = append(sessions, openCtl(t, m, "topk"))
	}
	for i, s := range sessions[:fit] {
		if a := ask(s, withAbsent(near)); !strings.HasPrefix(a, "ok n=1 missing=") {
			t.Fatalf("session %d of %d: %.200q", i+1, fit, a)
		}
	}
	last := sessions[fit]
	if a := ask(last, withAbsent(near)); errnoOfAnswer(a) != "ENOMEM" {
		t.Fatalf("session %d, past the user's %d bytes: %.200q, want ENOMEM", fit+1, int64(control.MaxUserMemory), a)
	}
	// One session asks a small request: its index, and what it holds,
	// shrink; the refused one fits now.
	if a := ask(sessions[0], []format.ID{k.ID}); !strings.HasPrefix(a, "ok n=1 missing=0") {
		t.Fatalf("a small request: %.200q", a)
	}
	if a := ask(last, withAbsent(near)); !strings.HasPrefix(a, "ok n=1 missing=") {
		t.Fatalf("once another session holds less: %.200q", a)
	}
}

// TestDeriveBoundedByMaxFileSize: a block larger than the mount's
// max-file-size (a host writing a shared tier put it there: no write
// through the mount makes one) is not read whole to derive its sidecar:
// a stat or read of its <id>.repr is EFBIG, and topk reports it missing.
// A block within the limit derives as before.
func TestDeriveBoundedByMaxFileSize(t *testing.T) {
	m := newMount(t, Options{}, store.Options{MaxFileSize: 1 << 20})
	if err := os.Mkdir(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	large, ld := floatBlock(testModel, 1, big, 1) // 4 MiB
	put(t, m.st, large, ld)
	fine, fd := floatBlock(testModel, 2, small, 2)
	put(t, m.st, fine, fd)
	if _, err := os.Stat(m.keyPath(sidecarKey(large))); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("stat of the large block's sidecar: %v, want EFBIG", err)
	}
	if _, err := os.ReadFile(m.keyPath(sidecarKey(large))); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("read of the large block's sidecar: %v, want EFBIG", err)
	}
	if _, err := os.ReadFile(m.keyPath(sidecarKey(fine))); err != nil {
		t.Errorf("read of a small block's sidecar: %v", err)
	}
	c := openCtl(t, m, "topk")
	q := randomQuery(rand.New(rand.NewPCG(9, 9)), big.heads*big.dim)
	a := c.ask(topkLine(testModel, "mean", "0", 1, big.heads, big.dim, q, []format.ID{large.ID}))
	if a != "ok n=0 missing=1 missing "+large.ID.String() {
		t.Errorf("topk of the large block: %q, want it missing", a)
	}
}
