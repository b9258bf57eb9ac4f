package tiers

import "sync/atomic"

// counters are the stack's event counts, updated atomically.
type counters struct {
	memHits, lowerHits, misses       atomic.Int64
	published, rejected, duplicates  atomic.Int64
	promotions, evictions, demotions atomic.Int64
	drops                            atomic.Int64
	promoteDropped                   atomic.Int64 // read-path promotions not queued or not done
	writeBacks, writeBackErrors      atomic.Int64
	directWrites, roomWaits          atomic.Int64
	throttles                        atomic.Int64 // publishes that waited at the dirty limit
	crcErrors, quarantined           atomic.Int64
	bytesIn, bytesOut                atomic.Int64
	memFull                          atomic.Int64 // ENOSPC from the memory tier's filesystem with room in its capacity
}

// TierStats is the state of one tier in a Stats snapshot.
type TierStats struct {
	Name       string `json:"name"`
	Persistent bool   `json:"persistent"`
	Capacity   int64  `json:"capacity"`
	Used       int64  `json:"used"`
	Charged    int64  `json:"charged"` // what the files take of the capacity: used, or whole pages in the memory tier
	Blocks     int64  `json:"blocks"`
	MaxFiles   int64  `json:"max_files"` // the most files it holds (--max-files; 0: no bound)
	Pinned     int64  `json:"pinned"`    // what pinned files take of the capacity (the memory tier's pins)
	Health     string `json:"health"`
	// LinksRefused is how many symbolic links (or ways out of the root)
	// the tier's operations met in its directory and refused: a link is
	// never followed nor listed (package rootfs).
	LinksRefused int64 `json:"links_refused"`
	// Probes is how many health probes a directory tier ran (one a
	// second; each also checks that its directory is still the one at its
	// path).
	Probes int64 `json:"probes"`
}

// Stats is a snapshot of the stack's counters and tiers.
type Stats struct {
	Tiers           []TierStats `json:"tiers"`
	MemHits         int64       `json:"mem_hits"`
	LowerHits       int64       `json:"lower_hits"`
	Misses          int64       `json:"misses"`
	Published       int64       `json:"published"`
	Rejected        int64       `json:"rejected"`
	Duplicates      int64       `json:"duplicates"`
	Promotions      int64       `json:"promotions"`
	Evictions       int64       `json:"evictions"`
	Demotions       int64       `json:"demotions"`
	Drops           int64       `json:"drops"`
	WriteBacks      int64       `json:"write_backs"`
	WriteBackErrors int64       `json:"write_back_errors"`
	DirectWrites    int64       `json:"direct_writes"`
	RoomWaits       int64       `json:"room_waits"`
	CRCErrors       int64       `json:"crc_errors"`
	Quarantined     int64       `json:"quarantined"`
	BytesIn         int64       `json:"bytes_in"`
	BytesOut        int64       `json:"bytes_out"`
	FlushQueue      int         `json:"flush_queue"`
	// DirtyBytes and DirtyFiles are what the memory tier holds that is
	// not yet on a persistent tier (files: blocks and sidecars).
	DirtyBytes int64 `json:"dirty_bytes"`
	DirtyFiles int64 `json:"dirty_files"`
	// Throttles counts publishes that waited at the dirty limit.
	Throttles int64 `json:"dirty_throttles"`
	// MemFull counts ENOSPC from the memory tier's filesystem while its
	// capacity showed room (stack_memfull.go).
	MemFull int64 `json:"mem_full"`
}

// Stats returns a snapshot of counters and per-tier use.
func (s *Stack) Stats() Stats {
	c := &s.stats
	st := Stats{
		MemHits: c.memHits.Load(), LowerHits: c.lowerHits.Load(), Misses: c.misses.Load(),
		Published: c.published.Load(), Rejected: c.rejected.Load(), Duplicates: c.duplicates.Load(),
		Promotions: c.promotions.Load(), Evictions: c.evictions.Load(), Demotions: c.demotions.Load(),
		Drops: c.drops.Load(), WriteBacks: c.writeBacks.Load(), WriteBackErrors: c.writeBackErrors.Load(),
		DirectWrites: c.directWrites.Load(), RoomWaits: c.roomWaits.Load(),
		CRCErrors: c.crcErrors.Load(), Quarantined: c.quarantined.Load(),
		BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(), Throttles: c.throttles.Load(),
		MemFull: c.memFull.Load(),
	}
	dirty := s.DirtyUsage()
	st.DirtyBytes, st.DirtyFiles = dirty.Bytes, dirty.Files
	for _, t := range s.Tiers() {
		st.Tiers = append(st.Tiers, TierStats{Name: t.Name, Persistent: t.Persistent, Capacity: t.Usage.Capacity,
			Used: t.Usage.Used, Charged: t.Usage.Charged, Blocks: t.Usage.Files, MaxFiles: t.Usage.MaxFiles, Pinned: t.Usage.Pinned, Health: t.Health.String(),
			LinksRefused: t.LinksRefused, Probes: t.Probes})
	}
	s.mu.Lock()
	st.FlushQueue = len(s.queue)
	s.mu.Unlock()
	return st
}
