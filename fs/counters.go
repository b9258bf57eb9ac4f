package fs

import (
	"strings"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/tiers"
)

// The mount's own counters, next to the stack's (tiers.Stats): what
// clients moved through each tier, and the control plane's requests.
// .ucm/stats and the metrics both read them through mountStats, so every
// number has one source.

// controlCounters count the control plane's requests.
type controlCounters struct {
	lookups, lookupIDs, lookupHits              atomic.Int64
	prefetches, prefetchQueued, prefetchMissing atomic.Int64
	prefetchPromoted, prefetchFailed            atomic.Int64
	flushes, flushErrors                        atomic.Int64
	errors                                      atomic.Int64

	gpuRegions                            atomic.Int64 // open now
	gpuLoads, gpuLoadBlocks, gpuLoadBytes atomic.Int64
	gpuLoadUnmapped                       atomic.Int64
	gpuDumps, gpuDumpBlocks, gpuDumpBytes atomic.Int64
	gpuDumpExisting                       atomic.Int64

	reprDerived              atomic.Int64 // sidecars derived and stored
	topks, topkCandidates    atomic.Int64
	topkMissing, topkDerived atomic.Int64
	topkReused               atomic.Int64
}

// tierIO counts the bytes clients moved through one tier.
type tierIO struct {
	in  atomic.Int64 // bytes of files published into the tier
	out atomic.Int64 // bytes of files opened for reading from the tier
}

// controlStats is the control plane's part of the stats snapshot.
type controlStats struct {
	Lookups          int64 `json:"lookups"`           // lookup requests answered ok
	LookupIDs        int64 `json:"lookup_ids"`        // ids looked up (prefix: up to the first absent one)
	LookupHits       int64 `json:"lookup_hits"`       // ids found present
	Prefetches       int64 `json:"prefetches"`        // prefetch requests
	PrefetchQueued   int64 `json:"prefetch_queued"`   // ids queued for promotion
	PrefetchMissing  int64 `json:"prefetch_missing"`  // ids no tier held
	PrefetchPromoted int64 `json:"prefetch_promoted"` // promotions done (or already in memory)
	PrefetchFailed   int64 `json:"prefetch_failed"`   // promotions that failed (no room, gone)
	PrefetchPending  int64 `json:"prefetch_pending"`  // promotions queued or running now
	Flushes          int64 `json:"flushes"`           // flush requests
	FlushErrors      int64 `json:"flush_errors"`      // flush requests answered err
	ControlErrors    int64 `json:"control_errors"`    // control requests answered err

	GPUDevice       string `json:"gpu_device,omitempty"` // the device of .ucm/gpu ("sim", "cuda:0 ..."); absent without one
	GPURegions      int64  `json:"gpu_regions"`          // regions registered now
	GPULoads        int64  `json:"gpu_loads"`            // load requests answered ok
	GPULoadBlocks   int64  `json:"gpu_load_blocks"`      // blocks (or layer ranges) loaded
	GPULoadBytes    int64  `json:"gpu_load_bytes"`       // bytes copied into regions
	GPULoadUnmapped int64  `json:"gpu_load_unmapped"`    // of the blocks loaded, those read from a file, not a registered mapping
	GPUDumps        int64  `json:"gpu_dumps"`            // dump requests answered ok
	GPUDumpBlocks   int64  `json:"gpu_dump_blocks"`      // blocks published from regions
	GPUDumpExisting int64  `json:"gpu_dump_existing"`    // dumped ids that were already stored
	GPUDumpBytes    int64  `json:"gpu_dump_bytes"`       // bytes of the blocks published from regions

	ReprDerived    int64 `json:"repr_derived"`    // sidecars derived from their block and stored
	TopKs          int64 `json:"topks"`           // topk requests answered ok
	TopKCandidates int64 `json:"topk_candidates"` // candidates of those requests
	TopKMissing    int64 `json:"topk_missing"`    // candidates reported missing (no sidecar and none derivable)
	TopKDerived    int64 `json:"topk_derived"`    // candidates whose sidecar was derived for a topk request
	TopKReused     int64 `json:"topk_reused"`     // topk requests that reused their session's index
}

