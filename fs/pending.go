package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// inProgress is a file being written (see progress.go): a PendingWrite of
// the stack and the descriptors open on it. With passthrough the kernel
// writes its file directly; else each write is one pwrite.
type inProgress struct {
	s     *fsState
	key   tiers.Key // what it publishes as (a staging file: its final name, until renamed)
	tk    progressKey
	owner proc // the creating process
	pw    *tiers.PendingWrite
	f     *os.File // pw.File(); closed by the stack once done is set
	ino   uint64

	mu       sync.RWMutex              // writes hold it shared, publish exclusively
	handles  map[*writeHandle]bool     // open descriptors: true once the owner closed it
	closed   bool                      // the owner closed a descriptor of it
	staging  bool                      // not renamed yet: publishes only at rename
	done     bool                      // published or discarded
	verdict  syscall.Errno             //
	size     int64                     // once done
	mtime    time.Time                 // once done
	setMTime time.Time                 // set by utimes while written (zero: none)
	notify   func(*gofs.Inode, string) // drops the kernel's entry of a name (rename)
}

// pendingNode is a file being written, as its writers see it. It has a
// number of its own (tag 5), so no two in-progress files share a node or
// a kernel backing file.
type pendingNode struct {
	gofs.Inode
	common
	ip *inProgress
}

var (
	_ = (gofs.NodeGetattrer)((*pendingNode)(nil))
	_ = (gofs.NodeSetattrer)((*pendingNode)(nil))
	_ = (gofs.NodeOpener)((*pendingNode)(nil))
	_ = (gofs.NodeGetxattrer)((*pendingNode)(nil))
)

// Getattr describes the file as written so far (never cached).
func (p *pendingNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	p.ip.fillAttr(&out.Attr)
	return 0
}

// Setattr applies to the file being written (see inProgress.setattr).
func (p *pendingNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return p.ip.setattr(in, out)
}

// Open of a file being written by a process that sees it (see
// progress.go) adds a descriptor to it, for writing or reading back.
func (p *pendingNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	h, errno := p.ip.open(flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return h, p.s.openFlags(), 0
}

// startWrite begins writing key as a new in-progress file named name (a
// staging name when staging is set) for process p. An id already
// published is EEXIST with O_EXCL and EACCES without; after StopWrites
// every write is EROFS.
func (s *fsState) startWrite(key tiers.Key, name string, staging bool, p proc, flags uint32) (*inProgress, syscall.Errno) {
	if s.Stopped() {
		return nil, s.fail("create", key.Path(), fmt.Errorf("shutting down: %w", store.ErrStopped))
	}
	if err := s.AdmitPending(p.uid, 0); err != nil {
		return nil, s.fail("create", key.Path(), err)
	}
	pw, err := s.createPending(key, staging)
	if errors.Is(err, tiers.ErrExist) {
		if flags&syscall.O_EXCL == 0 {
			err = fmt.Errorf("%w: published files are read-only", errReadOnly)
		}
		return nil, s.debugFail("create", key.Path(), err)
	}
	if err != nil {
		return nil, s.fail("create", key.Path(), err)
	}
	s.WriteStarted(key)
	s.PendingFile(pw.File(), p.uid)
	ip := &inProgress{
		s: s, key: key, owner: p, pw: pw, f: pw.File(), staging: staging,
		tk:      progressKeyOf(key, name, staging, p),
		ino:     uint64(tagPending)<<tagShift | s.seq.Add(1)&lowMask,
		handles: make(map[*writeHandle]bool),
	}
	return ip, 0
}

// createPending starts the stack's pending write of key. A staging file
// may stand for a block already published (rsync writes it again): it is
// written under a key the stack does not hold, and published as key.
func (s *fsState) createPending(key tiers.Key, staging bool) (*tiers.PendingWrite, error) {
	if !staging {
		return s.stack.Create(key)
	}
	return s.stack.CreateStaging(key)
}

// open adds a descriptor: a write (or read-back) handle on the file.
func (ip *inProgress) open(flags uint32) (*writeHandle, syscall.Errno) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if ip.done {
		return nil, ip.s.fail("open", ip.key.Path(), fmt.Errorf("already published or discarded: %w", errReadOnly))
	}
	if flags&syscall.O_TRUNC != 0 {
		if err := ip.f.Truncate(0); err != nil {
			return nil, ip.s.fail("open", ip.key.Path(), err)
		}
	}
	h := &writeHandle{ip: ip}
	ip.handles[h] = false
	return h, 0
}

