package fs

// Control sessions
//
// Every control file but stats (.ucm/lookup, .ucm/prefetch, .ucm/flush,
// ...) is a line-oriented request/answer channel, and each open
// descriptor is one session with its own input and answer queue:
//
//   - write: the bytes join the session's input. Every complete line
//     (ending in '\n') is one request, answered before the write returns;
//     its answer line joins the answer queue. A line may arrive in several
//     writes, and one write may carry several lines.
//   - read: returns the next unread bytes of the answer queue, whatever
//     the offset (the file position moves with writes too, so it means
//     nothing here); an empty queue reads as end of file. A read that
//     finds the queue empty while an unterminated line waits answers that
//     line first, so `printf 'req' >&3; cat <&3` works without a newline.
//   - every request line gets exactly one answer line, "ok ..." or
//     "err <ERRNO> <message>"; blank lines get none.
//   - limits: a request line longer than maxRequest bytes is answered
//     "err E2BIG" as soon as it passes the limit and the rest of it is
//     skipped. Once more than maxUnread answer bytes wait to be read, a
//     write stops at the next line boundary (a short write), and a write
//     that finds them waiting fails with ENOBUFS (read the answers first).
//
// A handler (controlHandler) serves one session of one file; each file
// registers its spec (controlSpec) from an init function in its own file,
// so a new control file is one more file. The session's mutex serializes
// its requests, so a read issued while a request runs waits for its answer.

import (
	"bytes"
	"context"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Session limits.
const (
	// maxRequest is the longest request line, in bytes (4 MiB).
	maxRequest = 4 << 20
	// maxIDs is the most block ids one request may name.
	maxIDs = 100_000
	// maxUnread is how many answer bytes may wait unread before writes
	// fail with ENOBUFS.
	maxUnread = 16 << 20
	// keepBuffer is the buffer capacity a session keeps between requests.
	keepBuffer = 1 << 20
)

// controlHandler answers the requests of one session of one control file.
type controlHandler interface {
	// answer handles one request (a line without its line end, not
	// blank) and appends exactly one answer line, ending in '\n', to
	// out. On error it returns it instead; the session then drops what
	// was appended and answers "err <ERRNO> <message>" (see controlErr).
	answer(ctx context.Context, req []byte, out []byte) ([]byte, error)
	// close ends the session: its descriptor was released.
	close()
}

// controlSpec describes one session control file under .ucm/.
type controlSpec struct {
	name string
	ino  uint64
	// open starts the handler of a new session.
	open func(s *fsState) controlHandler
	// enabled reports whether the mount shows the file (nil: always).
	enabled func(s *fsState) bool
}

// controlFiles are the registered session control files.
var controlFiles []controlSpec

// registerControl adds a session control file; each file's init calls it.
func registerControl(c controlSpec) { controlFiles = append(controlFiles, c) }

// controlFile is the node of a session control file.
type controlFile struct {
	gofs.Inode
	common
	spec *controlSpec
}

var (
	_ = (gofs.NodeOpener)((*controlFile)(nil))
	_ = (gofs.NodeGetattrer)((*controlFile)(nil))
	_ = (gofs.NodeSetattrer)((*controlFile)(nil))
	_ = (gofs.NodeAccesser)((*controlFile)(nil))
	_ = (gofs.NodeStatfser)((*controlFile)(nil))
)

// path names the file in logs.
func (f *controlFile) path() string { return ucmName + "/" + f.spec.name }

// Getattr describes the file: size 0, mode 0600 for the mounting user, or
// 0660 with the control group (Options.ControlGroup).
func (f *controlFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.s.fileAttr(&out.Attr, 0, f.s.mounted, f.s.control.perm)
	out.Owner.Gid = f.s.control.gid
	return 0
}

// Setattr accepts a truncation to 0 (`echo req > file` opens with
// O_TRUNC) and new times (touch), which change nothing; chmod, chown and
// any other size are EPERM.
func (f *controlFile) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	sz, sized := in.GetSize()
	if in.Valid&(fuse.FATTR_MODE|fuse.FATTR_UID|fuse.FATTR_GID) != 0 || (sized && sz != 0) {
		return f.s.fail("setattr", f.path(), errImmutable)
	}
	return f.Getattr(ctx, fh, out)
}

// Access answers access(2) with the same rule as Open.
func (f *controlFile) Access(ctx context.Context, mask uint32) syscall.Errno {
	if mask&1 != 0 { // X_OK
		return syscall.EACCES
	}
	return f.s.controlAllowed(ctx)
}

