package tiers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// copyFile writes the first size bytes of src, a file of kind kind, into
// w and returns the CRC-32C of the payload it copied.
func copyFile(w Writer, src *os.File, size int64, kind format.Kind) (uint32, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	h := &crcWriter{w: w, hdr: kind.HeaderLen()}
	_, err := io.CopyBuffer(h, io.NewSectionReader(src, 0, size), *bp)
	return h.crc, err
}

// crcWriter passes bytes to a Writer (hiding any ReadFrom, so
// io.CopyBuffer uses the buffer) and keeps the CRC-32C of those after
// the header (hdr bytes: 64, or 0 for a raw block).
type crcWriter struct {
	w   Writer
	hdr int64
	off int64
	crc uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if skip := max(0, c.hdr-c.off); skip < int64(n) {
		c.crc = format.UpdateCRC32C(c.crc, p[skip:n])
	}
	c.off += int64(n)
	return n, err
}

// copyBufSize is the unit of every copy between tiers (1 MiB).
const copyBufSize = 1 << 20

// copyBufs are aligned for O_DIRECT (alignedBlock), so that a directory
// tier writing with O_DIRECT writes a copy's chunks from them as they are.
var copyBufs = sync.Pool{New: func() any { b := dir.AlignedBlock(copyBufSize); return &b }}

// flaggedCRC returns the payload CRC a header states, if its flag is set.
// UCMB and UCMR headers keep payload_crc32c at 48 and flags at 52.
func flaggedCRC(hdr []byte) (uint32, bool) {
	if len(hdr) < format.HeaderSize {
		return 0, false
	}
	if binary.LittleEndian.Uint32(hdr[52:56])&1 == 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(hdr[48:52]), true
}

// payloadCRC is tier.PayloadCRC through one of the copy buffers.
func payloadCRC(f *os.File, kind format.Kind) (int64, uint32, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	return tier.PayloadCRC(f, kind, *bp)
}

// knownCRC is the payload CRC-32C that t keeps for k, given its Stat
// info: the index's, or for a directory tier the xattr of f, k's file
// open there (read once).
func knownCRC(t Tier, k format.Key, info Info, f *os.File) (uint32, bool) {
	if info.HasCRC {
		return info.CRC, true
	}
	if d, ok := t.(tier.Lower); ok {
		if crc, has, err := d.CRCFrom(k, f); err == nil && has {
			return crc, true
		}
	}
	return 0, false
}