// writeHandle is one open descriptor of an in-progress file.
type writeHandle struct {
	ip *inProgress
}

var (
	_ = (gofs.FileWriter)((*writeHandle)(nil))
	_ = (gofs.FileReader)((*writeHandle)(nil))
	_ = (gofs.FilePassthroughFder)((*writeHandle)(nil))
	_ = (gofs.FileFlusher)((*writeHandle)(nil))
	_ = (gofs.FileFsyncer)((*writeHandle)(nil))
	_ = (gofs.FileReleaser)((*writeHandle)(nil))
	_ = (gofs.FileAllocater)((*writeHandle)(nil))
)

// Write writes at any offset; past Options.MaxFileSize it is EFBIG. A
// write to a file unlinked meanwhile is accepted and dropped.
func (h *writeHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	ip := h.ip
	ip.mu.RLock()
	defer ip.mu.RUnlock()
	if ip.done && ip.verdict == errnoMissing {
		// Unlinked while open (UCM removes a failed dump's .tmp while
		// its other threads still write): the bytes go nowhere, as on a
		// plain filesystem.
		return uint32(len(data)), 0
	}
	if ip.done {
		return 0, ip.s.fail("write", ip.key.Path(), fmt.Errorf("already published: %w", store.ErrImmutable))
	}
	if off+int64(len(data)) > ip.s.MaxFileSize() {
		return 0, ip.s.fail("write", ip.key.Path(), fmt.Errorf("%d bytes at %d pass the %d-byte limit: %w", len(data), off, ip.s.MaxFileSize(), store.ErrTooBig))
	}
	if grow := off + int64(len(data)) - ip.allocated(); grow > 0 {
		if err := ip.s.AdmitPending(ip.owner.uid, grow); err != nil {
			return 0, ip.s.fail("write", ip.key.Path(), err)
		}
	}
	ip.s.daemonWrites.Add(1)
	n, err := ip.f.WriteAt(data, off)
	if err != nil {
		return uint32(n), ip.s.fail("write", ip.key.Path(), err)
	}
	return uint32(n), 0
}

