package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/tiers"
)

// A directory move's record that could not be dropped when the move
// ended (endDirMove: the settings rewrite failed, the tier full, say)
// stays on the tiers, and the next start would finish the move again
// (finishDirMoves), moving with it anything published beneath the
// directory's old name since: a name free once the move is done, so a
// file published there after the move would move by itself at the next
// start. So a record not dropped is remembered, in memory, as left (per
// model; the cached record is already without it, so any write of the
// model's settings that succeeds drops it on the tiers too, and empties
// the model's left set: updateSettings), and nothing is published beneath
// its From while it is left: a file published, renamed, moved or linked
// there, a directory made there or moved there first rewrites the model's
// settings without the left records (dropLeftBeneath), and fails with
// that write's error when it cannot, so no new name exists beneath the
// old one while a record that would move it is on the tiers. Dropped
// first, published second: a crash between the two leaves the record
// gone and nothing published. A move that did not finish at start
// (finishDirMoves: its record kept for the next start) is left the same
// way, as unfinished: a publish beneath its From drops its record
// (the move then stays as it is, its files under either name, which the
// publisher sees) rather than have the next start move the new file.
//
// A record left is dropped again, not only by the next write of its
// model's settings: by a flush of every model (the daemon's clean stop
// flushes before it closes the stack, and `.ucm/flush` does), by the
// store's Close, and every leftRetryEvery while any is left
// (retryLeftMoves), so a move that failed and was undone while its tier
// was down is not finished by the next start once the tier takes writes
// again before the stop. One the tier still refuses at the stop stays:
// the next start finishes that move (docs/semantics.md).
//
// A file published beneath From while the move is under way stays there
// (MoveFilesDir); when the record is then left, the next start moves it
// too. The front end holds its requests beneath either name for the
// move's time, so only a caller of the store beside it meets that.

// leftMoves are the records left, by model. mu is a leaf.
type leftMoves struct {
	n  atomic.Int64 // records left, all models: the publish path's one load
	mu sync.Mutex
	m  map[string][]leftMove
}

// leftMove is a record left: on the tiers, not in the cached record, or
// (unfinished) in both.
type leftMove struct {
	r          DirMoveRecord
	unfinished bool
}

// add remembers r of model as left.
func (l *leftMoves) add(model string, r DirMoveRecord, unfinished bool) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string][]leftMove)
	}
	l.m[model] = append(l.m[model], leftMove{r, unfinished})
	l.n.Add(1)
	l.mu.Unlock()
}

// dropped returns the records of model left and not unfinished, those a
// write of its cached record drops.
func (l *leftMoves) dropped(model string) []DirMoveRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rs []DirMoveRecord
	for _, e := range l.m[model] {
		if !e.unfinished {
			rs = append(rs, e.r)
		}
	}
	return rs
}

// covering returns the unfinished records of model whose From p is
// beneath, and whether any record left covers p.
func (l *leftMoves) covering(model, p string) (unfinished []DirMoveRecord, any bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.m[model] {
		if p == e.r.From || beneath(p, e.r.From) {
			any = true
			if e.unfinished {
				unfinished = append(unfinished, e.r)
			}
		}
	}
	return unfinished, any
}

// settle makes the unfinished records rs of model plain left ones: gone
// from the cached record.
func (l *leftMoves) settle(model string, rs []DirMoveRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		if i := slices.Index(l.m[model], leftMove{r, true}); i >= 0 {
			l.m[model][i].unfinished = false
		}
	}
}

// remove forgets one left record of model per r of rs (not unfinished).
func (l *leftMoves) remove(model string, rs []DirMoveRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		if i := slices.Index(l.m[model], leftMove{r, false}); i >= 0 {
			l.m[model] = slices.Delete(l.m[model], i, i+1)
			l.n.Add(-1)
		}
	}
	if len(l.m[model]) == 0 {
		delete(l.m, model)
	}
}

// models returns the models with records left that a write of their
// settings drops (not unfinished).
func (l *leftMoves) models() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ms []string
	for m, es := range l.m {
		for _, e := range es {
			if !e.unfinished {
				ms = append(ms, m)
				break
			}
		}
	}
	return ms
}

// forget forgets model's records left: the model is gone, its record
// with it.
func (l *leftMoves) forget(model string) {
	l.mu.Lock()
	l.n.Add(-int64(len(l.m[model])))
	delete(l.m, model)
	l.mu.Unlock()
}

// deleteMove deletes one r from moves.
func deleteMove(moves []DirMoveRecord, r DirMoveRecord) []DirMoveRecord {
	if i := slices.Index(moves, r); i >= 0 {
		return slices.Delete(moves, i, i+1)
	}
	return moves
}

// dropLeftBeneath drops, before anything is published at p (a file's
// path, or a directory's) of model, the records left whose From p is
// beneath: it rewrites model's settings, and returns that write's error
// when it fails (nothing may be published there then). Cheap when no
// record is left anywhere: one atomic load.
func (s *Store) dropLeftBeneath(model, p string) error {
	if s.leftMoves.n.Load() == 0 {
		return nil
	}
	unfinished, any := s.leftMoves.covering(model, p)
	if !any {
		return nil
	}
	err := s.updateSettings(model, func(v *Settings) error {
		for _, r := range unfinished {
			v.Moves = deleteMove(v.Moves, r)
		}
		// Gone from the cached record: written with it, or left.
		s.leftMoves.settle(model, unfinished)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s/%s: beneath the old name of a moved directory, whose record could not be dropped: %w", model, p, err)
	}
	return nil
}

// leftRetryEvery is how often the store tries again to drop the records
// left (refreshLoop's ticks of a second): a failed try logs one line.
const leftRetryEvery = 10

// retryLeftMoves rewrites the settings of every model with a record
// left, which drops it from the tiers, and returns the errors of those
// writes (each logged by updateSettings); while a directory tier is
// down it tries none. Cheap when none is left.
func (s *Store) retryLeftMoves() error {
	if s.leftMoves.n.Load() == 0 {
		return nil
	}
	for _, t := range s.stack.Tiers() {
		if t.Persistent && t.Health == tiers.Down {
			// It refuses the write: no attempt, and no warning every
			// leftRetryEvery while it stays down (it said so once).
			return fmt.Errorf("%s tier %s is down: %w", t.Name, t.Dir, tiers.ErrStalled)
		}
	}
	var errs []error
	for _, model := range s.leftMoves.models() {
		if err := s.updateSettings(model, func(*Settings) error { return nil }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
