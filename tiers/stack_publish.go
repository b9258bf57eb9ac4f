package tiers

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// ErrInvalid wraps the format validation error of a rejected file.
var ErrInvalid = errors.New("invalid block")

// PendingWrite is a block or sidecar being written: a private temp file in
// the memory tier that no reader can see until Publish.
type PendingWrite struct {
	key     format.Key
	w       Writer
	mtime   time.Time // the publish time to keep (SetMTime); zero: now
	replace bool      // publishing replaces a published key (SetReplace)
}

// Key is the key being written.
func (p *PendingWrite) Key() format.Key { return p.key }

// File is the temp file; write it with pwrite or hand its fd to the kernel.
func (p *PendingWrite) File() *os.File { return p.w.File() }

// Create starts writing key. It fails with ErrExist when key is already
// published, and with ErrClosed once the stack is closing.
func (s *Stack) Create(key format.Key) (*PendingWrite, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if s.Has(key) {
		return nil, ErrExist
	}
	w, err := s.mem.Create(key)
	if IsNoSpace(err) && s.MemFull(0) {
		w, err = s.mem.Create(key)
	}
	if err != nil {
		return nil, err
	}
	return &PendingWrite{key: key, w: w}, nil
}

// Abort discards a pending write.
func (s *Stack) Abort(p *PendingWrite) { p.w.Abort() }

// Put writes data as key and publishes it; see Publish.
func (s *Stack) Put(key format.Key, data []byte, durable bool) (Info, error) {
	p, err := s.Create(key)
	if err != nil {
		return Info{}, err
	}
	if _, err := p.w.Write(data); err != nil {
		s.Abort(p)
		return Info{}, err
	}
	return s.Publish(p, durable)
}

// Publish validates a pending write and makes it visible. It returns
// ErrInvalid (wrapping the rule broken) and discards the data when the file
// is not a valid block or sidecar; ErrNotFound for a sidecar whose block is
// absent; ErrExist when the key was published meanwhile (this copy is
// discarded, the first kept); ErrNoSpace when no tier has room. The
// returned Info's Tier is the tier that took the file: memory, or a
// directory tier when memory had no room. With
// durable set, or in write-through mode, it returns once the block is on
// the first persistent tier (durable: fsynced there).
//
// A new version (SetReplace) takes the published one's place atomically:
// readers find one or the other, and each directory tier keeps the old
// one's file until the new one is written over it there
// (dir/supersede.go).
func (s *Stack) Publish(p *PendingWrite, durable bool) (Info, error) {
	info, err := s.publish(p, durable)
	if err != nil && p.replace {
		s.abandonSuperseded(p.key)
	}
	return info, err
}

// publish is Publish but for a failed new version's superseded files.
func (s *Stack) publish(p *PendingWrite, durable bool) (Info, error) {
	key := p.key
	// Write-through is durable, whichever way the file goes: into
	// memory and written back, from a staging file on a directory tier,
	// or straight to one when memory has no room (a direct write did not
	// fsync a write-through publish: the soak's seed 1796661955925025800,
	// TestWriteThroughDirectWriteSurvivesPowerCut).
	durable = durable || s.cfg.WriteThrough
	if s.isClosed() {
		p.w.Abort()
		return Info{}, ErrClosed
	}
	size, crc, hasCRC, err := validate(key, p.w.File())
	if err != nil {
		p.w.Abort()
		s.stats.rejected.Add(1)
		return Info{}, err
	}
	if l := registry.Of(key); l.IsSidecar(key) && !s.Has(l.BlockOf(key)) {
		p.w.Abort()
		return Info{}, fmt.Errorf("sidecar %s: %w: its block is not stored", key, ErrNotFound)
	}
	if err := s.fitsADirTier(key, size); err != nil {
		p.w.Abort()
		return Info{}, err
	}
	// Without a CRC in the header the payload is not read here: the
	// write-back copy computes the CRC (copyOut), and Stat on demand.
	opts := CommitOptions{CRC: crc, HasCRC: hasCRC, MTime: p.mtime}
	if p.replace && durable {
		if err := s.keepReplaced(key); err != nil {
			p.w.Abort()
			return Info{}, err
		}
	}
	if dw, ok := p.w.(*diskWriter); ok {
		info, err := s.publishOnDisk(p, dw, size, opts, durable)
		if !errors.Is(err, errTierFull) {
			if err == nil {
				s.stats.published.Add(1)
				s.stats.bytesIn.Add(size)
			}
			return info, err
		}
		if p, err = s.toMemory(p, dw, size, &opts); err != nil {
			return Info{}, err
		}
	}
	info, mine, err := s.commitToMemory(p, size, opts)
	if errors.Is(err, ErrFull) {
		info, err = s.directWrite(p, size, opts, durable)
		if err == nil {
			s.stats.published.Add(1)
			s.stats.bytesIn.Add(size)
		}
		return info, err
	}
	if err != nil {
		return info, err
	}
	s.stats.published.Add(1)
	s.stats.bytesIn.Add(size)
	if !s.Persistent() {
		_ = s.mem.SetDirty(key, false) // volatile store: nothing to write back
		return info, nil
	}
	if durable {
		// The file and its directory entry are fsynced on the first
		// persistent tier before Publish returns.
		if err := s.writeBack(key, true); err != nil {
			if errors.Is(err, tier.ErrUnsynced) {
				// Renamed over the old version's file on the tier, whose
				// directory's fsync failed: the name holds this version
				// (not durable), the old one is gone; the writer is told.
				return Info{}, err
			}
			if !s.dropFailed(key, mine, err) {
				// Replaced since by a newer version (another writer's
				// publish) or removed: nothing of this one is left to make
				// durable, and what took its place is not this writer's.
				return info, nil
			}
			// The writer is told it failed (its fsync or close): the block
			// must not stay visible, or its retry would get EEXIST.
			s.stats.published.Add(-1)
			s.stats.bytesIn.Add(-size)
			return Info{}, err
		}
		return info, nil
	}
	s.enqueue(key)
	return info, nil
}

