package events

import (
	"encoding/json"
	"fmt"

	"time"

	"github.com/ucmfs/ucmfs/format"
)

// Line is one line of .ucm/events, a JSON object: an event ("stored",
// "removed", "cleared"), a "lost" run of events the reader fell behind
// on, or an "idle" line, which a read returns when no event came for a
// while so that a reader learns where the journal stands.
type Line struct {
	Seq    uint64 `json:"seq,omitempty"`
	Type   string `json:"type"`
	Model  string `json:"model,omitempty"`
	Layout string `json:"layout,omitempty"`
	ID     string `json:"id,omitempty"`   // the block's id (hex); for a file, the id of its path
	Path   string `json:"path,omitempty"` // a file's path in its model (files layout)
	Hash   string `json:"hash,omitempty"` // Event.Hash, 16 hex digits, where known
	Tier   string `json:"tier,omitempty"` // the tier's kind: mem, nvme, nfs, ds3fs
	Medium string `json:"medium,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Time   string `json:"time,omitempty"` // RFC 3339, nanoseconds, UTC
	// lost: the sequence numbers From to To, Count events; idle: Next,
	// the number of the next event.
	From  uint64 `json:"from,omitempty"`
	To    uint64 `json:"to,omitempty"`
	Count uint64 `json:"count,omitempty"`
	Next  uint64 `json:"next,omitempty"`
}

// Tiers names the tiers of a stack for the lines, Kinds[id] and
// Mediums[id] of tier id, and how a block's hash is known.
type Tiers struct {
	Kinds   []string
	Mediums []string
	// Hash is the hash a router knows a block by now (EngineHash, or a
	// model's own rule), for walks of what the tiers hold; ok is false
	// where none can be known. An event's line gives the event's own
	// Hash, fixed when it was appended.
	Hash func(format.Key) (h uint64, ok bool)
}

// NewTiers names tiers of these kinds (memory first), with hash (nil:
// EngineHash).
func NewTiers(kinds []string, hash func(format.Key) (uint64, bool)) Tiers {
	if hash == nil {
		hash = EngineHash
	}
	return Tiers{Kinds: kinds, Mediums: Mediums(kinds), Hash: hash}
}

// name returns the kind and medium of tier id ("" where out of range).
func (t Tiers) name(id int) (kind, medium string) {
	if id < 0 || id >= len(t.Kinds) {
		return "", ""
	}
	return t.Kinds[id], t.Mediums[id]
}

// AppendLine appends e's line to b, ending in '\n'.
func (t Tiers) AppendLine(b []byte, e *Event) []byte {
	l := Line{Seq: e.Seq, Type: e.Type.String(), Time: time.Unix(0, e.Time).UTC().Format(time.RFC3339Nano)}
	if e.Type != Cleared {
		l.Model, l.Layout, l.Size = e.Key.Model, Layout(e.Key), e.Size
		l.ID, l.Path = e.Key.ID.String(), e.Key.Name
		if e.HasHash {
			l.Hash = hex16(e.Hash)
		}
		l.Tier, l.Medium = t.name(e.Tier)
	}
	return appendJSON(b, &l)
}

// AppendLost appends the line of a gap.
func AppendLost(b []byte, g Gap) []byte {
	return appendJSON(b, &Line{Type: "lost", From: g.From, To: g.To, Count: g.Count()})
}

// AppendIdle appends an idle line: next is the number of the next event.
func AppendIdle(b []byte, next uint64) []byte {
	return appendJSON(b, &Line{Type: "idle", Next: next})
}

// hex16 is h in 16 hex digits.
func hex16(h uint64) string { return fmt.Sprintf("%016x", h) }

// appendJSON appends l as one JSON line.
func appendJSON(b []byte, l *Line) []byte {
	j, err := json.Marshal(l)
	if err != nil { // a Line always marshals
		panic(err)
	}
	return append(append(b, j...), '\n')
}