// copyOut copies key from src into a new, uncommitted Writer of dst,
// checking the payload CRC-32C on the way: against the CRC src keeps for
// the file, else against the one its header states. On a mismatch it
// returns ErrCorrupt and dst is left untouched. When neither is known
// (a block published without a CRC in its header), the CRC computed here
// becomes the block's: the returned options carry it to dst, and the
// memory tier records it too when it is the source. The caller commits
// or aborts the returned Writer.
func (s *Stack) copyOut(src, dst Tier, key format.Key) (Writer, CommitOptions, error) {
	copied := s.copies.begin(key) // until dst's writer (and its directory) exists
	defer copied()                // (a no-op when called again)
	from := entryOf(src, key)
	info, err := src.Stat(key)
	if err != nil {
		return nil, CommitOptions{}, err
	}
	f, err := src.Open(key)
	if err != nil {
		return nil, CommitOptions{}, err
	}
	defer f.Close()
	w, err := dst.Create(key)
	copied()
	if err != nil {
		return nil, CommitOptions{}, err
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var off int64
	var crc uint32
	var hdr [format.HeaderSize]byte
	hdrLen := key.Kind.HeaderLen()
	for off < info.Size {
		n, rerr := f.ReadAt(buf, off)
		if n > 0 {
			chunk := buf[:n]
			if off < hdrLen {
				copy(hdr[off:], chunk)
				skip := min(int64(n), hdrLen-off)
				crc = format.UpdateCRC32C(crc, chunk[skip:])
			} else {
				crc = format.UpdateCRC32C(crc, chunk)
			}
			if _, werr := w.Write(chunk); werr != nil {
				w.Abort()
				return nil, CommitOptions{}, fmt.Errorf("copy %s %s->%s: %w", key, src.Name(), dst.Name(), werr)
			}
			off += int64(n)
		}
		if rerr != nil && !(errors.Is(rerr, io.EOF) && off >= info.Size) {
			w.Abort()
			if errors.Is(rerr, io.EOF) {
				rerr = s.corruptOrReplaced(src, key, from, fmt.Errorf("%w: %s is %d bytes, index says %d", ErrCorrupt, key, off, info.Size))
			}
			return nil, CommitOptions{}, fmt.Errorf("copy %s %s->%s: %w", key, src.Name(), dst.Name(), rerr)
		}
	}
	if err := checkHeader(src, key, hdr[:], off); err != nil {
		w.Abort()
		if err = s.corruptOrReplaced(src, key, from, err); errors.Is(err, ErrCorrupt) {
			s.stats.crcErrors.Add(1)
		}
		return nil, CommitOptions{}, err
	}
	want, known := knownCRC(src, key, info, f)
	if !known && hdrLen > 0 {
		want, known = flaggedCRC(hdr[:])
	}
	if off < hdrLen || (known && want != crc) {
		w.Abort()
		err := s.corruptOrReplaced(src, key, from, fmt.Errorf("%w: %s on %s: payload CRC-32C %08x, expected %08x", ErrCorrupt, key, src.Name(), crc, want))
		if errors.Is(err, ErrCorrupt) {
			s.stats.crcErrors.Add(1)
		}
		return nil, CommitOptions{}, err
	}
	if !info.HasCRC && src == Tier(s.mem) {
		_ = s.mem.SetCRC(key, from, crc) // removed or replaced meanwhile: nothing to record
	}
	if d, ok := src.(tier.Lower); ok && !known && d.Index().SetCRCOf(key, from, crc) {
		d.KeepCRC(key, f, crc) // a file staged on disk: its first copy computed its CRC
	}
	s.stats.bytesOut.Add(off)
	opts := CommitOptions{CRC: crc, HasCRC: true, MTime: info.MTime, From: from}
	if !registry.Of(key).Headerless() {
		opts.HeaderCRC, opts.HasHeaderCRC = format.HeaderCRC(hdr[:]), true
	}
	return w, opts, nil
}

// errReplaced: a file's check failed because the file was replaced while
// it was read (a new version of a files model's File published, written
// back or promoted over it), not because it is damaged.
var errReplaced = fmt.Errorf("replaced while read: %w", ErrNotFound)

// corruptOrReplaced returns err, a failed check of key's file on t, unless
// t's index no longer has the entry the check started from (from): then
// the bytes, size or CRC compared were partly another version's, and the
// answer is errReplaced, so that nothing is quarantined. It takes key's
// stripe lock, under which every replace is made: the caller holds none.
func (s *Stack) corruptOrReplaced(t Tier, key format.Key, from *index.Entry, err error) error {
	mu := s.keyLock(key)
	mu.Lock()
	replaced := entryOf(t, key) != from
	mu.Unlock()
	if replaced {
		return fmt.Errorf("%s on %s: %w", key, t.Name(), errReplaced)
	}
	return err
}

// quarantine takes a corrupt file out of a tier so it is never served
// again: a directory tier moves it aside, the memory tier drops it.
func (s *Stack) quarantine(t Tier, key format.Key, cause error) {
	s.stats.quarantined.Add(1)
	var err error
	if q, ok := t.(interface{ Quarantine(format.Key) error }); ok {
		err = q.Quarantine(key)
	} else {
		err = t.Remove(key)
	}
	s.log.Error("corrupt file quarantined", "key", key.String(), "tier", t.Name(), "cause", cause, "quarantine_error", err)
}

// commitCopy commits w, a copy of k taken from src, under k's stripe lock:
// only if src still holds k (it was not removed while the bytes moved).
// A copy already present at the destination counts as committed. then
// runs under the lock after a successful commit.
func (s *Stack) commitCopy(src Tier, w Writer, opts CommitOptions, k format.Key, then func() error) error {
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	if _, err := src.Stat(k); err != nil {
		w.Abort()
		return err
	}
	if entryOf(src, k) != opts.From {
		w.Abort()
		return fmt.Errorf("%s on %s: replaced while copied: %w", k, src.Name(), ErrNotFound)
	}
	if _, err := w.Commit(opts); err != nil {
		w.Abort()
		if !errors.Is(err, ErrExist) {
			return err
		}
	}
	return then()
}

// indexed is a tier that keeps an index of its files (both kinds do):
// the stack reads residency and versions from it.
type indexed interface {
	Index() *index.Index
}

// entryOf is t's index entry of k (nil when t holds none): what a copy
// read from, and must still find at its commit.
func entryOf(t Tier, k format.Key) *index.Entry {
	if t, ok := t.(indexed); ok {
		return t.Index().EntryOf(k)
	}
	return nil
}
