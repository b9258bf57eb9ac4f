package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
)

// A directory move is not atomic on the tiers (files_move_dir.go): its
// files are published under their new paths one by one, then their old
// paths go. A crash part-way left some files under each name, the
// directory half at either. So the move is recorded in its model's
// settings record (Settings.Moves, written durably to every directory
// tier) before its first file is linked or copied, and the record is
// dropped once its last old path is gone; a record found at the next
// start is a move a crash cut short, and the store finishes it then
// (finishDirMoves), as rename(2) on a local disk is found done or not
// done after a crash, never half. Finishing, not undoing: the files
// published under their new paths before the crash are durable there
// (the move syncs each before an old path goes), the rest are durable
// under their old paths.

// DirMoveRecord is a directory move in progress: the directory From of
// the model whose record holds it, going to To of ToModel, for the user
// UID (the directories it makes count as theirs).
type DirMoveRecord struct {
	From    string `json:"from"`
	ToModel string `json:"to_model"`
	To      string `json:"to"`
	UID     uint32 `json:"uid"`
}

// A record is read from the tiers, where a damaged file or, on a shared
// tier, whoever writes the share (another host, its users) may have put
// anything: the store takes only moves that stay within files models, by
// clean paths (checkMoveRecord), and from a shared tier only moves within
// the model whose record holds them, for no user of this host (uids are
// host-local; the daemon's user is charged the directories it makes).
// The others are dropped from the record as it is read (never finished,
// and gone from it the next time the store writes it), with one warning
// per record.

// checkMoveRecord refuses (ErrInvalid) a move of model's record that
// would reach beyond the files models it names: From and To relative,
// clean, within a model (format.ValidateFilePath: no "..", no "." or
// empty component, no leading '/', no NUL), To not From nor beneath it in
// the same model, ToModel a model name; layout is model's. shared: read
// from a shared tier, where ToModel must be model itself (another model
// is another owner's on this host).
func checkMoveRecord(model, layout string, r DirMoveRecord, shared bool) error {
	if l, ok := registry.ByName(layout); !ok || !l.Tree() {
		return fmt.Errorf("model %s has the layout %q, not files: %w", model, layout, ErrInvalid)
	}
	for _, p := range []string{r.From, r.To} {
		if err := format.ValidateFilePath(p); err != nil {
			return fmt.Errorf("%w: %w", err, ErrInvalid)
		}
	}
	if err := format.ValidateModel(r.ToModel); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	if shared && r.ToModel != model {
		return fmt.Errorf("a shared tier's record moves files of %s into %s: %w", model, r.ToModel, ErrInvalid)
	}
	if r.ToModel == model && (r.To == r.From || strings.HasPrefix(r.To, r.From+"/")) {
		return fmt.Errorf("%s into itself (%s): %w", r.From, r.To, ErrInvalid)
	}
	return nil
}

// checkedMoves is the moves of model's record v that checkMoveRecord
// takes; those from a shared tier are the daemon user's. The others are
// logged, in one line.
func (s *Store) checkedMoves(model string, v *Settings, shared bool) []DirMoveRecord {
	var kept []DirMoveRecord
	var first error
	refused := 0
	for _, r := range v.Moves {
		if err := checkMoveRecord(model, v.Layout, r, shared); err != nil {
			first = cmp.Or(first, err)
			refused++
			continue
		}
		if shared {
			r.UID = daemonOwner.Uid
		}
		kept = append(kept, r)
	}
	if refused > 0 {
		s.log.Warn("directory move record refused: its moves reach beyond the model, not finished", "model", model, "refused", refused, "shared", shared, "err", first)
	}
	return kept
}

// record is m's DirMoveRecord.
func (m *dirMove) record(uid uint32) DirMoveRecord {
	return DirMoveRecord{From: m.from, ToModel: m.toModel, To: m.to, UID: uid}
}

// recordDirMove adds r to model's record, durably.
func (s *Store) recordDirMove(model string, r DirMoveRecord) error {
	return s.updateSettings(model, func(v *Settings) error {
		v.Moves = append(v.Moves, r)
		return nil
	})
}

// endDirMove drops r from model's record: the move is over (done, or
// undone). A record the write could not drop is left on the tiers, and
// remembered as left (files_move_left.go) until a write of the model's
// settings drops it: nothing is published beneath its From meanwhile,
// so the next start, which finishes it, finds nothing to move.
func (s *Store) endDirMove(model string, r DirMoveRecord) {
	err := s.updateSettings(model, func(v *Settings) error {
		v.Moves = deleteMove(v.Moves, r)
		s.leftMoves.add(model, r, false) // under the write: dropped with it, or left
		return nil
	})
	if err != nil {
		s.log.Warn("directory move: its record not dropped (the next start finds the move done; nothing is published beneath the old name until it is dropped)", "model", model, "from", r.From, "err", err)
	}
}

// finishDirMoves finishes the directory moves a crash cut short: those
// the models' records hold at start. One that does not finish keeps its
// record, for the next start, until something is published beneath its
// From (files_move_left.go: left as unfinished).
func (s *Store) finishDirMoves() {
	for _, model := range s.models.list() {
		for _, r := range s.modelSettings(model).Moves {
			if err := s.finishDirMove(model, r); err != nil {
				s.log.Error("directory move cut short by a crash: not finished (its files are under either path)", "model", model, "from", r.From, "to_model", r.ToModel, "to", r.To, "err", err)
				s.leftMoves.add(model, r, true)
				continue
			}
			s.log.Info("directory move cut short by a crash: finished", "model", model, "from", r.From, "to_model", r.ToModel, "to", r.To)
			s.endDirMove(model, r)
		}
	}
}

// finishDirMove moves what is left beneath r.From of model to r.To of
// r.ToModel: on a shared tier that still has r.From, the directory in one
// rename; a file the move published under its new path before the
// crash only loses its old path, the others move (Writes.Move); then the
// old directories go.
func (s *Store) finishDirMove(model string, r DirMoveRecord) error {
	if !s.Models().LayoutOf(r.ToModel).Tree() {
		return fmt.Errorf("model %s has the layout %q, not files: %w", r.ToModel, s.Models().Layout(r.ToModel), ErrInvalid)
	}
	if !s.FilesDir(model, r.From) {
		return nil // the crash came after the last old directory went
	}
	s.stack.ScanTree(model) // a shared tier's index may not hold the tree yet: the plan reads it
	m, err := s.planDirMove(model, r.From, r.ToModel, r.To)
	if err != nil {
		return err
	}
	// On a shared tier, what the crash left at the old name there moves
	// in one rename, as the move would have (files_shared.go); a share
	// that has it no more was renamed before the crash.
	if err := s.shareWhole(context.Background(), m); err != nil {
		return err
	}
	shareDone, err := s.renameOnShare(m)
	if err != nil {
		return err
	}
	defer shareDone(true) // finished, not undone: the next start goes on
	if _, err := s.makeMovedDirs(m, r.UID); err != nil {
		return err
	}
	for _, k := range m.files {
		to := m.key(k)
		if s.stack.HasKey(to) {
			err = s.dropMoved(k, to)
		} else {
			err = s.Writes().Move(context.Background(), k, to)
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	s.removeMovedDirs(m)
	return nil
}