// tierStats is one tier in the stats snapshot: the stack's view, and the
// bytes clients moved through it.
type tierStats struct {
	tiers.TierStats
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// mountStats is the content of .ucm/stats: the stack's snapshot with its
// tiers extended, and the control plane's counters.
type mountStats struct {
	Tiers []tierStats `json:"tiers"`
	tiers.Stats
	controlStats
}

// snapshotStats takes the counters now.
func (s *fsState) snapshotStats() mountStats {
	st := s.stack.Stats()
	m := mountStats{Stats: st, Tiers: make([]tierStats, len(st.Tiers))}
	for i, t := range st.Tiers {
		m.Tiers[i].TierStats = t
		if i < len(s.tierIO) {
			m.Tiers[i].BytesIn = s.tierIO[i].in.Load()
			m.Tiers[i].BytesOut = s.tierIO[i].out.Load()
		}
	}
	c := &s.ctl
	m.controlStats = controlStats{
		Lookups: c.lookups.Load(), LookupIDs: c.lookupIDs.Load(), LookupHits: c.lookupHits.Load(),
		Prefetches: c.prefetches.Load(), PrefetchQueued: c.prefetchQueued.Load(),
		PrefetchMissing: c.prefetchMissing.Load(), PrefetchPromoted: c.prefetchPromoted.Load(),
		PrefetchFailed: c.prefetchFailed.Load(), PrefetchPending: s.prefetch.pending.Load(),
		Flushes: c.flushes.Load(), FlushErrors: c.flushErrors.Load(), ControlErrors: c.errors.Load(),
		GPURegions: c.gpuRegions.Load(), GPULoads: c.gpuLoads.Load(), GPULoadBlocks: c.gpuLoadBlocks.Load(),
		GPULoadBytes: c.gpuLoadBytes.Load(), GPULoadUnmapped: c.gpuLoadUnmapped.Load(),
		GPUDumps: c.gpuDumps.Load(), GPUDumpBlocks: c.gpuDumpBlocks.Load(), GPUDumpBytes: c.gpuDumpBytes.Load(),
		GPUDumpExisting: c.gpuDumpExisting.Load(),
		ReprDerived:     c.reprDerived.Load(), TopKs: c.topks.Load(), TopKCandidates: c.topkCandidates.Load(),
		TopKMissing: c.topkMissing.Load(), TopKDerived: c.topkDerived.Load(), TopKReused: c.topkReused.Load(),
	}
	if s.opts.GPU != nil {
		m.GPUDevice = s.opts.GPU.Name()
	}
	return m
}

// tierOf returns the position in the stack (0 memory, then the directory
// tiers in order) of the tier whose directory holds path, or -1.
func (s *fsState) tierOf(path string) int {
	if within(path, s.stack.Mem().Dir()) {
		return 0
	}
	for i, d := range s.stack.Dirs() {
		if within(path, d.Dir()) {
			return i + 1
		}
	}
	return -1
}

// within reports whether path lies under dir.
func within(path, dir string) bool {
	return len(path) > len(dir) && strings.HasPrefix(path, dir) && path[len(dir)] == '/'
}

// countIn counts a publish of size bytes of k into the tier that took it:
// memory, or the first directory tier holding it (a direct write).
func (s *fsState) countIn(k tiers.Key, size int64) {
	level := 0
	if _, err := s.stack.Mem().Stat(k); err != nil {
		level = -1
		for i, d := range s.stack.Dirs() {
			if _, err := d.Stat(k); err == nil {
				level = i + 1
				break
			}
		}
	}
	if level >= 0 && level < len(s.tierIO) {
		s.tierIO[level].in.Add(size)
	}
}

// countOut counts an open for reading of size bytes from tier level.
func (s *fsState) countOut(level int, size int64) {
	if level >= 0 && level < len(s.tierIO) {
		s.tierIO[level].out.Add(size)
	}
}
