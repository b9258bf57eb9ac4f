package tiers

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// Files staged on disk. A writer that opens its file with O_DIRECT asks
// that its bytes bypass the page cache: an engine with a RAM tier of its
// own (vLLM's fs tier) writes to ucmfs as to its disk. CreateOnDisk stages
// such a file in the first nvme tier instead of memory, beside its final
// name there, with a second descriptor opened O_DIRECT: the kernel writes
// through that one (FUSE passthrough takes the backing file's flags), so
// the bytes go from the writer's buffer to the disk, as on a plain
// directory, and publishing is the tier's rename. The file is not in
// memory afterwards; its reads are served from the tier in place, and
// promoted as any block of a lower tier. Its CRC-32C is computed where
// the daemon first reads it: its first copy between tiers (the promotion
// its first read queues, a demotion), or after a restart its first read
// served in place, as for any file an earlier run left; the tier keeps it
// in its index and the file's xattr.

// diskWriter is the Writer of a file staged on a directory tier: that
// tier's StagedFile, listed in the stack's stagedSet until it ends.
type diskWriter struct {
	*dir.StagedFile
	set *stagedSet // where it is listed until it ends
	// linked: a hard link of a published file (LinkOnDisk), whose CRC
	// (crc, when hasCRC) was checked this run when checked.
	linked, checked, hasCRC bool
	crc                     uint32
}

// stagedSet lists the files staged on disk that are neither published
// nor discarded: Stack.Close discards those left (their writers went with
// the mount), so a clean stop leaves no temp file in the tier.
type stagedSet struct {
	mu sync.Mutex
	m  map[*diskWriter]struct{}
}

func (s *stagedSet) add(w *diskWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[*diskWriter]struct{})
	}
	s.m[w] = struct{}{}
}

func (s *stagedSet) remove(w *diskWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, w)
}

// drain empties the set and returns what it held.
func (s *stagedSet) drain() []*diskWriter {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*diskWriter, 0, len(s.m))
	for w := range s.m {
		out = append(out, w)
	}
	s.m = nil
	return out
}

// CreateOnDisk starts writing key like CreateStaging, staged on the first
// directory tier when it takes O_DIRECT writes in place (an nvme tier,
// Up, with direct_io on); otherwise in memory, as CreateStaging. Check
// OnDisk for which.
func (s *Stack) CreateOnDisk(key format.Key) (*PendingWrite, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if len(s.dirs) == 0 {
		return s.CreateStaging(key)
	}
	d, ok := s.dirs[0].(*dir.Tier) // only a directory tier stages files (tier.Lower)
	if !ok || !d.Inline() || !d.InPlace() || !d.DirectIO() || d.Health() != Up {
		return s.CreateStaging(key)
	}
	w, err := d.CreateStaged(key)
	if err != nil {
		return s.CreateStaging(key) // memory takes it; the tier's fault is logged there
	}
	dw := &diskWriter{StagedFile: w, set: &s.staged}
	s.staged.add(dw)
	return &PendingWrite{key: key, w: dw}, nil
}

// OnDisk reports whether the file is staged on a directory tier.
func (p *PendingWrite) OnDisk() bool {
	_, ok := p.w.(*diskWriter)
	return ok
}

// DirectFile is the descriptor of the file opened O_DIRECT, for a file
// staged on disk (nil otherwise, while parked, and when it cannot be
// opened again).
func (p *PendingWrite) DirectFile() *os.File {
	dw, ok := p.w.(*diskWriter)
	if !ok {
		return nil
	}
	return dw.StagedFile.DirectFile()
}

// WriteAt writes data at off into the file being written, for a writer
// the daemon serves (no passthrough): a file staged on disk takes an
// aligned write (offset and length multiples of 4096) with O_DIRECT,
// through an aligned buffer, so it does not pass through the page cache
// either; any other write goes through File.
func (p *PendingWrite) WriteAt(data []byte, off int64) (int, error) {
	if !p.OnDisk() || off%dir.DirectAlign != 0 || len(data)%dir.DirectAlign != 0 || len(data) == 0 {
		return p.File().WriteAt(data, off)
	}
	f := p.DirectFile()
	if f == nil {
		return p.File().WriteAt(data, off)
	}
	return dir.WriteAligned(f, data, off)
}

