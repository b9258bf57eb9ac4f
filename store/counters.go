package store

import (
	"sync/atomic"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/tiers"
)

// The mount's own counters, next to the stack's (tiers.Stats): what
// clients moved through each tier, and the control plane's requests.
// .ucm/stats and the metrics both read them through Snapshot, so every
// number has one source.

// Counters count the control plane's requests; the control package adds
// to them.
type Counters struct {
	Lookups, LookupIDs, LookupHits              atomic.Int64
	Prefetches, PrefetchQueued, PrefetchMissing atomic.Int64
	PrefetchPromoted, PrefetchFailed            atomic.Int64
	Flushes, FlushErrors                        atomic.Int64
	Errors                                      atomic.Int64

	GPURegions                            atomic.Int64 // open now
	GPULoads, GPULoadBlocks, GPULoadBytes atomic.Int64
	GPULoadUnmapped                       atomic.Int64
	GPUDumps, GPUDumpBlocks, GPUDumpBytes atomic.Int64
	GPUDumpExisting                       atomic.Int64

	ReprDerived              atomic.Int64 // sidecars derived and stored
	TopKs, TopKCandidates    atomic.Int64
	TopKMissing, TopKDerived atomic.Int64
	TopKReused               atomic.Int64

	// LightNodes is the published files the kernel holds looked up as
	// light nodes now (package fs keeps it: its light.go).
	LightNodes atomic.Int64
}

// tierIO counts the bytes clients moved through one tier.
type tierIO struct {
	in  atomic.Int64 // bytes of files published into the tier
	out atomic.Int64 // bytes of files opened for reading from the tier
}

// ControlStats is the control plane's part of the stats snapshot.
type ControlStats struct {
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
	// GPU is the device's own state (gpu.Device.Stats): why auto fell
	// back, the GPUs in use, the batch entry point, read-only
	// registration, host ranges, context resets; absent without a device.
	GPU *GPUStats `json:"gpu,omitempty"`

	ReprDerived    int64 `json:"repr_derived"`    // sidecars derived from their block and stored
	TopKs          int64 `json:"topks"`           // topk requests answered ok
	TopKCandidates int64 `json:"topk_candidates"` // candidates of those requests
	TopKMissing    int64 `json:"topk_missing"`    // candidates reported missing (no sidecar and none derivable)
	TopKDerived    int64 `json:"topk_derived"`    // candidates whose sidecar was derived for a topk request
	TopKReused     int64 `json:"topk_reused"`     // topk requests that reused their session's index
}

// GPUStats is the GPU device's part of the snapshot (gpu.Device.Stats),
// named here so that readers of the snapshot need not import gpu.
type GPUStats = gpu.Stats

