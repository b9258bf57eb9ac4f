package fs

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Benchmarks of one FUSE request kind each, through a real mount in this
// process: `go test -run '^$' -bench Request -benchmem ./fs`. The client
// side makes its system calls on paths built once, into buffers of its
// own, and allocates nothing (the tmpfs baseline of each shows 0
// allocs/op), so allocs/op and B/op are the daemon's work per request:
// testing counts them from runtime.MemStats, every goroutine's.

// atFDCWD is AT_FDCWD as a system call's argument.
var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }()

// cpath is a NUL-terminated path for the raw system calls.
type cpath []byte

func newCPath(p string) cpath { return append([]byte(p), 0) }

func (p cpath) ptr() uintptr { return uintptr(unsafe.Pointer(&p[0])) }

// rawStat is fstatat(AT_FDCWD, p) without an allocation.
func rawStat(p cpath, st *unix.Stat_t) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, atFDCWD, p.ptr(), uintptr(unsafe.Pointer(st)), 0, 0, 0)
	return e
}

// rawStatxSync is statx(p) with AT_STATX_FORCE_SYNC: a GETATTR each time.
func rawStatxSync(p cpath, st *unix.Statx_t) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_STATX, atFDCWD, p.ptr(), unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, uintptr(unsafe.Pointer(st)), 0)
	return e
}

// rawOpenClose opens p read-only and closes it.
func rawOpenClose(p cpath) unix.Errno {
	fd, _, e := unix.Syscall6(unix.SYS_OPENAT, atFDCWD, p.ptr(), unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return e
	}
	_, _, e = unix.Syscall(unix.SYS_CLOSE, fd, 0, 0)
	return e
}

// requestTargets runs fn on a mount with passthrough requested (the
// daemon's default) and on a /dev/shm directory, the baseline whose
// allocations are the client's alone.
func requestTargets(b *testing.B, fn func(b *testing.B, t benchTarget)) {
	for _, name := range []string{"mount", "tmpfs"} {
		b.Run(name, func(b *testing.B) {
			if name == "tmpfs" {
				fn(b, tmpfsTarget(b))
				return
			}
			m := newMount(b, Options{Passthrough: true})
			fn(b, benchTarget{root: m.mnt, m: m})
		})
	}
}

// BenchmarkRequestLookupMiss stats a block id no tier holds, a new one
// each time: one LOOKUP the daemon answers ENOENT.
func BenchmarkRequestLookupMiss(b *testing.B) {
	requestTargets(b, func(b *testing.B, t benchTarget) {
		k, d := testBlock(testModel, 1, 64)
		t.store(b, k, d)
		p := newCPath(t.path(k))
		// The id's 32 hex digits end 4 bytes before the NUL (".bin").
		hexID := p[len(p)-1-len(".bin")-2*len(k.ID) : len(p)-1-len(".bin")]
		id := k.ID
		salt := rand.Uint64()
		var st unix.Stat_t
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// Keep the first byte (the shard), change the rest.
			binary.LittleEndian.PutUint64(id[1:9], uint64(i))
			binary.LittleEndian.PutUint32(id[9:13], uint32(salt))
			hex.Encode(hexID, id[:])
			if e := rawStat(p, &st); e != unix.ENOENT {
				b.Fatalf("stat %s: %v, want ENOENT", p[:len(p)-1], e)
			}
		}
	})
}

// BenchmarkRequestLookupCold stats a published block whose kernel entry
// was dropped (untimed) before each stat: one LOOKUP of an existing name
// the kernel holds no node for, the first stat after a restart. Another
// block of its shard stays looked up, as in a daemon serving many: the
// shard's light table is not emptied and made again each time.
func BenchmarkRequestLookupCold(b *testing.B) {
	requestTargets(b, func(b *testing.B, t benchTarget) {
		k, d := testBlock(testModel, 1, 64)
		t.store(b, k, d)
		p := newCPath(t.path(k))
		var st unix.Stat_t
		for n := 2; ; n++ {
			other, od := testBlock(testModel, n, 64)
			if other.ID[0] != k.ID[0] {
				continue
			}
			t.store(b, other, od)
			if e := rawStat(newCPath(t.path(other)), &st); e != 0 {
				b.Fatal(e)
			}
			break
		}
		drop := func() {}
		if t.m != nil {
			s := t.m.srv.state
			if e := rawStat(p, &st); e != 0 { // the shard's node exists
				b.Fatal(e)
			}
			parent, name := s.parentOf(k), k.FileName()
			if parent == nil {
				b.Fatal("no shard node")
			}
			drop = func() { s.notifyGone(parent, name) }
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			drop()
			b.StartTimer()
			if e := rawStat(p, &st); e != 0 {
				b.Fatalf("stat: %v", e)
			}
		}
	})
}

// BenchmarkRequestGetattr stats a published block with
// AT_STATX_FORCE_SYNC: one GETATTR, the entry cached.
func BenchmarkRequestGetattr(b *testing.B) {
	requestTargets(b, func(b *testing.B, t benchTarget) {
		k, d := testBlock(testModel, 1, 64)
		t.store(b, k, d)
		p := newCPath(t.path(k))
		var st unix.Statx_t
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if e := rawStatxSync(p, &st); e != 0 {
				b.Fatalf("statx: %v", e)
			}
		}
	})
}

// BenchmarkRequestOpenClose opens and closes a published block
// (OPEN, FLUSH, RELEASE) and a `files` model's 2 MiB file.
func BenchmarkRequestOpenClose(b *testing.B) {
	b.Run("block", func(b *testing.B) {
		requestTargets(b, func(b *testing.B, t benchTarget) {
			k, d := testBlock(testModel, 1, 64)
			t.store(b, k, d)
			benchOpenClose(b, newCPath(t.path(k)))
		})
	})
	b.Run("files", func(b *testing.B) {
		requestTargets(b, func(b *testing.B, t benchTarget) {
			dir := filepath.Join(t.root, "eng")
			if t.m != nil {
				dir = t.m.model(b, "eng", "files")
			} else if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			p := filepath.Join(dir, "weights.bin")
			if err := writeFile(p, make([]byte, 2<<20)); err != nil {
				b.Fatal(err)
			}
			benchOpenClose(b, newCPath(p))
		})
	})
}

// benchOpenClose times open and close of p.
func benchOpenClose(b *testing.B, p cpath) {
	if e := rawOpenClose(p); e != 0 { // the entry cached
		b.Fatal(e)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e := rawOpenClose(p); e != 0 {
			b.Fatalf("open+close: %v", e)
		}
	}
}