// Commit publishes the file on its tier (StagedFile.Commit).
func (w *diskWriter) Commit(opts CommitOptions) (Info, error) {
	info, err := w.StagedFile.Commit(opts)
	if err == nil || !errors.Is(err, ErrFull) {
		w.set.remove(w)
	}
	return info, err
}

// Abort discards the file.
func (w *diskWriter) Abort() {
	w.StagedFile.Abort()
	w.set.remove(w)
}

// errTierFull: the tier a file was staged on had no room for it, even
// after making room (publishOnDisk).
var errTierFull = errors.New("staging tier full")

// publishOnDisk publishes p, staged on a directory tier, there: the
// tier's rename, after room is made on it when its filesystem is short.
// It returns errTierFull when the tier has no room even then: the
// caller passes the file to memory (toMemory), as any write.
func (s *Stack) publishOnDisk(p *PendingWrite, dw *diskWriter, size int64, opts CommitOptions, durable bool) (Info, error) {
	const i = 0 // files are staged on the first directory tier only
	d := s.dirs[i]
	if d.FSNeed(size) > 0 {
		s.makeRoomOn(i, size)
	}
	if p.replace {
		if err := s.keepReplaced(p.key); err != nil {
			dw.Abort()
			return Info{}, err
		}
	}
	opts.Sync = durable // write-through included (publish)
	if dw.linked {
		opts.CRC, opts.HasCRC = dw.crc, dw.hasCRC
	}
	for retried := false; ; retried = true {
		mu := s.keyLock(p.key)
		mu.Lock()
		if p.replace {
			s.replacing.begin(p.key)
			s.supersedeLocked(p.key)
		}
		var info Info
		err := ErrExist
		if _, merr := s.mem.Stat(p.key); merr != nil && !s.inDirs(p.key) {
			if info, err = dw.Commit(opts); err == nil || errors.Is(err, tier.ErrUnsynced) {
				s.dropSupersededLocked(p.key, i)
			}
		}
		mu.Unlock()
		if p.replace {
			s.replacing.end(p.key) // the new version is in the indexes, or it failed
		}
		switch {
		case err == nil:
			info.Tier = TierID(i + 1)
			s.stats.directWrites.Add(1)
			s.owe(p.key, i) // published on a private tier: the share gets it within a second (move_owed.go)
			s.mu.Lock()
			// Its writer wrote it in this run and no CRC is known to check
			// it against: its first read is served without reading it
			// twice, and its first copy between tiers (the promotion that
			// read queues) computes the CRC. A link of a published file
			// (LinkOnDisk) is checked as that file was.
			if !dw.linked || dw.checked {
				s.verified[p.key] = true
			} else {
				delete(s.verified, p.key)
			}
			s.mu.Unlock()
			return info, nil
		case errors.Is(err, ErrExist):
			dw.Abort()
			s.stats.duplicates.Add(1)
			return Info{}, ErrExist
		case errors.Is(err, ErrFull) && !retried && s.makeRoomOn(i, size):
			continue
		case errors.Is(err, ErrFull):
			return Info{}, errTierFull
		default:
			dw.Abort()
			return Info{}, err
		}
	}
}

// toMemory copies a file staged on a full tier into a memory-tier
// pending write, which Publish commits in its place; the copy's CRC goes
// into opts.
func (s *Stack) toMemory(p *PendingWrite, dw *diskWriter, size int64, opts *CommitOptions) (*PendingWrite, error) {
	defer dw.Abort()
	mw, err := s.mem.Create(p.key)
	if err != nil {
		return nil, err
	}
	crc, err := copyFile(mw, dw.File(), size, p.key.Kind)
	if err == nil && dw.linked && dw.hasCRC && crc != dw.crc {
		// A link of a file whose bytes changed on disk: a miss, not a
		// copy that would make them look right.
		err = fmt.Errorf("%w: %s: CRC-32C %08x (expected %08x)", ErrCorrupt, p.key, crc, dw.crc)
	}
	if err != nil {
		mw.Abort()
		return nil, err
	}
	opts.CRC, opts.HasCRC = crc, true
	return &PendingWrite{key: p.key, w: mw, mtime: p.mtime, replace: p.replace}, nil
}
