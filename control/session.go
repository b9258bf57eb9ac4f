package control

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
//   - limits: a request line longer than MaxRequest bytes is answered
//     "err E2BIG" as soon as it passes the limit and the rest of it is
//     skipped. Once more than MaxUnread answer bytes wait to be read, a
//     write stops at the next line boundary (a short write), and a write
//     that finds them waiting fails with ENOBUFS (read the answers first).
//
// A handler serves one session of one file; each file registers itself
// (File) from an init function in its own source file, so a new control
// file is one more file. The front end moves the bytes: Session.Write and
// Session.Read are the file's write and read. The session's mutex serializes
// its requests, so a read issued while a request runs waits for its answer.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
)

// Session limits.
const (
	// MaxRequest is the longest request line, in bytes (4 MiB).
	MaxRequest = 4 << 20
	// MaxIDs is the most block ids one request may name.
	MaxIDs = line.MaxIDs
	// MaxUnread is how many answer bytes may wait unread before writes
	// fail with ENOBUFS.
	MaxUnread = 16 << 20
	// keepBuffer is the buffer capacity a session keeps between requests.
	keepBuffer = line.KeepBuffer
	// MaxSessionsPerUser is how many control sessions one uid may hold
	// open at once, over all files. Each may buffer a request and answers
	// (MaxRequest + MaxUnread) while in use and keeps at most keepBuffer
	// between requests. The kernel ends a session with a RELEASE sent after
	// close(2) returns (up to 64 wait in its background queue), so the
	// bound leaves room for a client that opens and closes in a loop.
	MaxSessionsPerUser = 256
	// MaxSessions is how many control sessions may be open at once, in all.
	MaxSessions = 4096
)

// Open starts a session of f for a request from inside the daemon (no
// limit; see OpenAs).
func (f File) Open(e *Env) *Session {
	return &Session{e: e, file: f.Name, h: f.open(e), limit: MaxUnread}
}

// OpenAs starts a session of f opened by the process of c (captured by
// Access.Capture), within MaxSessionsPerUser and MaxSessions
// (ErrSessions). Its requests are checked as c, and only a process with
// c's fsuid and fsgid may write or read it (line.Creds). The session owns
// c: Close releases it and gives the session's place back; so does a
// refused open.
func (f File) OpenAs(e *Env, c *line.Creds) (*Session, error) {
	if err := e.sessions.take(c.Uid); err != nil {
		c.Close()
		return nil, err
	}
	ss := f.Open(e)
	ss.creds, ss.counted = c, true
	return ss, nil
}

// Session is one open descriptor of a control file; see the file comment.
type Session struct {
	e     *Env
	file  string
	h     handler
	limit int // MaxUnread

	creds   *line.Creds // its opener's (OpenAs); nil for the daemon's own
	counted bool        // opened by OpenAs: Close gives the place back

	mu       sync.Mutex
	in       []byte // the unterminated request line so far
	skipping bool   // discarding the rest of an over-long line
	out      []byte // answers; out[read:] are unread
	read     int
}

// Write takes request bytes at any offset and answers every line they
// complete. Past the limit of unread answers it stops at a line boundary
// (a short write), and a write that finds the limit passed fails with
// ErrBackpressure.
func (ss *Session) Write(ctx context.Context, data []byte) (int, error) {
	ctx, err := asOpener(ctx, ss.creds)
	if err != nil {
		return 0, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.out)-ss.read > ss.limit {
		return 0, line.Err(ErrBackpressure, "more than %d answer bytes unread: read the answers first", ss.limit)
	}
	n := len(data)
	for len(data) > 0 {
		if len(ss.out)-ss.read > ss.limit {
			return n - len(data), nil // a short write: the rest waits for room
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
		case len(ss.in) == 0 && len(line) <= MaxRequest:
			ss.request(ctx, line)
		case len(ss.in)+len(line) <= MaxRequest:
			ss.in = append(ss.in, line...)
			ss.request(ctx, ss.in)
			ss.in = trim(ss.in)
		default:
			ss.in = trim(ss.in)
			ss.tooLong()
		}
	}
	return n, nil
}