// dropFailed removes key, whose durable publish of the memory entry mine
// failed with err, bringing back the version it replaced if a tier still
// has that one's file (revertLocked), and reports true; unless key is no longer mine: a
// newer version of it is in memory, or it is gone from memory and err
// says it is not on a directory tier either (both unlinked). Under key's
// stripe lock, so that it never removes a version another writer
// published meanwhile.
func (s *Stack) dropFailed(key format.Key, mine *index.Entry, err error) bool {
	mu := s.keyLock(key)
	mu.Lock()
	defer mu.Unlock()
	cur := entryOf(s.mem, key)
	if cur != mine && (cur != nil || errors.Is(err, ErrNotFound)) {
		return false
	}
	s.revertLocked(key)
	return true
}

// commitToMemory makes room and commits p into the memory tier, and
// returns the memory tier's entry of what it committed (taken under the
// key's stripe lock: a later publish of the key makes a new one). ErrFull
// means memory stayed full of dirty or pinned blocks for RoomWait.
func (s *Stack) commitToMemory(p *PendingWrite, size int64, opts CommitOptions) (Info, *index.Entry, error) {
	deadline := time.Now().Add(s.cfg.RoomWait)
	retried := false
	for {
		if err := s.makeRoom(size, deadline); err != nil {
			return Info{}, nil, err
		}
		mu := s.keyLock(p.key)
		mu.Lock()
		var info Info
		var err error
		var mine *index.Entry
		if p.replace {
			s.replacing.begin(p.key)
			s.supersedeLocked(p.key)
		}
		if s.inDirs(p.key) {
			err = ErrExist
		} else if info, err = p.w.Commit(opts); err == nil {
			mine = entryOf(s.mem, p.key)
		}
		mu.Unlock()
		if p.replace {
			s.replacing.end(p.key) // the new version is in the indexes, or it failed
		}
		switch {
		case err == nil:
			return info, mine, nil
		case IsNoSpace(err) && !retried && s.MemFull(0):
			retried = true // the filesystem was full with room in the capacity: once more
			continue
		case IsNoSpace(err):
			// Still full, or nothing to evict: memory has no room (ErrFull:
			// Publish writes to a directory tier instead), not a race for
			// the capacity, which would loop here.
			return Info{}, nil, err
		case errors.Is(err, ErrFull):
			continue // lost a race for the room; make room again
		case errors.Is(err, ErrExist):
			p.w.Abort()
			s.stats.duplicates.Add(1)
			return Info{}, nil, ErrExist
		default:
			p.w.Abort()
			return Info{}, nil, err
		}
	}
}

