package dir

import (
	"errors"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/tiers/tier"
)

// O_DIRECT writes. Write copies into an aligned buffer; each full buffer
// is written with O_DIRECT set on the temp file's descriptor (fcntl), which
// is cleared again right after, so the descriptor handed out by File stays
// an ordinary one. At Commit the aligned part of the rest goes the same
// way and the unaligned tail is written without O_DIRECT. If the
// filesystem refuses O_DIRECT (EINVAL), the tier logs one warning and
// writes buffered from then on.

const (
	DirectAlign   = 4096    // offset, length and address alignment
	directBufSize = 1 << 20 // bytes per O_DIRECT write
)

var directPool = sync.Pool{New: func() any {
	b := AlignedBlock(directBufSize)
	return &b
}}

// AlignedBlock returns n bytes starting at a directAlign boundary.
func AlignedBlock(n int) []byte {
	b := make([]byte, n+DirectAlign)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (DirectAlign - 1))
	if off != 0 {
		off = DirectAlign - off
	}
	return b[off : off+n : off+n]
}

// directBuf holds bytes given to Write that are not yet in the file.
type directBuf struct {
	raw   *[]byte // the pooled block
	buf   []byte  // pending bytes; cap is directBufSize
	start int64   // file offset of buf[0], a multiple of directAlign
}

func newDirectBuf() *directBuf {
	raw := directPool.Get().(*[]byte)
	return &directBuf{raw: raw, buf: (*raw)[:0]}
}

// releaseBuf returns the O_DIRECT buffer to the pool.
func (w *dirWriter) releaseBuf() {
	if w.dio != nil {
		directPool.Put(w.dio.raw)
		w.dio = nil
	}
}

// writeDirect buffers p, writing each full buffer with O_DIRECT. When
// nothing is pending and p starts at an aligned address (a copy between
// tiers reads into aligned buffers), p's aligned part is written from p
// itself: no copy into the buffer. Only on a tier whose operations run
// inline: a detached one may still read the bytes after a timeout, when
// the caller has reused p.
func (w *dirWriter) writeDirect(p []byte) (int, error) {
	n := 0
	if d := w.dio; w.t.inline && len(d.buf) == 0 && len(p) >= DirectAlign && uintptr(unsafe.Pointer(&p[0]))&(DirectAlign-1) == 0 {
		aligned := len(p) &^ (DirectAlign - 1)
		d.buf = p[:aligned]
		err := w.flushDirect()
		d.buf = (*d.raw)[:0]
		if err != nil {
			return 0, err
		}
		n, p = aligned, p[aligned:]
	}
	for len(p) > 0 {
		d := w.dio
		c := copy(d.buf[len(d.buf):cap(d.buf)], p)
		d.buf = d.buf[:len(d.buf)+c]
		p = p[c:]
		if len(d.buf) == cap(d.buf) {
			if err := w.flushDirect(); err != nil {
				return n, err
			}
		}
		n += c
	}
	w.off += int64(n)
	return n, nil
}

// flushDirect writes the buffer: its aligned part with O_DIRECT and the
// unaligned tail (only at Commit: Write flushes full buffers) without.
// Errors are sticky (w.err).
func (w *dirWriter) flushDirect() error {
	d := w.dio
	aligned := len(d.buf) &^ (DirectAlign - 1)
	chunk, tail := d.buf[:aligned], d.buf[aligned:]
	start := d.start
	t := w.t
	err := w.op("write", func() error {
		fd := int(w.f.Fd())
		done := 0
		if len(chunk) > 0 && t.direct.Load() {
			var err error
			done, err = pwriteDirect(fd, chunk, start)
			if errors.Is(err, unix.EINVAL) {
				t.DisableDirect(err)
			} else if err != nil {
				return err
			}
		}
		if err := pwriteAll(fd, chunk[done:], start+int64(done)); err != nil {
			return err
		}
		return pwriteAll(fd, tail, start+int64(len(chunk)))
	}, w.cleanup)
	if err != nil {
		err = tier.OSErr("write", err) // ENOSPC is ErrFull, as for a buffered write
		if !w.done {
			w.err = err
		}
		return err
	}
	d.start += int64(len(d.buf))
	d.buf = d.buf[:0]
	return nil
}

// pwriteDirect writes b at off with O_DIRECT set for the duration, and
// returns how much it wrote.
func pwriteDirect(fd int, b []byte, off int64) (int, error) {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return 0, os.NewSyscallError("fcntl", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl|unix.O_DIRECT); err != nil {
		return 0, os.NewSyscallError("fcntl", err)
	}
	defer unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_DIRECT)
	done := 0
	for done < len(b) {
		n, err := unix.Pwrite(fd, b[done:], off+int64(done))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return done, os.NewSyscallError("pwrite", err)
		}
		done += n
		if n%DirectAlign != 0 {
			// A short unaligned write: finish without O_DIRECT.
			return done, nil
		}
	}
	return done, nil
}

// pwriteAll writes all of b at off.
func pwriteAll(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return os.NewSyscallError("pwrite", err)
		}
		if n == 0 {
			return os.NewSyscallError("pwrite", unix.EIO)
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// DisableDirect turns O_DIRECT off for the tier after the filesystem
// refused it, with one warning.
func (t *Tier) DisableDirect(err error) {
	t.direct.Store(false)
	t.directWarn.Do(func() {
		t.log.Warn("tier: O_DIRECT refused, writing buffered", "kind", t.kind, "dir", t.root, "err", err)
	})
}

// WriteAligned writes data at off into f, a file opened O_DIRECT, through
// an aligned buffer (off and len(data) are multiples of directAlign).
func WriteAligned(f *os.File, data []byte, off int64) (int, error) {
	bp := directPool.Get().(*[]byte)
	defer directPool.Put(bp)
	done := 0
	for done < len(data) {
		c := copy(*bp, data[done:])
		if err := pwriteAll(int(f.Fd()), (*bp)[:c], off+int64(done)); err != nil {
			return done, tier.OSErr("write", err)
		}
		done += c
	}
	return done, nil
}
