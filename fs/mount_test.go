package fs

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/fs/conn"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// TestStatsFile: .ucm/stats is read-only JSON of the stack's Stats, taken
// at each open.
func TestStatsFile(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	p := m.path(".ucm", "stats")
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("stat: %v %v", fi, err)
	}
	var before tiers.Stats
	b, err := os.ReadFile(p)
	if err != nil || json.Unmarshal(b, &before) != nil || len(before.Tiers) != 2 {
		t.Fatalf("stats: %v %s", err, b)
	}
	k, d := testBlock(testModel, 1, 64)
	os.Mkdir(m.path(testModel), 0o755)
	if err := writeFile(m.keyPath(k), d); err != nil {
		t.Fatal(err)
	}
	var after tiers.Stats
	b, _ = os.ReadFile(p)
	if json.Unmarshal(b, &after) != nil || after.Published != before.Published+1 {
		t.Fatalf("published %d then %d", before.Published, after.Published)
	}
	if _, err := os.OpenFile(p, os.O_WRONLY, 0); errnoOf(err) != syscall.EACCES {
		t.Fatalf("open for writing: %v", err)
	}
	ents, _ := os.ReadDir(m.path(".ucm"))
	if !contains(entNames(ents), "stats") {
		t.Fatalf(".ucm lists %v", entNames(ents))
	}
}

// TestMaxFileSize: writing past the limit is EFBIG (at the write without
// passthrough; at close with it, where the kernel writes the file).
func TestMaxFileSize(t *testing.T) {
	for _, pt := range []bool{true, false} {
		m := newMount(t, Options{Passthrough: pt}, store.Options{MaxFileSize: 8192})
		k, d := testBlock(testModel, 1, 16384)
		os.Mkdir(m.path(testModel), 0o755)
		err := writeFile(m.keyPath(k), d)
		if errnoOf(err) != syscall.EFBIG {
			t.Fatalf("passthrough %v: %v, want EFBIG", m.srv.PassthroughActive(), err)
		}
		if m.st.Has(k) {
			t.Fatal("an oversize block was stored")
		}
	}
}

// TestStopWrites: after StopWrites creates are EROFS; reads go on.
func TestStopWrites(t *testing.T) {
	m := newMount(t, Options{})
	k, d := testBlock(testModel, 1, 64)
	put(t, m.st, k, d)
	m.srv.StopWrites()
	k2, d2 := testBlock(testModel, 2, 64)
	if err := writeFile(m.keyPath(k2), d2); errnoOf(err) != syscall.EROFS {
		t.Fatalf("create after StopWrites: %v, want EROFS", err)
	}
	if got, err := os.ReadFile(m.keyPath(k)); err != nil || !bytes.Equal(got, d) {
		t.Fatalf("read after StopWrites: %v", err)
	}
}

// TestPassthroughBypassesDaemon: with passthrough active the daemon serves
// no read and no write; without it, it serves them all.
func TestPassthroughBypassesDaemon(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		k, d := testBlock(testModel, 1, 1<<20)
		os.Mkdir(m.path(testModel), 0o755)
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(m.keyPath(k)); err != nil || !bytes.Equal(got, d) {
			t.Fatalf("read: %v", err)
		}
		r, w := m.srv.state.daemonReads.Load(), m.srv.state.daemonWrites.Load()
		if m.srv.PassthroughActive() != (r == 0 && w == 0) {
			t.Fatalf("passthrough %v, daemon served %d reads and %d writes", m.srv.PassthroughActive(), r, w)
		}
	})
	if os.Geteuid() == 0 && fuseUsable() == nil {
		m := newMount(t, Options{Passthrough: true})
		if !m.srv.PassthroughActive() {
			t.Log("passthrough requested as root but not active (kernel without FUSE passthrough?)")
		}
	}
}

// TestMountpointChecks: a non-empty directory, a file and a mount point
// are refused with a clear error.
func TestMountpointChecks(t *testing.T) {
	requireFUSE(t)
	st := newTestStack(t)
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	if _, err := Mount(full, testStore(t, st), Options{Logger: testLogger()}); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("non-empty: %v", err)
	}
	if _, err := Mount(filepath.Join(full, "x"), testStore(t, st), Options{Logger: testLogger()}); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("file: %v", err)
	}
	m := newMountWith(t, st, Options{})
	if _, err := Mount(m.mnt, testStore(t, newTestStack(t)), Options{Logger: testLogger()}); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("mount point: %v", err)
	}
}

// TestUnmount: Unmount of a busy mount detaches it; an external umount
// ends Wait.
func TestUnmount(t *testing.T) {
	m := newMount(t, Options{})
	k, d := testBlock(testModel, 1, 64)
	put(t, m.st, k, d)
	f, err := os.Open(m.keyPath(k))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.srv.Unmount(); err != nil {
		t.Fatalf("busy unmount: %v", err)
	}
	if mounted, _ := conn.IsMountpoint(m.mnt); mounted {
		t.Fatal("still mounted after Unmount")
	}
	f.Close()
	m.srv.Wait()

	m2 := newMount(t, Options{})
	if err := unix.Unmount(m2.mnt, 0); err != nil {
		t.Fatal(err)
	}
	m2.srv.Wait()
}