// Open starts a session. The caller must be the mounting user, root, or
// a member of the control group.
func (f *controlFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if errno := f.s.controlAllowed(ctx); errno != 0 {
		return nil, 0, f.s.fail("open", f.path(), errno)
	}
	return &session{s: f.s, spec: f.spec, h: f.spec.open(f.s), limit: maxUnread}, fuse.FOPEN_DIRECT_IO, 0
}

// session is one open descriptor of a control file; see the file comment.
type session struct {
	s     *fsState
	spec  *controlSpec
	h     controlHandler
	limit int // maxUnread

	mu       sync.Mutex
	in       []byte // the unterminated request line so far
	skipping bool   // discarding the rest of an over-long line
	out      []byte // answers; out[read:] are unread
	read     int
}

var (
	_ = (gofs.FileReader)((*session)(nil))
	_ = (gofs.FileWriter)((*session)(nil))
	_ = (gofs.FileFlusher)((*session)(nil))
	_ = (gofs.FileFsyncer)((*session)(nil))
	_ = (gofs.FileReleaser)((*session)(nil))
)

// Write takes request bytes at any offset and answers every line they
// complete. Past the limit of unread answers it stops at a line boundary
// (a short write), and a write that finds the limit passed fails with
// ENOBUFS.
func (ss *session) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.out)-ss.read > ss.limit {
		return 0, ss.s.fail("write", ucmName+"/"+ss.spec.name,
			reqErr(syscall.ENOBUFS, "more than %d answer bytes unread: read the answers first", ss.limit))
	}
	n := len(data)
	for len(data) > 0 {
		if len(ss.out)-ss.read > ss.limit {
			return uint32(n - len(data)), 0 // a short write: the rest waits for room
		}
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			ss.buffer(data)
			break
		}
		line := data[:i]
		data = data[i+1:]
		switch {
		case ss.skipping:
			ss.skipping = false // the end of a line already answered E2BIG
		case len(ss.in) == 0 && len(line) <= maxRequest:
			ss.request(ctx, line)
		case len(ss.in)+len(line) <= maxRequest:
			ss.in = append(ss.in, line...)
			ss.request(ctx, ss.in)
			ss.in = trim(ss.in)
		default:
			ss.in = trim(ss.in)
			ss.tooLong()
		}
	}
	return uint32(n), 0
}

// buffer keeps the start of a request line, or notices it is too long.
func (ss *session) buffer(part []byte) {
	switch {
	case ss.skipping:
	case len(ss.in)+len(part) > maxRequest:
		ss.in = trim(ss.in)
		ss.tooLong()
		ss.skipping = true
	default:
		ss.in = append(ss.in, part...)
	}
}

// tooLong answers a request line past maxRequest.
func (ss *session) tooLong() {
	ss.out = ss.s.controlErr(ss.out, ss.spec.name, nil,
		reqErr(syscall.E2BIG, "request longer than %d bytes", maxRequest))
}

// request answers one complete line.
func (ss *session) request(ctx context.Context, line []byte) {
	line = bytes.TrimRight(line, "\r")
	line = bytes.Trim(line, " \t")
	if len(line) == 0 {
		return
	}
	start := len(ss.out)
	out, err := ss.h.answer(ctx, line, ss.out)
	if err != nil {
		out = ss.s.controlErr(out[:start], ss.spec.name, line, err)
	}
	ss.out = out
}

// Read returns the next unread answer bytes, at any offset.
func (ss *session) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.read == len(ss.out) && len(ss.in) > 0 && !ss.skipping {
		ss.request(ctx, ss.in)
		ss.in = trim(ss.in)
	}
	n := copy(dest, ss.out[ss.read:])
	ss.read += n
	if ss.read == len(ss.out) {
		ss.out, ss.read = trim(ss.out), 0
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Flush has nothing to do (see readHandle.Flush for why it exists).
func (ss *session) Flush(ctx context.Context) syscall.Errno { return 0 }

// Fsync has nothing to do: every request is answered when written.
func (ss *session) Fsync(ctx context.Context, flags uint32) syscall.Errno { return 0 }

// Release ends the session.
func (ss *session) Release(ctx context.Context) syscall.Errno {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.h.close()
	ss.in, ss.out, ss.read = nil, nil, 0
	return 0
}

// trim empties b, keeping its memory unless it grew past keepBuffer.
func trim(b []byte) []byte {
	if cap(b) > keepBuffer {
		return nil
	}
	return b[:0]
}