// TierStats is one tier in the stats snapshot: the stack's view, and the
// bytes clients moved through it.
type TierStats struct {
	tiers.TierStats
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// MountStats is the FUSE adapter's part of the snapshot.
type MountStats struct {
	// LightNodes is the published files the kernel holds looked up
	// (listed with READDIRPLUS, or stat'ed) as light nodes: each costs the
	// daemon 39-49 bytes until the kernel forgets it.
	LightNodes int64 `json:"light_nodes"`
}

// Stats is the content of .ucm/stats: the stack's snapshot with its
// tiers extended, the control plane's counters and the adapter's.
type Stats struct {
	Tiers []TierStats `json:"tiers"`
	tiers.Stats
	ControlStats
	MountStats
	WriteStats
}

// WriteStats counts the files being written, not yet published.
type WriteStats struct {
	// Writing is the files being written; Staging those of them under a
	// staging name, which wait for their rename once closed (a staging
	// file parked without a descriptor is discarded after
	// Options.StagingTTL).
	Writing int64 `json:"writing_files"`
	Staging int64 `json:"staging_files"`
	// Parked is the staging files with no descriptor open, waiting for
	// their rename: they hold no descriptor of the daemon.
	Parked int64 `json:"parked_files"`
	// PendingBytes is what the files being written count against
	// --max-pending (pending_budget.go).
	PendingBytes int64 `json:"pending_bytes"`
	// Dirs is the directories of files models the mount knows of, which
	// --max-dirs bounds (dir_tree.go).
	Dirs int64 `json:"dirs"`
}

// TierHealthStates are the values TierStats.Health takes, healthiest
// first (for a front end that reports each state apart).
var TierHealthStates = []string{tiers.Up.String(), tiers.Unstable.String(), tiers.Down.String()}

// Snapshot takes the counters now. The prefetch pool's pending count is
// read first: a promotion no longer pending is counted in every count
// read after it (the tiers' promotions, prefetch promoted or failed).
func (s *Store) Snapshot() Stats {
	pending := s.prefetch.pending.Load()
	st := s.stack.Stats()
	m := Stats{Stats: st, Tiers: make([]TierStats, len(st.Tiers))}
	for i, t := range st.Tiers {
		m.Tiers[i].TierStats = t
		if i < len(s.tierIO) {
			m.Tiers[i].BytesIn = s.tierIO[i].in.Load()
			m.Tiers[i].BytesOut = s.tierIO[i].out.Load()
		}
	}
	c := &s.Counters
	m.ControlStats = ControlStats{
		Lookups: c.Lookups.Load(), LookupIDs: c.LookupIDs.Load(), LookupHits: c.LookupHits.Load(),
		Prefetches: c.Prefetches.Load(), PrefetchQueued: c.PrefetchQueued.Load(),
		PrefetchMissing: c.PrefetchMissing.Load(), PrefetchPromoted: c.PrefetchPromoted.Load(),
		PrefetchFailed: c.PrefetchFailed.Load(), PrefetchPending: pending,
		Flushes: c.Flushes.Load(), FlushErrors: c.FlushErrors.Load(), ControlErrors: c.Errors.Load(),
		GPURegions: c.GPURegions.Load(), GPULoads: c.GPULoads.Load(), GPULoadBlocks: c.GPULoadBlocks.Load(),
		GPULoadBytes: c.GPULoadBytes.Load(), GPULoadUnmapped: c.GPULoadUnmapped.Load(),
		GPUDumps: c.GPUDumps.Load(), GPUDumpBlocks: c.GPUDumpBlocks.Load(), GPUDumpBytes: c.GPUDumpBytes.Load(),
		GPUDumpExisting: c.GPUDumpExisting.Load(),
		ReprDerived:     c.ReprDerived.Load(), TopKs: c.TopKs.Load(), TopKCandidates: c.TopKCandidates.Load(),
		TopKMissing: c.TopKMissing.Load(), TopKDerived: c.TopKDerived.Load(), TopKReused: c.TopKReused.Load(),
	}
	m.LightNodes = c.LightNodes.Load()
	m.Writing, m.Staging = s.writes.counts()
	m.Parked = s.parked.Load()
	s.budget.mu.Lock()
	m.PendingBytes = s.budget.total
	s.budget.mu.Unlock()
	dirs, _ := s.Models().DirCount(0)
	m.Dirs = int64(dirs)
	if d := s.device.Load(); d != nil {
		m.GPUDevice = (*d).Name()
		g := (*d).Stats()
		m.GPU = &g
	}
	return m
}

// DeviceStats is what the snapshot reads of the device of .ucm/gpu (a
// gpu.Device): its name and its state, nothing it could move blocks with.
type DeviceStats interface {
	Name() string
	Stats() gpu.Stats
}

// ReportDevice makes the snapshot show d's name and state from then on.
// The transfer engine reports its device when it is built: the store
// itself has no device (a mount without one shows none).
func (s *Store) ReportDevice(d DeviceStats) { s.device.Store(&d) }

// countIn counts a publish of size bytes into tier level, the one that
// took it (tiers.Info.Tier).
func (s *Store) countIn(level tiers.TierID, size int64) {
	if level >= 0 && int(level) < len(s.tierIO) {
		s.tierIO[level].in.Add(size)
	}
}

// CountOut counts an open for reading of size bytes from tier level.
func (s *Store) CountOut(level int, size int64) {
	if level >= 0 && level < len(s.tierIO) {
		s.tierIO[level].out.Add(size)
	}
}
