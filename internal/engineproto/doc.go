// Package engineproto replays, on a directory, the syscalls with which
// inference engines' file backends keep a KV block per file (docs/engines.md):
// vLLM's fs offloading tier, llm-d's fs backend, LMCache's fs_native
// connector, and SGLang's HiCache file and fast_file backends. Each replay
// is written from the engine's storage code: the names, the open flags,
// the temporary file and its rename, the reads and their checks, the
// deletes. Tests run a replay on a plain directory and on a ucmfs model of
// the files layout and compare the two trees (integration/engines_test.go).
package engineproto

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Engine is one backend's store over a root directory, its blocks named
// by their number in the test.
type Engine interface {
	// Name names the backend.
	Name() string
	// Setup does what the backend does at start.
	Setup() error
	// Exists is the backend's lookup of block i.
	Exists(i int) (bool, error)
	// Store writes data as block i, as the backend's store does (a block
	// present already is skipped, as the backends do).
	Store(i int, data []byte) error
	// Load reads block i, n bytes, with the backend's checks.
	Load(i, n int) ([]byte, error)
	// Delete removes block i.
	Delete(i int) error
}

// hash64 is the 64 hex characters of block i's hash in a replay salted
// with salt: what engines name blocks by (a SHA-256).
func hash64(salt string, i int) string {
	sum := sha256.Sum256([]byte(salt + "/" + strconv.Itoa(i)))
	return hex.EncodeToString(sum[:])
}

// randSuffix is a thread-local-style random number, as the backends make
// their temporary names unique.
func randSuffix() string { return strconv.FormatUint(rand.Uint64()>>1, 10) }

// exists is os.path.exists / std::filesystem::exists: a stat, ENOENT a
// miss.
func exists(p string) (bool, error) {
	var st unix.Stat_t
	err := unix.Stat(p, &st)
	switch {
	case err == nil:
		return true, nil
	case err == unix.ENOENT:
		return false, nil
	}
	return false, fmt.Errorf("stat %s: %w", p, err)
}

// writeAll writes data at the descriptor's offset until done, as the
// backends' write loops do (chunk bytes at a time, 0 for all at once).
func writeAll(fd int, data []byte, chunk int) error {
	for len(data) > 0 {
		n := len(data)
		if chunk > 0 {
			n = min(n, chunk)
		}
		w, err := unix.Write(fd, data[:n])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[w:]
	}
	return nil
}

// readAll reads up to n bytes from the descriptor's offset until EOF.
func readAll(fd, n int) ([]byte, error) {
	out := make([]byte, n)
	got, err := readInto(fd, out)
	return out[:got], err
}

// readInto fills buf from the descriptor's offset until EOF, as the
// backends' read loops do, and returns how much it read.
func readInto(fd int, buf []byte) (int, error) {
	got := 0
	for got < len(buf) {
		r, err := unix.Read(fd, buf[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return got, err
		}
		if r == 0 {
			break
		}
		got += r
	}
	return got, nil
}

// alignedBuf is n bytes of page-aligned memory, for O_DIRECT; the caller
// unmaps it (unix.Munmap).
func alignedBuf(n int) []byte {
	b, err := unix.Mmap(-1, 0, max(n, 4096), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		panic(err)
	}
	return b[:n]
}

// AlignedBuf is n bytes of page-aligned anonymous memory, never freed: an
// engine's CPU tier (vLLM's pinned buffer), which its O_DIRECT stores
// write from and its loads read into.
func AlignedBuf(n int) []byte { return alignedBuf(n) }

// aligned reports whether b starts and ends on a 4096-byte boundary, as
// O_DIRECT needs.
func aligned(b []byte) bool {
	return len(b) > 0 && len(b)%4096 == 0 && uintptr(unsafe.Pointer(&b[0]))%4096 == 0
}

// makedirs is os.makedirs(p, exist_ok=True).
func makedirs(p string) error { return os.MkdirAll(p, 0o777) }

// parent is the directory of p.
func parent(p string) string { return filepath.Dir(p) }
