package events

import (
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// Type is what an Event says happened.
type Type uint8

// The event types.
const (
	Stored  Type = iota + 1 // the block entered the tier
	Removed                 // the block left the tier
	Cleared                 // the daemon started: forget every block it was said to hold
)

// String is the type's name in .ucm/events ("stored", "removed",
// "cleared").
func (t Type) String() string {
	switch t {
	case Stored:
		return "stored"
	case Removed:
		return "removed"
	case Cleared:
		return "cleared"
	}
	return "unknown"
}

// Event is one change of what a tier holds.
type Event struct {
	Seq  uint64     // its place in the journal: 1, 2, ... since the daemon started
	Type Type       // Stored, Removed or Cleared
	Tier int        // the tier (tiers.TierID: 0 memory, then the directory tiers); -1 for Cleared
	Size int64      // the file's size in bytes (0 for Cleared)
	Time int64      // when it was appended, Unix nanoseconds
	Key  format.Key // the block or file (zero for Cleared)
	// Hash is the hash a router knows Key by as it was when the event
	// was appended (EngineHash, or the model's key_pattern, which may
	// change after: a removal must name the hash its storing did);
	// HasHash is false where none was known.
	Hash    uint64
	HasHash bool
}

// DefaultWindow is how many events a Journal keeps for readers that
// start behind or fall behind (New with 0).
const DefaultWindow = 1 << 16

// Journal is a ring of the last events: appends never wait, each reader
// keeps its own position (a sequence number) and reads on from it.
type Journal struct {
	mu   sync.Mutex
	ring []Event
	next uint64        // the sequence number of the next event; the first is 1
	wake chan struct{} // closed by the next Append; nil while nobody waits
}

// New returns an empty journal that keeps the last window events (0:
// DefaultWindow).
func New(window int) *Journal {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Journal{ring: make([]Event, window), next: 1}
}

// Window is how many events the journal keeps.
func (j *Journal) Window() int { return len(j.ring) }

// Append numbers e, stamps its time and keeps it, dropping the oldest
// event once the window is full; it returns e's sequence number.
func (j *Journal) Append(e Event) uint64 {
	e.Time = time.Now().UnixNano()
	j.mu.Lock()
	e.Seq = j.next
	j.ring[e.Seq%uint64(len(j.ring))] = e
	j.next++
	w := j.wake
	j.wake = nil
	j.mu.Unlock()
	if w != nil {
		close(w)
	}
	return e.Seq
}

// Next is the sequence number the next event will have.
func (j *Journal) Next() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next
}

// oldestLocked is the sequence number of the oldest event kept.
func (j *Journal) oldestLocked() uint64 {
	if w := uint64(len(j.ring)); j.next > w {
		return j.next - w
	}
	return 1
}

// Read copies into dst the events from sequence number from on, as many
// as fit. From 0 reads from the oldest kept; so does a number past the
// next event's, which a reader keeps from an earlier run of the daemon
// (the numbers restart at 1 with a "cleared" event). It returns
// how many it copied, the number to read from next time, and Gap: the
// events from on that are no longer kept (their count is Gap.Count(),
// zero when none were lost).
func (j *Journal) Read(from uint64, dst []Event) (n int, next uint64, lost Gap) {
	j.mu.Lock()
	defer j.mu.Unlock()
	oldest := j.oldestLocked()
	switch {
	case from == 0:
		from = oldest
	case from < oldest:
		lost = Gap{From: from, To: oldest - 1}
		from = oldest
	case from > j.next: // a number of an earlier run of the daemon
		from = oldest
	}
	w := uint64(len(j.ring))
	for from < j.next && n < len(dst) {
		dst[n] = j.ring[from%w]
		n++
		from++
	}
	return n, from, lost
}

// Gap is a run of events a reader missed: sequence numbers From to To,
// both included.
type Gap struct{ From, To uint64 }

// Count is how many events the gap holds (0 for none).
func (g Gap) Count() uint64 {
	if g.To < g.From || g.From == 0 {
		return 0
	}
	return g.To - g.From + 1
}

// Wait returns a channel that is closed once there is an event numbered
// from or later (at once if there is one already).
func (j *Journal) Wait(from uint64) <-chan struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.next > from {
		return closed
	}
	if j.wake == nil {
		j.wake = make(chan struct{})
	}
	return j.wake
}

// closed is a closed channel (Wait with events already there).
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
