package tiers

import (
	"context"
	"errors"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// writeBack copies a dirty block from memory to the first persistent tier
// that takes it, a shared one first (writeBackOrder), and marks it clean. With sync set it also makes the
// block durable there, whether this call or an earlier one wrote it.
//
// Concurrent calls for one key share one attempt. A call that joined an
// attempt already under way and got its failure tries once more, in an
// attempt that starts after the first ended: the first may have met a
// fault that was gone before this call was made (a flush asked once
// space came back must not be handed the ENOSPC of a write-back that
// started before). When the second fails too, the first failure is the
// answer: it names the fault, where the second may only say that the
// tier is down because of it.
//
// A File may be published again while it is written back (another
// writer's version replaces it): the copy of the old version is dropped,
// and the new one is on no directory tier yet, or only about to be (a
// write-back of it started meanwhile). A sync that then finds the key on
// no directory tier while memory holds it writes back again, a few times
// at most, rather than report the key absent.
//
// With sync, the copy is committed durable (fsynced before its rename,
// its directory after: dirWriter.Commit), so that a failed fsync never
// leaves the new bytes under the name; syncKey fsyncs what an earlier
// write-back left there, or one without sync that this call joined (one
// attempt per key: two would copy the block twice, and hold its memory
// file open, which an eviction then does not free).
func (s *Stack) writeBack(k format.Key, sync bool) error {
	flight := "wb\x00" + k.Path()
	attempt := func() (any, error) { return s.writeBackOnce(k, sync) }
	for try := 0; ; try++ {
		v, err, shared := s.flights.Do(flight, attempt)
		if err != nil && shared {
			var again error
			if v, again, _ = s.flights.Do(flight, attempt); again == nil {
				err = nil
			}
		}
		if err != nil || !sync {
			return err
		}
		if synced, _ := v.(bool); synced {
			return nil
		}
		err = s.syncKey(k)
		if errors.Is(err, ErrNotFound) && try < 3 {
			if _, merr := s.mem.Stat(k); merr == nil {
				continue // replaced by a version not written back yet
			}
		}
		return err
	}
}

// writeBackOnce is one attempt of writeBack; synced reports that it
// committed the copy durable (sync).
func (s *Stack) writeBackOnce(k format.Key, sync bool) (synced bool, err error) {
	if !s.mem.Dirty(k) {
		return false, nil // clean already, or removed
	}
	var lastErr error = ErrNoSpace
	retried, supersedes := false, 0
	order := s.writeBackOrder()
	for n := 0; n < len(order); n++ {
		i := order[n]
		d := s.dirs[i]
		if s.skipShared(d, k) {
			continue
		}
		if d.Health() == Down {
			lastErr = d.Stalled("write-back")
			continue
		}
		if info, serr := s.mem.Stat(k); serr == nil && d.FSNeed(info.Size) > 0 {
			s.makeRoomOn(i, info.Size) // before the writer is refused
		}
		w, opts, err := s.copyOut(s.mem, d, k)
		if errors.Is(err, errReplaced) {
			return false, nil // a new version, queued in its turn
		}
		if errors.Is(err, ErrCorrupt) {
			// The RAM copy itself is damaged: it must not reach disk.
			mu := s.keyLock(k)
			mu.Lock()
			s.quarantine(s.mem, k, err)
			mu.Unlock()
			s.signalRoom()
			return false, err
		}
		if err != nil {
			lastErr = err
			if errors.Is(err, ErrFull) && !retried {
				retried = true
				if info, serr := s.mem.Stat(k); serr == nil && s.makeRoomOn(i, info.Size+dir.FSSlack) {
					n--
				}
			}
			continue
		}
		mu := s.keyLock(k)
		mu.Lock()
		if !s.mem.Dirty(k) || entryOf(s.mem, k) != opts.From {
			// Written back by another, removed, or replaced by a new
			// version (queued in its turn) since the bytes were read.
			mu.Unlock()
			w.Abort()
			return false, nil
		}
		opts.Sync = sync
		_, err = w.Commit(opts)
		// ErrUnsynced: committed over the old version's file, whose
		// directory's fsync failed: the name holds this version, written
		// back, not durable; the caller is told.
		unsynced := errors.Is(err, tier.ErrUnsynced)
		if err == nil || unsynced {
			s.dropSupersededLocked(k, i) // on the tiers this version skipped
		}
		stale := false
		if errors.Is(err, ErrExist) && registry.Of(k).Replaces() && d.Shared() {
			// Another host's version of the name: the last published
			// replaces the other (shared_replace.go).
			var sup bool
			if supersedes < payTries {
				supersedes++
				sup, stale = d.SupersedeForeign(k, opts.MTime)
			}
			if sup {
				mu.Unlock()
				w.Abort()
				n--
				continue
			}
			// Not superseded (the other's is newer, gone again when
			// looked at, or landed again after each supersede): the
			// share keeps the version there and this host takes it.
			// Taken for written back, this host's version stayed in its
			// memory and nvme, the share's unknown to the index, so no
			// check of the File ran: it was served for good, after other
			// hosts replaced the name too (TestSharedFSEngines' llm-d-fs).
			stale = true
		}
		if err == nil || unsynced || errors.Is(err, ErrExist) {
			_ = s.mem.SetDirty(k, false)
		}
		mu.Unlock()
		if err == nil || unsynced || errors.Is(err, ErrExist) {
			if errors.Is(err, ErrExist) {
				w.Abort()
			}
			if stale {
				s.staleVersion(k) // the share's is newer
			} else if d.Shared() {
				s.cacheCopy(k, i, opts.From) // the share has it: the host's nvme keeps a copy
			} else {
				s.owe(k, i) // the share was down or failed: it gets the file once up
			}
			s.stats.writeBacks.Add(1)
			s.signalRoom()
			if unsynced {
				return false, err
			}
			return err == nil && sync, nil
		}
		w.Abort()
		lastErr = err
		if errors.Is(err, ErrFull) && !retried {
			// Make room on this tier (its least recently used files move
			// down, or out of the last tier) before giving up on it.
			retried = true
			if info, serr := s.mem.Stat(k); serr == nil && s.makeRoomOn(i, info.Size) {
				n--
			}
		}
	}
	return false, lastErr
}

// syncKey makes k durable on the first persistent tier holding it.
func (s *Stack) syncKey(k format.Key) error {
	for _, d := range s.dirs {
		if _, err := d.Stat(k); err == nil {
			return d.Sync(k)
		}
	}
	return ErrNotFound
}

// Flush returns once k is durable on a persistent tier (fsynced). A
// stack with no persistent tier has nothing to flush: Flush returns nil
// for any block it holds.
func (s *Stack) Flush(ctx context.Context, k format.Key) error {
	if !s.Has(k) {
		return ErrNotFound
	}
	if !s.Persistent() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.writeBack(k, true); err != nil {
		return err
	}
	return s.payOwed(ctx, func(o format.Key) bool { return o == k })
}

// FlushAll makes every dirty block of model ("" = all models) durable,
// with the write-back pool's parallelism, until ctx ends.
func (s *Stack) FlushAll(ctx context.Context, model string) error {
	if !s.Persistent() {
		return nil
	}
	err := s.FlushKeys(ctx, listKeys(s.mem, model))
	if err == nil { // and the files of the model owed to a shared tier
		err = s.payOwed(ctx, func(k format.Key) bool { return model == "" || k.Model == model })
	}
	return err
}

// FlushKeys makes those of keys that are dirty durable, as FlushAll does
// a model's; keys not held, or clean, are left as they are.
func (s *Stack) FlushKeys(ctx context.Context, keys []format.Key) error {
	if !s.Persistent() {
		return nil
	}
	var dirty []format.Key
	for _, k := range keys {
		if s.mem.Dirty(k) {
			dirty = append(dirty, k)
		}
	}
	jobs := make(chan format.Key)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := 0; i < s.cfg.WriteBackWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				if err := s.writeBack(k, true); err != nil && !errors.Is(err, ErrNotFound) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, k := range dirty {
		if ctx.Err() != nil {
			break
		}
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 { // and those of keys owed to a shared tier
		set := make(map[format.Key]bool, len(keys))
		for _, k := range keys {
			set[k] = true
		}
		errs = append(errs, s.payOwed(ctx, func(k format.Key) bool { return set[k] }))
	}
	return joinFlush(errs)
}