// Read reads back what was written (a descriptor opened O_RDWR).
func (h *writeHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	ip := h.ip
	ip.mu.RLock()
	defer ip.mu.RUnlock()
	if ip.done {
		return nil, errnoBadFD
	}
	n, err := ip.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, ip.s.fail("read", ip.key.Path(), err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Allocate preallocates (fallocate) within Options.MaxFileSize.
func (h *writeHandle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	ip := h.ip
	ip.mu.RLock()
	defer ip.mu.RUnlock()
	if ip.done {
		return ip.s.fail("fallocate", ip.key.Path(), store.ErrImmutable)
	}
	if off+size > uint64(ip.s.MaxFileSize()) {
		return ip.s.fail("fallocate", ip.key.Path(), store.ErrTooBig)
	}
	if err := unix.Fallocate(int(ip.f.Fd()), mode, int64(off), int64(size)); err != nil {
		return ip.s.fail("fallocate", ip.key.Path(), err)
	}
	return 0
}

// PassthroughFd hands the kernel the file being written.
func (h *writeHandle) PassthroughFd() (int, bool) {
	return int(h.ip.f.Fd()), h.ip.s.passthrough.Load()
}

// Flush is a close() of a descriptor. From the creating process it marks
// the descriptor closed, and when every descriptor is, publishes and
// returns the verdict: 0 published or already present, EINVAL invalid
// (discarded), ENOSPC no room, EFBIG too large, EDQUOT over the model's
// quota, ENOENT a sidecar without its block. A staging file is not
// published by a close. From any other process it changes nothing.
func (h *writeHandle) Flush(ctx context.Context) syscall.Errno {
	ip := h.ip
	if callerProc(ctx).tgid != ip.owner.tgid {
		ip.mu.RLock()
		defer ip.mu.RUnlock()
		return ip.verdict
	}
	ip.mu.Lock()
	if _, open := ip.handles[h]; open {
		ip.handles[h] = true
	}
	ip.closed = true
	ready := !ip.done && !ip.staging && ip.allClosed()
	ip.mu.Unlock()
	if !ready {
		ip.mu.RLock()
		defer ip.mu.RUnlock()
		return ip.verdict
	}
	return ip.publish(ctx, false)
}

// allClosed reports whether the owner closed every open descriptor
// (under mu).
func (ip *inProgress) allClosed() bool {
	for _, closed := range ip.handles {
		if !closed {
			return false
		}
	}
	return true
}

// Fsync publishes and returns once the block is durable on the first
// persistent tier. A staging file is only synced: it publishes at rename.
func (h *writeHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	ip := h.ip
	ip.mu.RLock()
	staging := ip.staging && !ip.done
	ip.mu.RUnlock()
	if staging {
		return 0 // the staging file lives in memory until it is renamed
	}
	return ip.publish(ctx, true)
}

// Release ends a descriptor. The last one of a file that the creating
// process closed publishes it if that has not happened yet (a descriptor
// only another process held); one nobody closed is discarded. A staging
// file outlives its descriptors until rename or unlink.
func (h *writeHandle) Release(ctx context.Context) syscall.Errno {
	ip := h.ip
	ip.mu.Lock()
	delete(ip.handles, h)
	last := len(ip.handles) == 0
	publish := !ip.done && !ip.staging && ip.closed && ip.allClosed()
	discard := !ip.done && !ip.staging && last && !ip.closed
	if discard {
		ip.done = true
		ip.s.stack.Abort(ip.pw)
	}
	ip.mu.Unlock()
	if publish {
		ip.publish(ctx, false)
	}
	if discard {
		ip.end()
	}
	return 0
}

// discard drops a file that will not be published (unlinked, or a
// duplicate start) and ends its write.
func (ip *inProgress) discard() {
	ip.mu.Lock()
	gone := !ip.done
	if gone {
		ip.done = true
		ip.verdict = errnoMissing
		ip.s.stack.Abort(ip.pw)
	}
	ip.mu.Unlock()
	if gone {
		ip.end()
	}
}

// end takes the file out of the table and ends its write.
func (ip *inProgress) end() {
	ip.s.PendingDone(ip.f)
	ip.s.progress.drop(ip.tk, ip)
	ip.s.WriteEnded(ip.key)
}

// allocated is the size of the file being written (0 when fstat fails).
func (ip *inProgress) allocated() int64 {
	fi, err := ip.f.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

// fillAttr describes the file as its writers see it: mode 0644 while it
// is written, 0444 once published.
func (ip *inProgress) fillAttr(a *fuse.Attr) {
	ip.mu.RLock()
	defer ip.mu.RUnlock()
	if ip.done {
		ip.s.blockAttr(a, ip.size, ip.mtime, ip.key.Model)
		return
	}
	var size int64
	mtime := time.Now()
	if st, err := ip.f.Stat(); err == nil {
		size, mtime = st.Size(), st.ModTime()
	}
	if !ip.setMTime.IsZero() {
		mtime = ip.setMTime
	}
	ip.s.fileAttr(a, size, mtime, 0o644)
	a.Owner = fuse.Owner{Uid: ip.owner.uid, Gid: ip.owner.gid}
}

// isStaging reports whether ip is a staging file not yet renamed.
func (ip *inProgress) isStaging() bool {
	ip.mu.RLock()
	defer ip.mu.RUnlock()
	return ip.staging && !ip.done
}

// commitRename turns a staging file into a final one (its rename): it
// leaves the table, and publishes like a final name from now on. It
// reports whether it may publish at once (no descriptor open, or all
// closed by the writer).
func (ip *inProgress) commitRename() bool {
	ip.mu.Lock()
	ip.staging = false
	ready := !ip.done && ip.allClosed()
	ip.closed = true
	ip.mu.Unlock()
	ip.s.progress.drop(ip.tk, ip)
	return ready
}

// writable reports whether ip is still being written.
func (ip *inProgress) writable() bool {
	ip.mu.RLock()
	defer ip.mu.RUnlock()
	return !ip.done
}
