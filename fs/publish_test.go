package fs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// TestPublishOnClose: a written block is invisible until close, then
// readable with the right size, mode and st_blocks.
func TestPublishOnClose(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		key, data := testBlock(testModel, 1, 3<<20)
		if err := os.MkdirAll(m.path(testModel), 0o755); err != nil {
			t.Fatal(err)
		}
		p := m.keyPath(key)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		half := len(data) / 2
		if _, err := f.WriteAt(data[half:], int64(half)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(data[:half], 0); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("stat before close: %v, want ENOENT", err)
		}
		names, err := os.ReadDir(m.path(testModel, key.ID.Shard()))
		if err != nil || len(names) != 0 {
			t.Fatalf("readdir before close: %v %v, want empty", names, err)
		}
		if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(data)) {
			t.Fatalf("fstat of the writer: %v %v", fi, err)
		}
		if err := f.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat after close: %v", err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Size() != int64(len(data)) || fi.Mode().Perm() != 0o444 || st.Blocks != (int64(len(data))+511)/512 || st.Nlink != 1 {
			t.Fatalf("stat: size %d mode %v blocks %d nlink %d", fi.Size(), fi.Mode(), st.Blocks, st.Nlink)
		}
		if int(st.Uid) != os.Getuid() {
			t.Fatalf("owner %d, want %d", st.Uid, os.Getuid())
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back: %d bytes, err %v", len(got), err)
		}
		if !m.st.Has(key) {
			t.Fatal("stack does not hold the block")
		}
		names, _ = os.ReadDir(m.path(testModel, key.ID.Shard()))
		if len(names) != 1 || names[0].Name() != key.FileName() {
			t.Fatalf("readdir after close: %v", names)
		}
	})
}

// TestReadAnyOffset reads a published block at offsets and lengths that
// cross the header, the 1 MiB request size and the end.
func TestReadAnyOffset(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		key, data := testBlock(testModel, 2, 2<<20+4)
		put(t, m.st, key, data)
		f, err := os.Open(m.keyPath(key))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		size := int64(len(data))
		for _, c := range []struct{ off, n int64 }{
			{0, 64}, {1, 63}, {63, 2}, {64, 4096}, {4095, 3}, {1<<20 - 1, 1<<20 + 2},
			{size - 1, 1}, {size - 10, 100}, {size, 10}, {size + 5, 10}, {0, size},
		} {
			buf := make([]byte, c.n)
			n, err := f.ReadAt(buf, c.off)
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("pread(%d, %d): %v", c.off, c.n, err)
			}
			want := data[min(c.off, size):min(c.off+c.n, size)]
			if !bytes.Equal(buf[:n], want) {
				t.Fatalf("pread(%d, %d): %d bytes differ from the %d stored", c.off, c.n, n, len(want))
			}
		}
	})
}

// TestConcurrentWriters: 16 writers of one id all open before any closes,
// all closes succeed, exactly one copy is kept.
func TestConcurrentWriters(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		key, data := testBlock(testModel, 3, 256<<10)
		os.Mkdir(m.path(testModel), 0o755)
		const n = 16
		files := make([]*os.File, n)
		for i := range files {
			f, err := os.OpenFile(m.keyPath(key), os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatalf("writer %d: open: %v", i, err)
			}
			files[i] = f
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, f := range files {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := f.WriteAt(data, 0); err != nil {
					errs[i] = err
					f.Close()
					return
				}
				errs[i] = f.Close()
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
		got, err := os.ReadFile(m.keyPath(key))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back: %d bytes, %v", len(got), err)
		}
		count := 0
		m.st.List(testModel, func(k format.Key) bool { count++; return true })
		if count != 1 {
			t.Fatalf("%d files stored, want 1", count)
		}
		if ents, _ := os.ReadDir(m.path(testModel, key.ID.Shard())); len(ents) != 1 {
			t.Fatalf("shard lists %d files, want 1", len(ents))
		}
	})
}

// TestFsyncPublishes: fsync on the writing descriptor publishes and makes
// the block durable; the later close returns 0.
func TestFsyncPublishes(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		key, data := testBlock(testModel, 4, 4096)
		os.Mkdir(m.path(testModel), 0o755)
		f, err := os.OpenFile(m.keyPath(key), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatalf("fsync: %v", err)
		}
		bi, err := m.st.Stat(key)
		if err != nil || bi.Dirty || len(bi.Holders) < 2 {
			t.Fatalf("after fsync: %+v %v, want clean on a persistent tier", bi, err)
		}
		if _, err := os.Stat(m.keyPath(key)); err != nil {
			t.Fatalf("stat after fsync: %v", err)
		}
		if err := f.Close(); err != nil {
			t.Fatalf("close after fsync: %v", err)
		}
		if err := unix.Access(m.keyPath(key), unix.R_OK); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWrittenAfterFsyncKeptWhole: a writer that fsyncs (which publishes)
// and then writes on through the same descriptor never changes the
// published block. Without passthrough the daemon refuses the write
// (EPERM); with it, the fsync published a copy, the kernel writes the
// writer's own file, and the writer's close reports EPERM: its late bytes
// are in no published file.
func TestWrittenAfterFsyncKeptWhole(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		key, data := testBlock(testModel, 7, 64<<10)
		if err := os.MkdirAll(m.path(testModel), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(m.keyPath(key), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		_, werr := f.WriteAt([]byte("torn"), 100)
		if got, err := os.ReadFile(m.keyPath(key)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the published block after a late write (%v): %v, same bytes %v", werr, err, bytes.Equal(got, data))
		}
		cerr := f.Close()
		if werr == nil && !errors.Is(cerr, unix.EPERM) {
			t.Errorf("close after a write that no published file keeps: %v, want EPERM", cerr)
		}
		if werr != nil && !errors.Is(werr, unix.EPERM) {
			t.Errorf("a late write the daemon serves: %v, want EPERM", werr)
		}
		if got, err := os.ReadFile(m.keyPath(key)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the published block after the writer's close: %v, same bytes %v", err, bytes.Equal(got, data))
		}
	})
}
