package tiers

import (
	"errors"
	"fmt"
	"hash/maphash"
	"os"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// Open opens k for reading from the fastest tier that holds it. A file
// found only on a lower tier is served from where it is, after a one-time
// CRC check; its promotion into memory, when it fits without eviction or
// when the admission filter has seen it before, is queued for a
// background worker (move_promote.go), never waited for. A file of a
// shared tier is always copied first, into memory or a private memfd
// (stack_shared.go), so other daemons may remove it during the read.
func (s *Stack) Open(k format.Key) (*Handle, error) {
	replaced := 0
	for attempt := 0; attempt < 3; attempt++ {
		if f, size, e, ok := s.mem.OpenHit(k); ok {
			s.admit.Get(s.admitKey(k))
			s.stats.memHits.Add(1)
			return &Handle{File: f, Tier: s.mem.Name(), TierID: Memory, Size: size, Token: Token{e: e, id: Memory}}, nil
		}
		v, err, _ := s.flights.Do("rd\x00"+k.Path(), func() (any, error) { return s.locate(k, false) })
		if errors.Is(err, ErrNotFound) && registry.Of(k).Replaces() && replaced < maxReplacedLooks && s.heldLocked(k) {
			// As in Stat: a File published over an earlier version is
			// removed and committed again under its stripe lock, and a
			// look between the two finds neither. A look under the lock
			// found it: look again (not counted as a move between tiers),
			// so that an open of a File being replaced gets the old
			// version or the new one, never ENOENT.
			replaced++
			attempt--
			continue
		}
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				s.stats.misses.Add(1)
			}
			return nil, err
		}
		id := v.(TierID)
		t := s.tierAt(id)
		var f *os.File
		var tok Token
		if d := s.sharedAt(id); d != nil {
			f, err = s.privateCopy(d, k) // no room in memory (stack_shared.go)
		} else if id == Memory { // promoted by locate
			f, err = t.Open(k)
		} else {
			f, tok, err = s.openLower(k, id)
		}
		if errors.Is(err, ErrNotFound) {
			// Moved between tiers meanwhile: look again. Or replaced
			// since the look (a File published over it, durable: the
			// old version's file went with the new one's commit): a
			// look under the lock that finds it is not counted either.
			if registry.Of(k).Replaces() && replaced < maxReplacedLooks && s.heldLocked(k) {
				replaced++
				attempt--
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if id != Memory {
			s.stats.lowerHits.Add(1)
		}
		return handle(f, t.Name(), id, tok)
	}
	return nil, fmt.Errorf("%s: %w: kept moving between tiers", k, ErrNotFound)
}

// maxReplacedLooks bounds Open's looks again at a File that was being
// replaced at each look (each a publish under its stripe lock).
const maxReplacedLooks = 16

// statLocked is stat under k's stripe lock: after any publish that
// replaces k, which removes the old version and commits the new one
// under that lock.
func (s *Stack) statLocked(k format.Key) (BlockInfo, bool) {
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	return s.stat(k)
}

// heldLocked reports whether a tier's index holds k (statLocked).
func (s *Stack) heldLocked(k format.Key) bool {
	_, found := s.statLocked(k)
	return found
}

// handle describes f, read from tier id (its size from fstat).
func handle(f *os.File, tier string, id TierID, tok Token) (*Handle, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Handle{File: f, Tier: tier, TierID: id, Size: st.Size(), Token: tok}, nil
}

// Promote brings k into the memory tier (for prefetch). It returns nil
// when k is already there.
func (s *Stack) Promote(k format.Key) error {
	v, err, _ := s.flights.Do("pr\x00"+k.Path(), func() (any, error) { return s.locate(k, true) })
	if err != nil {
		return err
	}
	if v.(TierID) != Memory {
		return fmt.Errorf("promote %s: %w", k, ErrFull)
	}
	return nil
}

// locate finds the tier to read k from. With force it promotes k into
// memory first; without, it queues the promotion when shouldPromote
// admits it and returns the lower tier. It runs inside a singleflight
// per key.
func (s *Stack) locate(k format.Key, force bool) (TierID, error) {
	if _, err := s.mem.Stat(k); err == nil {
		return Memory, nil
	}
	var lastErr error = fmt.Errorf("%s: %w", k, ErrNotFound)
	for i, d := range s.dirs {
		from := entryOf(d, k) // what verifyOnce checks, unless replaced meanwhile
		info, err := d.Stat(k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			lastErr = err
			continue
		}
		d.Touch(k)
		shared := !d.InPlace() // always copied: never read in place
		if force || shared {
			err := s.promote(d, k)
			if err == nil {
				return Memory, nil
			}
			if errors.Is(err, ErrCorrupt) {
				s.quarantine(d, k, err)
				lastErr = fmt.Errorf("%s: %w", k, ErrNotFound)
				continue
			}
			if force {
				return TierID(i + 1), err
			}
			if errors.Is(err, ErrNotFound) || dir.GoneErr(err) {
				lastErr = fmt.Errorf("%s: %w", k, ErrNotFound)
				continue
			}
			return TierID(i + 1), nil // shared: Open makes a private copy
		}
		if err := s.verifyOnce(d, k, info, from); err != nil {
			if errors.Is(err, ErrCorrupt) {
				s.quarantine(d, k, err)
				lastErr = fmt.Errorf("%s: %w", k, ErrNotFound)
				continue
			}
			lastErr = err
			continue
		}
		s.maybePromote(k, info.Size)
		return TierID(i + 1), nil
	}
	return 0, lastErr
}

// admitKey is k's key in the admission filter: a 64-bit hash (no string
// built per read; a rare collision only blurs two keys' frequencies).
func (s *Stack) admitKey(k format.Key) uint64 { return maphash.Comparable(s.seed, k) }

// shouldPromote gates promotion: free room admits at once; otherwise the
// TinyLFU filter must have seen the key before (ristretto is a shadow of
// access frequency here, never the record of what memory holds).
func (s *Stack) shouldPromote(k format.Key, size int64) bool {
	if s.mem.Room() >= size || s.cfg.NoAdmission {
		return true
	}
	ak := s.admitKey(k)
	if _, ok := s.admit.Get(ak); ok {
		return true
	}
	s.admit.Set(ak, struct{}{}, 1)
	return false
}

// promote copies k from d into memory (CRC-checked) as a clean block.
func (s *Stack) promote(d tier.Lower, k format.Key) error {
	info, err := d.Stat(k)
	if err != nil {
		return err
	}
	if s.mem.Room() < info.Size {
		if _, ev := s.mem.EvictClean(info.Size); len(ev) > 0 {
			s.stats.evictions.Add(int64(len(ev)))
		}
		if s.mem.Room() < info.Size {
			return ErrFull
		}
	}
	w, opts, err := s.copyOut(d, s.mem, k)
	if err != nil {
		return err
	}
	return s.commitCopy(d, w, opts, k, func() error {
		_ = s.mem.SetDirty(k, false)
		s.stats.promotions.Add(1)
		s.mu.Lock()
		s.verified[k] = true
		s.mu.Unlock()
		return nil
	})
}

// verifyOnce checks the CRC of a lower-tier file the first time this run
// serves it in place, so a damaged file is a miss, never wrong data. info
// is what d said of k's entry from; a check that fails because the file
// was replaced since is errReplaced (corruptOrReplaced).
func (s *Stack) verifyOnce(d tier.Lower, k format.Key, info Info, from *index.Entry) error {
	s.mu.Lock()
	done := s.verified[k]
	s.mu.Unlock()
	if done {
		return nil
	}
	f, err := d.Open(k)
	if err != nil {
		return err
	}
	defer f.Close()
	var hdr [format.HeaderSize]byte
	if _, err := f.ReadAt(hdr[:k.Kind.HeaderLen()], 0); err != nil {
		return s.corruptOrReplaced(d, k, from, fmt.Errorf("%w: %s: header: %w", ErrCorrupt, k, err))
	}
	size, crc, err := payloadCRC(f, k.Kind)
	if err != nil {
		return err
	}
	if err := checkHeader(d, k, hdr[:], size); err != nil {
		if err = s.corruptOrReplaced(d, k, from, err); errors.Is(err, ErrCorrupt) {
			s.stats.crcErrors.Add(1)
		}
		return err
	}
	want, known := knownCRC(d, k, info, f)
	if !known && k.Kind.HeaderLen() > 0 {
		want, known = flaggedCRC(hdr[:])
	}
	if size != info.Size || (known && crc != want) {
		err := s.corruptOrReplaced(d, k, from, fmt.Errorf("%w: %s on %s: CRC-32C %08x (expected %08x), %d bytes", ErrCorrupt, k, d.Name(), crc, want, size))
		if errors.Is(err, ErrCorrupt) {
			s.stats.crcErrors.Add(1)
		}
		return err
	}
	if !known { // the check computed it: the tier's index keeps it, the file too
		if d.Index().SetCRCOf(k, from, crc) { // false when replaced since
			d.KeepCRC(k, f, crc)
		}
	}
	s.mu.Lock()
	s.verified[k] = true
	s.mu.Unlock()
	return nil
}