// makeRoom frees memory for size bytes by evicting clean blocks, waiting
// for write-back while memory is full of dirty ones, until deadline.
func (s *Stack) makeRoom(size int64, deadline time.Time) error {
	if size > s.mem.Usage().Capacity {
		return fmt.Errorf("%w: %d bytes exceed the memory tier", ErrFull, size)
	}
	waited := false
	for {
		if s.mem.Room() >= size {
			return nil
		}
		changed := s.roomChanged()
		if _, ev := s.mem.EvictClean(size); len(ev) > 0 {
			s.stats.evictions.Add(int64(len(ev)))
			continue
		}
		if !s.Persistent() || time.Now().After(deadline) || s.allDown() || s.mem.Index().DirtyTotal().Files == 0 {
			// No write-back will free memory (nothing is dirty: what
			// is left is pinned, or being written): do not wait.
			return ErrFull
		}
		if !waited {
			waited = true
			s.stats.roomWaits.Add(1)
			s.pressure.Add(1) // write back now: do not wait for the expiry
			defer s.pressure.Add(-1)
		}
		s.kick()
		select {
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// allDown reports whether every directory tier is Down (write-back cannot
// free memory until the probe brings one back).
func (s *Stack) allDown() bool {
	for _, d := range s.dirs {
		if d.Health() != Down {
			return false
		}
	}
	return len(s.dirs) > 0
}

// directWrite stores p straight into the first persistent tier that takes
// it, for when memory has no room.
func (s *Stack) directWrite(p *PendingWrite, size int64, opts CommitOptions, durable bool) (Info, error) {
	defer p.w.Abort()
	if p.replace {
		if err := s.keepReplaced(p.key); err != nil {
			return Info{}, err
		}
	}
	opts.Sync = durable
	var lastErr error = ErrNoSpace
	for i, d := range s.dirs {
		if d.Health() == Down {
			lastErr = d.Stalled("create")
			continue
		}
		w, err := d.Create(p.key)
		if err == nil {
			var crc uint32
			crc, err = copyFile(w, p.w.File(), size, p.key.Kind)
			if err == nil && !opts.HasCRC {
				opts.CRC, opts.HasCRC = crc, true
			}
		}
		if err != nil {
			if w != nil {
				w.Abort()
			}
			lastErr = err
			continue
		}
		mu := s.keyLock(p.key)
		mu.Lock()
		if p.replace {
			s.replacing.begin(p.key)
			s.supersedeLocked(p.key)
		}
		info, err := w.Commit(opts)
		if err == nil || errors.Is(err, tier.ErrUnsynced) {
			s.dropSupersededLocked(p.key, i)
		}
		mu.Unlock()
		if p.replace {
			s.replacing.end(p.key) // the new version is in the indexes, or it failed
		}
		if err == nil {
			s.stats.directWrites.Add(1)
			info.Tier = TierID(i + 1)
			return info, nil
		}
		if errors.Is(err, tier.ErrUnsynced) {
			return Info{}, err // this version is the name's here, not durable
		}
		w.Abort()
		if errors.Is(err, ErrExist) {
			s.stats.duplicates.Add(1)
			return Info{}, ErrExist
		}
		lastErr = err
	}
	if errors.Is(lastErr, ErrReadOnly) || errors.Is(lastErr, ErrTierFailed) {
		return Info{}, fmt.Errorf("%s: no tier takes writes: %w", p.key, lastErr) // EROFS, EIO: not a matter of room
	}
	s.log.Warn("no tier has room for a block", "key", p.key.String(), "size", size, "last_error", lastErr)
	return Info{}, fmt.Errorf("%w: %s: %w", ErrNoSpace, p.key, lastErr)
}

// validate checks f as key's file (docs/spec.md §4-5) from its header and size.
// The payload is read, and its CRC-32C returned with hasCRC set, only
// when the header states a CRC: then a mismatch rejects the file.
// Errors wrap ErrInvalid.
func validate(key format.Key, f *os.File) (size int64, crc uint32, hasCRC bool, err error) {
	fi, err := tier.FileStat(f)
	if err != nil {
		return 0, 0, false, err
	}
	size = fi.Size()
	if registry.Of(key).Headerless() {
		// A raw block or a File has no rule of its own: UCM's PosixStore takes a
		// file's existence as the block, so an empty one is a block too.
		// Its CRC is computed by the write-back copy (copyOut) or on
		// demand, like a block's without a CRC in its header.
		return size, 0, false, nil
	}
	var hdr [format.HeaderSize]byte
	if size >= format.HeaderSize {
		if _, err := f.ReadAt(hdr[:], 0); err != nil {
			return 0, 0, false, err
		}
	}
	var ioErr error // reading the payload failed: not the file's fault
	crcFn := func() (uint32, error) {
		n, c, err := payloadCRC(f, key.Kind)
		if err != nil {
			ioErr = err
			return 0, err
		}
		if n != size {
			return 0, fmt.Errorf("file changed size while validated: %d bytes, then %d", size, n)
		}
		crc, hasCRC = c, true
		return c, nil
	}
	if size < format.HeaderSize {
		err = fmt.Errorf("file is %d bytes, shorter than the %d-byte header", size, format.HeaderSize)
	} else if registry.Of(key).IsSidecar(key) {
		var h format.ReprHeader
		if h, err = format.DecodeReprHeader(hdr[:]); err == nil {
			err = format.ValidateRepr(h, key.ID, size, crcFn)
		}
	} else {
		var h format.BlockHeader
		if h, err = format.DecodeBlockHeader(hdr[:]); err == nil {
			err = format.ValidateBlock(h, key.ID, size, crcFn)
		}
	}
	if ioErr != nil {
		return 0, 0, false, ioErr
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("%w: %s: %w", ErrInvalid, key, err)
	}
	return size, crc, hasCRC, nil
}

// fitsADirTier refuses (ErrNoSpace) a file larger than the capacity of
// every directory tier: it could never be written back, and would stay
// dirty in memory with its write-back tried again and again. One log
// line says so, per file.
func (s *Stack) fitsADirTier(key format.Key, size int64) error {
	if !s.Persistent() {
		return nil
	}
	var most int64
	for _, d := range s.dirs {
		most = max(most, d.Usage().Capacity)
	}
	if size <= most || most == 0 { // 0: not known yet
		return nil
	}
	s.log.Warn("a file larger than every directory tier refused", "key", key.String(), "size", size, "largest_tier", most)
	return fmt.Errorf("%w: %s is %d bytes, more than any directory tier holds (%d at most)", ErrNoSpace, key, size, most)
}
