package control

import (
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// These tests drive the control protocol without a kernel: bytes in,
// bytes out, over a real stack in temporary directories.

const testModel = "meta-llama--Llama-3.1-8B"

// testErrName names the sentinels these tests meet as the FUSE adapter
// does; anything else is EIO.
func testErrName(err error) (string, bool) {
	for _, r := range []struct {
		target error
		name   string
	}{{ErrBackpressure, "ENOBUFS"}, {line.ErrInvalid, "EINVAL"}, {line.ErrTooMany, "E2BIG"}, {store.ErrNotFound, "ENOENT"}, {line.ErrAccess, "EACCES"}} {
		if errors.Is(err, r.target) {
			return r.name, true
		}
	}
	return "EIO", false
}

// newTestEnv builds a store of a 64 MiB memory tier over an nvme tier,
// with n blocks of testModel, and the environment of its sessions. The
// blocks are written back before it returns, so no background work runs
// (and allocates) while a test measures.
func newTestEnv(t testing.TB, n int) (*Env, []format.Key) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := tiertest.NewStack(t, log, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme"})
	keys := make([]format.Key, n)
	for i := range keys {
		keys[i] = testKey(i)
		h := format.BlockHeader{ID: keys[i].ID, NumLayers: 2, BlockSize: 4, Dtype: format.BFloat16}
		if _, err := st.Put(keys[i], format.NewBlock(h, make([]byte, 64)), true); err != nil {
			t.Fatal(err)
		}
	}
	core, err := store.New(st, store.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(core.Close)
	return NewEnv(core, nil, nil, testErrName), keys
}

// testKey is the key of block i of testModel.
func testKey(i int) format.Key {
	return format.Key{Model: testModel, ID: format.ID(md5.Sum(fmt.Appendf(nil, "%s/%d", testModel, i)))}
}

// TestSessionUnreadLimit: a write while more than the limit of answer
// bytes wait unread fails with ErrBackpressure (ENOBUFS), and works again
// once they are read. (A small limit.)
func TestSessionUnreadLimit(t *testing.T) {
	e, keys := newTestEnv(t, 1)
	ss := &Session{e: e, file: "lookup", h: &lookupSession{s: e}, limit: 20}
	req := []byte("exists " + testModel + " " + keys[0].ID.String() + "\n")
	for i := 0; i < 3; i++ {
		if _, err := ss.Write(t.Context(), req); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if _, err := ss.Write(t.Context(), req); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("write with 24 bytes unread: %v, want ENOBUFS", err)
	}
	buf := make([]byte, 100)
	if n, _ := ss.Read(t.Context(), buf); n != 3*len("ok 1 1\n") {
		t.Fatalf("read %d bytes", n)
	}
	if _, err := ss.Write(t.Context(), req); err != nil {
		t.Fatalf("write after reading: %v", err)
	}
	// One write of many requests stops at a line boundary past the limit.
	ss.Read(t.Context(), buf)
	many := []byte(strings.Repeat(string(req), 10))
	n, err := ss.Write(t.Context(), many)
	if err != nil || n != 3*len(req) {
		t.Fatalf("write of 10 requests: %d bytes taken (%v), want %d", n, err, 3*len(req))
	}
}

// TestSessionAnswers: each request line gets one answer line, a refused
// one "err <ERRNO> <message>" named by the front end; a line may come in
// pieces and a read answers an unterminated line.
func TestSessionAnswers(t *testing.T) {
	e, keys := newTestEnv(t, 1)
	lookup := fileNamed(t, "lookup")
	ss := lookup.Open(e)
	defer ss.Close()
	id := keys[0].ID.String()
	absent := testKey(99).ID.String()
	for _, part := range []string{"exists " + testModel, " " + id + " " + absent + "\nbogus\n", "\n", "exists " + testModel + " " + id} {
		if _, err := ss.Write(t.Context(), []byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 4096)
	n, _ := ss.Read(t.Context(), buf)
	got := string(buf[:n])
	n, _ = ss.Read(t.Context(), buf)
	got += string(buf[:n]) // the unterminated line, once the queue is read
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "ok 1 10" || !strings.HasPrefix(lines[1], "err EINVAL ") || lines[2] != "ok 1 1" {
		t.Fatalf("answers %q", got)
	}
	if e.store.Counters.Errors.Load() != 1 || e.store.Counters.Lookups.Load() != 2 {
		t.Errorf("counters: errors %d, lookups %d", e.store.Counters.Errors.Load(), e.store.Counters.Lookups.Load())
	}
}

// fileNamed finds a registered control file.
func fileNamed(t *testing.T, name string) File {
	t.Helper()
	for _, f := range table {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no control file %s", name)
	return File{}
}

// TestLookupAllocs: answering a lookup allocates nothing per id (the
// model name is the one allocation), once the session's buffers have
// grown.
func TestLookupAllocs(t *testing.T) {
	e, keys := newTestEnv(t, 100)
	l := &lookupSession{s: e}
	ids := keys
	for i := range 100 {
		ids = append(ids, testKey(1_000_000+i))
	}
	var list strings.Builder
	for i, k := range ids {
		if i > 0 {
			list.WriteByte(' ')
		}
		list.WriteString(k.ID.String())
	}
	for _, verb := range []string{"exists", "prefix"} {
		req := []byte(verb + " " + testModel + " " + list.String())
		out := make([]byte, 0, 4096)
		allocs := testing.AllocsPerRun(20, func() {
			var err error
			if out, err = l.answer(t.Context(), req, out[:0]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 2 {
			t.Errorf("%s of %d ids: %v allocations", verb, len(ids), allocs)
		}
	}
}

// TestHybridRequest: the hybrid lookup of the seed's example (block 16,
// a full group and a window-32 group of 7 blocks each; block 5 of the
// window group lost) hits 80 tokens and names the blocks to load.
func TestHybridRequest(t *testing.T) {
	e, _ := newTestEnv(t, 0)
	ids := func(g int) []format.Key {
		keys := make([]format.Key, 7)
		for i := range keys {
			keys[i] = testKey(100*g + i)
			keys[i].Model = fmt.Sprintf("%s.g%d", testModel, g)
		}
		return keys
	}
	req := "hybrid 119"
	for g := range 2 {
		model := fmt.Sprintf("%s.g%d", testModel, g)
		e.store.Models().Add(model)
		req += " " + model + " 16 7"
		for i, k := range ids(g) {
			req += " " + k.ID.String()
			if g == 1 && i == 5 {
				continue
			}
			h := format.BlockHeader{ID: k.ID, NumLayers: 2, BlockSize: 4, Dtype: format.BFloat16}
			putBlock(t, e, k, format.NewBlock(h, make([]byte, 64)))
		}
	}
	if err := e.store.Models().SetGroup(testModel+".g1", "swa:32"); err != nil {
		t.Fatal(err)
	}
	l := &lookupSession{s: e}
	out, err := l.answer(t.Context(), []byte(req), nil)
	if err != nil || string(out) != "ok 80 0-5 3-5\n" {
		t.Fatalf("hybrid: %q, %v", out, err)
	}
	if _, err := l.answer(t.Context(), []byte("hybrid 119 "+testModel+".g0 16 2 "+ids(0)[0].ID.String()), nil); !errors.Is(err, line.ErrInvalid) {
		t.Errorf("a short id list: %v, want line.ErrInvalid", err)
	}
}

// TestSessionDebugLines: at debug level every request logs what it did.
func TestSessionDebugLines(t *testing.T) {
	e, keys := newTestEnv(t, 1)
	var buf strings.Builder
	e.Log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ss := fileNamed(t, "lookup").Open(e)
	defer ss.Close()
	if _, err := ss.Write(t.Context(), []byte("exists "+testModel+" "+keys[0].ID.String()+"\n")); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, `msg="control request" file=.ucm/lookup`) || !strings.Contains(got, `answer="ok 1 1"`) {
		t.Errorf("debug log: %s", got)
	}
}

// putBlock publishes data as k through the store, as a GPU dump does.
func putBlock(t *testing.T, e *Env, k format.Key, data []byte) {
	t.Helper()
	pw, err := e.store.Tiers().Create(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.File().Write(data); err != nil {
		e.store.Tiers().Abort(pw)
		t.Fatal(err)
	}
	if _, err := e.store.Writes().Publish(pw, int64(len(data)), false); err != nil {
		t.Fatal(err)
	}
}

// TestFileTable: the files of .ucm/ have distinct names and distinct
// inode numbers in the reserved range, a Requests file has a handler and
// no mode of its own, a Stream neither (its mode is the control files'),
// and the others have a mode and no handler.
func TestFileTable(t *testing.T) {
	names, inos := map[string]bool{}, map[uint64]bool{}
	for _, f := range table {
		if names[f.Name] || inos[f.Ino] {
			t.Errorf("%s: name or inode number %d used twice", f.Name, f.Ino)
		}
		names[f.Name], inos[f.Ino] = true, true
		if f.Ino <= DirIno || f.Ino > LastIno {
			t.Errorf("%s: inode number %d outside (%d, %d]", f.Name, f.Ino, DirIno, LastIno)
		}
		if (f.Kind == Requests) != (f.open != nil) || (f.Kind == Requests || f.Kind == Stream) != (f.Perm == 0) {
			t.Errorf("%s: kind %d with handler %v and mode %o", f.Name, f.Kind, f.open != nil, f.Perm)
		}
	}
}