// buffer keeps the start of a request line, or notices it is too long.
func (ss *Session) buffer(part []byte) {
	switch {
	case ss.skipping:
	case len(ss.in)+len(part) > MaxRequest:
		ss.in = trim(ss.in)
		ss.tooLong()
		ss.skipping = true
	default:
		ss.in = append(ss.in, part...)
	}
}

// tooLong answers a request line past MaxRequest.
func (ss *Session) tooLong() {
	ss.out = ss.e.refuse(ss.out, ss.file, nil,
		line.Err(line.ErrTooMany, "request longer than %d bytes", MaxRequest))
}

// request answers one complete line.
func (ss *Session) request(ctx context.Context, req []byte) {
	req = bytes.TrimRight(req, "\r")
	req = bytes.Trim(req, " \t")
	if len(req) == 0 {
		return
	}
	start := len(ss.out)
	began := time.Now()
	out, err := ss.h.answer(ctx, req, ss.out)
	if err != nil {
		out = ss.e.refuse(out[:start], ss.file, req, err)
	}
	ss.out = out
	if ss.e.Log.Enabled(ctx, slog.LevelDebug) {
		// What each request did, for an admin following a daemon with
		// --log-level debug (the answer line, clipped like the request).
		ss.e.Log.Debug("control request", "file", Dir+"/"+ss.file, "request", line.Clip(req),
			"answer", line.Clip(bytes.TrimSuffix(out[start:], []byte("\n"))), "took", time.Since(began))
	}
}

// Read copies the next unread answer bytes into dest (the file offset
// means nothing here) and returns how many; 0 is the end of the answers.
// A sender that is not the opener's (line.Creds.Admits) reads nothing.
func (ss *Session) Read(ctx context.Context, dest []byte) (int, error) {
	ctx, err := asOpener(ctx, ss.creds)
	if err != nil {
		return 0, err
	}
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
	return n, nil
}

// asOpener checks the sender of a write or read that ctx carries against
// the opener's credentials c (line.Creds.Admits) and returns ctx carrying
// c, which the requests are checked as. A session of the daemon's own (c
// nil) takes ctx as it is.
func asOpener(ctx context.Context, c *line.Creds) (context.Context, error) {
	if c == nil {
		return ctx, nil
	}
	if w, ok := line.CallerOf(ctx); ok {
		if err := c.Admits(w); err != nil {
			return ctx, err
		}
	}
	return line.WithCreds(ctx, c), nil
}

// Close ends the session (its descriptor was released).
func (ss *Session) Close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.h.close()
	ss.in, ss.out, ss.read = nil, nil, 0
	if ss.counted {
		ss.counted = false
		ss.e.sessions.give(ss.creds.Uid)
		ss.creds.Close()
	}
}

// sessionCount counts the open sessions, per uid and in all.
type sessionCount struct {
	mu sync.Mutex
	n  perUID
}

// take counts one more session of uid, or fails with ErrSessions.
func (c *sessionCount) take(uid uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.n.of(uid) >= MaxSessionsPerUser:
		return fmt.Errorf("uid %d has %d open: %w", uid, MaxSessionsPerUser, ErrSessions)
	case c.n.total >= MaxSessions:
		return fmt.Errorf("%d open in all: %w", MaxSessions, ErrSessions)
	}
	c.n.add(uid, 1)
	return nil
}

// give counts one session of uid less.
func (c *sessionCount) give(uid uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n.add(uid, -1)
}

// perUID counts what each uid holds, and every uid together; its
// owner's mutex guards it.
type perUID struct {
	total int64
	per   map[uint32]int64
}

// of is what uid holds.
func (c *perUID) of(uid uint32) int64 { return c.per[uid] }

// add counts n more (or, negative, less) for uid; a uid that holds
// nothing is forgotten.
func (c *perUID) add(uid uint32, n int64) {
	if c.per == nil {
		c.per = make(map[uint32]int64)
	}
	c.total += n
	if c.per[uid] += n; c.per[uid] <= 0 {
		delete(c.per, uid)
	}
}

// trim empties b, keeping its memory unless it grew past keepBuffer.
func trim(b []byte) []byte {
	if cap(b) > keepBuffer {
		return nil
	}
	return b[:0]
}
