package store

import (
	"fmt"
	"iter"
	"slices"

	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// The store soak's checks of the counters and the KV events against what
// the tiers hold: a subscriber of the store's journal (Store.Events, what
// the KV-event publisher reads) keeps, per tier, what the events say the
// tier holds; each stored is announced once, each removed after its
// stored (or of a file held before the store opened). Under each shard's
// lock (tiers.Stack.TierLockedShard, where the events are appended) what
// the events say must be what the tier's index holds; and the snapshot's
// files and bytes per tier (Store.Snapshot) must be the index's, when no
// event came during the walk.

// soakEvents is what the events said of each tier since the store opened.
type soakEvents struct {
	j    *events.Journal
	next uint64
	buf  []events.Event
	// held: per tier, each key an event named: whether the last said
	// stored, and its size.
	held map[int]map[format.Key]soakHeld
}

type soakHeld struct {
	stored bool
	size   int64
}

// reset subscribes to s's journal from its start.
func (e *soakEvents) reset(s *Store) {
	*e = soakEvents{j: s.Events(), next: 0, buf: make([]events.Event, 256), held: map[int]map[format.Key]soakHeld{}}
}

// drain applies the events appended since the last drain; it returns
// what is wrong with them ("" when nothing).
func (e *soakEvents) drain() string {
	for {
		n, next, lost := e.j.Read(e.next, e.buf)
		e.next = next
		if lost.Count() > 0 {
			return fmt.Sprintf("%d events lost from the journal", lost.Count())
		}
		if n == 0 {
			return ""
		}
		for _, ev := range e.buf[:n] {
			if ev.Type != events.Stored && ev.Type != events.Removed {
				continue
			}
			t := e.held[ev.Tier]
			if t == nil {
				t = map[format.Key]soakHeld{}
				e.held[ev.Tier] = t
			}
			was, seen := t[ev.Key]
			stored := ev.Type == events.Stored
			switch {
			case stored && was.stored:
				return fmt.Sprintf("event %d: %s stored in tier %d, announced stored already", ev.Seq, ev.Key, ev.Tier)
			case !stored && seen && !was.stored:
				return fmt.Sprintf("event %d: %s removed from tier %d, not stored since its last removal", ev.Seq, ev.Key, ev.Tier)
			}
			t[ev.Key] = soakHeld{stored: stored, size: ev.Size}
		}
	}
}

// checkTiers holds the events and the snapshot to the tiers' indexes.
func (sr *storeSoak) checkTiers(when string) {
	for range 8 { // the counters are retried while files move meanwhile
		before := sr.ev.j.Next()
		snap := sr.s.Snapshot()
		files, bytes, bad := sr.walkTiers()
		if bad != "" {
			sr.open("events", "%s: %s", when, bad)
			return
		}
		if sr.ev.j.Next() != before {
			continue
		}
		for i, t := range snap.Tiers {
			if t.Blocks != files[i] || t.Used != bytes[i] {
				sr.open("counters", "%s: tier %d (%s) counts %d files, %d bytes; its index holds %d, %d bytes",
					when, i, t.Name, t.Blocks, t.Used, files[i], bytes[i])
			}
		}
		return
	}
}

// walkTiers walks every shard of every model of every tier under its
// lock, checks the events against it and counts the files and bytes.
func (sr *storeSoak) walkTiers() (files, bytes []int64, bad string) {
	n := len(sr.st.Tiers())
	files, bytes = make([]int64, n), make([]int64, n)
	for i := range n {
		id := tiers.TierID(i)
		models := sr.st.TierModels(id)
		for k, h := range sr.ev.held[i] {
			if h.stored && !slices.Contains(models, k.Model) {
				models = append(models, k.Model)
			}
		}
		for _, model := range models {
			for hh := range 256 {
				sr.st.TierLockedShard(id, model, byte(hh), func(held iter.Seq2[format.Key, int64]) {
					if bad == "" {
						bad = sr.ev.drain()
					}
					f, b, why := sr.ev.shard(i, model, byte(hh), held)
					files[i], bytes[i] = files[i]+f, bytes[i]+b
					if bad == "" {
						bad = why
					}
				})
			}
		}
	}
	return files, bytes, bad
}

// shard compares what the events said of one shard of tier i with what
// it holds (under its lock) and counts its files and bytes.
func (e *soakEvents) shard(i int, model string, hh byte, held iter.Seq2[format.Key, int64]) (files, bytes int64, bad string) {
	t := e.held[i]
	in := map[format.Key]bool{}
	for k, size := range held {
		files, bytes = files+1, bytes+size
		in[k] = true
		if !events.Reported(k) {
			continue
		}
		if h, ok := t[k]; ok && !h.stored && bad == "" {
			bad = fmt.Sprintf("tier %d holds %s, announced removed", i, k)
		}
	}
	for k, h := range t {
		if h.stored && k.Model == model && k.ID[0] == hh && !in[k] && bad == "" {
			bad = fmt.Sprintf("tier %d does not hold %s, announced stored", i, k)
		}
	}
	return files, bytes, bad
}
