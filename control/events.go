package control

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/store"
)

// .ucm/events: the journal of what the tiers hold (package events), read
// as a stream of JSON lines. Each open descriptor is an EventStream with
// its own position, at first the next event to come. A write of "from
// <seq>", "from oldest" or "from now" moves it. A read returns whole
// lines: the events from the position on, of the models the reader may
// list (read permission, as ls needs), a "lost" line first when the
// position has left the journal's window; with none, it waits up to
// EventWait for one, then returns an "idle" line naming the next
// sequence number. At most one waiting read per CPU holds a FUSE request
// at a time; a read beyond that returns its idle line at once.

// EventWait is the longest a read of .ucm/events waits for an event.
const EventWait = 2 * time.Second

// permitTTL is how long a stream trusts its answer to whether its reader
// may see a model's events (a chmod takes effect within it).
const permitTTL = time.Second

// EventStream is one open descriptor of .ucm/events.
type EventStream struct {
	e       *Env
	j       *events.Journal
	tiers   events.Tiers
	creds   *line.Creds // its opener's: the reader it filters for
	counted bool

	mu      sync.Mutex
	next    uint64 // the sequence number to read from
	pending []byte // lines not yet read (a read smaller than a line)
	buf     []events.Event
	permits map[string]permit
}

// permit is a cached answer of store.ModelPermits.
type permit struct {
	ok bool
	at time.Time
}

// eventWaiters bounds the reads of .ucm/events waiting at once: each
// holds a FUSE request (and, over io_uring, a ring entry) while it waits.
var eventWaiters = make(chan struct{}, max(1, runtime.NumCPU()))

// OpenEvents opens a stream of .ucm/events for the process of c
// (captured by Access.Capture), at the next event, counted within the
// session limits (ErrSessions) like any control session. It shows the
// events c may see, and only a process with c's fsuid and fsgid may read
// or write it (line.Creds.Admits). The stream owns c (Close, or a
// refused open, releases it).
func (e *Env) OpenEvents(c *line.Creds) (*EventStream, error) {
	if err := e.sessions.take(c.Uid); err != nil {
		c.Close()
		return nil, err
	}
	j := e.store.Events()
	return &EventStream{e: e, j: j, tiers: e.store.EventTiers(), creds: c, counted: true,
		next: j.Next(), buf: make([]events.Event, 256), permits: map[string]permit{}}, nil
}

// Write takes "from <seq>", "from oldest" or "from now" lines; the last
// one sets where the next read starts. Anything else is ErrInvalid.
func (s *EventStream) Write(ctx context.Context, data []byte) (int, error) {
	if _, err := asOpener(ctx, s.creds); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, req := range bytes.Split(data, []byte("\n")) {
		req = bytes.TrimSpace(req)
		if len(req) == 0 {
			continue
		}
		arg, ok := bytes.CutPrefix(req, []byte("from "))
		arg = bytes.TrimSpace(arg)
		switch {
		case !ok:
			return 0, line.Err(line.ErrInvalid, "events: %q: want from <seq>, from oldest or from now", line.Clip(req))
		case string(arg) == "oldest":
			s.next = 0
		case string(arg) == "now":
			s.next = s.j.Next()
		default:
			n, err := strconv.ParseUint(string(arg), 10, 64)
			if err != nil {
				return 0, line.Err(line.ErrInvalid, "events: from %q: not a sequence number", line.Clip(arg))
			}
			s.next = n
		}
		s.pending = s.pending[:0]
	}
	return len(data), nil
}

// Read copies the next lines into dest, waiting up to wait for an event
// when there is none; it returns 0 only when ctx is done (an interrupted
// read), or with the error of a sender that is not the opener's.
func (s *EventStream) Read(ctx context.Context, dest []byte, wait time.Duration) (int, error) {
	ctx, err := asOpener(ctx, s.creds)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	waited := false
	for len(s.pending) == 0 {
		s.fill(ctx, len(dest))
		if len(s.pending) > 0 {
			break
		}
		if waited || !s.wait(ctx, wait) {
			if ctx.Err() != nil {
				return 0, nil
			}
			s.pending = events.AppendIdle(s.pending, max(s.next, 1))
			break
		}
		waited = true
	}
	n := copy(dest, s.pending)
	s.pending = s.pending[:copy(s.pending, s.pending[n:])]
	return n, nil
}

// fill appends to pending the lines of the events from next on, until
// they pass want bytes or the journal has no more.
func (s *EventStream) fill(ctx context.Context, want int) {
	n, next, lost := s.j.Read(s.next, s.buf)
	if lost.Count() > 0 {
		s.pending = events.AppendLost(s.pending, lost)
	}
	for i := range s.buf[:n] {
		ev := &s.buf[i]
		if ev.Type == events.Cleared || s.visible(ctx, ev.Key.Model) {
			s.pending = s.tiers.AppendLine(s.pending, ev)
		}
		if len(s.pending) >= want {
			next = ev.Seq + 1
			break
		}
	}
	s.next = next
}

// wait waits for an event at or after next, up to d: false when none
// came (or ctx was done, or EventWait's slots were all taken).
func (s *EventStream) wait(ctx context.Context, d time.Duration) bool {
	select {
	case eventWaiters <- struct{}{}:
		defer func() { <-eventWaiters }()
	default:
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.j.Wait(max(s.next, 1)):
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// visible reports whether the reader may list model (cached permitTTL).
func (s *EventStream) visible(ctx context.Context, model string) bool {
	now := time.Now()
	if p, ok := s.permits[model]; ok && now.Sub(p.at) < permitTTL {
		return p.ok
	}
	ok := line.CheckModel(ctx, model, s.e.store.Models().Permits, store.AccessRead, "events") == nil
	if len(s.permits) > 4096 {
		clear(s.permits)
	}
	s.permits[model] = permit{ok: ok, at: now}
	return ok
}

// Close ends the stream (its descriptor was released).
func (s *EventStream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending, s.buf = nil, nil
	if s.counted {
		s.counted = false
		s.e.sessions.give(s.creds.Uid)
		s.creds.Close()
	}
}
