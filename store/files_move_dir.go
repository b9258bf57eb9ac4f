package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// Moving a directory of a files model (docs/semantics.md, "rename of a
// directory"). Every file of a files model is a block in every tier under
// its path, and its key (its id is its path's hash) names it in every
// tier's index, in the pins, the generations and the kernel's nodes: a
// directory moved is every file beneath it moved. MoveFilesDir does that
// file by file (Writes.Move) in the daemon, for a directory small enough
// that it is done within a request; a larger one is ErrDirTooLarge, which
// the adapter answers EXDEV, so that mv copies and removes as it does
// across file systems (overlayfs answers a directory rename it cannot do
// in place the same way).

// The bounds of a directory moved in place (decision: they keep the
// request to about a second): the files beneath it, and the bytes of
// those it copies rather than links (a file only in memory, or one the
// first directory tier cannot link). A larger directory is copied by the
// caller, as across file systems.
const (
	MaxDirMoveFiles = 4096
	MaxDirMoveBytes = 256 << 20
)

// busyWait is how long a move waits for the files being written beneath
// the directory to publish before it is ErrBusy.
const busyWait = time.Second

// Errors of MoveFilesDir.
var (
	// ErrDirTooLarge: a directory past MaxDirMoveFiles, or whose files
	// to copy pass MaxDirMoveBytes, not moved (EXDEV: tools copy then).
	ErrDirTooLarge = errors.New("directory too large to move in place")
	// ErrBusy: a file is being written beneath the directory (EBUSY).
	ErrBusy = errors.New("files are being written beneath the directory")
)

// dirMove is what a directory move found beneath the directory: its
// directories (itself first, parents before children) and its published
// files.
type dirMove struct {
	model, from string
	toModel, to string
	dirs        []string
	files       []format.Key
	settled     []*Draft // Files beneath whose writers are done (Draft.settledLocked)
	onShare     bool     // renamed on the shared tiers (renameOnShare)
}

// target is where p, a path beneath from (or from itself), goes.
func (m *dirMove) target(p string) string { return m.to + strings.TrimPrefix(p, m.from) }

// key is the key file k beneath from moves to.
func (m *dirMove) key(k format.Key) format.Key { return format.FileKey(m.toModel, m.target(k.Name)) }

// MoveFilesDir renames the directory from of the files model model to
// the path to of the files model toModel (the same one, or another; to's
// parent is a directory), for the user uid (the directories it makes
// count as theirs; the bytes moved to another model count in its quota):
// the directories beneath from are made beneath to, every published file
// moved there (Writes.Move: durable where it was), the directories' pins
// carried over, and from's directories removed.
// to may be an empty directory, which is replaced. Errors: ErrNotFound
// when from is no directory, ErrInvalid when to is from or beneath it
// (EINVAL as rename(2) says), ErrNotEmpty when to is a directory that
// holds anything, ErrExist when a file has to's name, ErrBusy when a
// file beneath from is still being written after busyWait,
// ErrDirTooLarge past the bounds.
//
// On a shared tier it is one rename(2) of the directory
// (files_shared.go: renameOnShare), which other hosts see whole at either
// name. On memory and the private tiers it is not atomic, but recorded (files_move_record.go): a
// crash part-way leaves some files under either name (none lost: each is
// published under its new name before its old one goes), and the next
// start finishes the move. A reader of the store sees the files go one
// by one (the front end holds its requests beneath either name
// meanwhile). A
// file published beneath from meanwhile stays there, with the
// directories it needs; one removed meanwhile is left out.
func (s *Store) MoveFilesDir(ctx context.Context, model, from, toModel, to string, uid uint32) error {
	if !s.Models().LayoutOf(model).Tree() || !s.Models().LayoutOf(toModel).Tree() {
		return fmt.Errorf("%s to %s: a directory moves between files models: %w", model, toModel, ErrInvalid)
	}
	if from == "" || !s.FilesDir(model, from) {
		return fmt.Errorf("%s/%s: %w", model, from, ErrNotFound)
	}
	same := toModel == model
	if same && to == from {
		return nil
	}
	if to == "" || same && strings.HasPrefix(to, from+"/") {
		return fmt.Errorf("%s/%s into itself (%s): %w", model, from, to, ErrInvalid)
	}
	if err := format.ValidateFilePath(to); err != nil {
		return err
	}
	if s.Stopped() {
		return fmt.Errorf("shutting down: %w", ErrStopped)
	}
	if err := s.checkMoveTarget(toModel, to); err != nil {
		return err
	}
	if err := s.dropLeftBeneath(toModel, to); err != nil {
		return err // files_move_left.go: before a directory made on the share
	}
	m, err := s.awaitDirMove(ctx, model, from, toModel, to)
	if err != nil {
		return err
	}
	for _, w := range m.settled {
		// Its bytes are the published version's, which moves; its
		// descriptor still open (a dup, a fork) writes nowhere now, as
		// to a file unlinked. Written meanwhile, it is being written.
		if !w.DropSettled() {
			return fmt.Errorf("%s: %w", w.Key(), ErrBusy)
		}
	}
	if err := s.shareWhole(ctx, m); err != nil {
		return err
	}
	rec := m.record(uid)
	if err := s.recordDirMove(model, rec); err != nil {
		// A tier down: the move goes on as it would have without the
		// record (a crash now would leave it half done).
		s.log.Warn("directory move: not recorded on every tier", "model", model, "dir", from, "err", err)
	}
	defer s.endDirMove(model, rec)
	shareDone, err := s.renameOnShare(m)
	if err != nil {
		return err
	}
	made, err := s.makeMovedDirs(m, uid)
	if err == nil {
		err = s.moveDirFiles(ctx, m)
	}
	shareDone(err == nil)
	if err != nil {
		s.undoDirMove(m, made)
		return fmt.Errorf("moving %s/%s to %s/%s: %w", model, from, toModel, to, err)
	}
	s.removeMovedDirs(m)
	return nil
}

// moveDirFiles moves the files of m as Writes.Move moves one, in three
// passes, so that what was durable is made durable again together rather
// than one fsync after another: every file is linked (on the first
// directory tier) or copied to its new path, the copies of those that
// were durable are written back (the write-back pool's parallelism) and
// the links' directories synced once each, then the old paths go. A crash before the
// last pass leaves every old path as it was.
func (s *Store) moveDirFiles(ctx context.Context, m *dirMove) error {
	var durable, linked []format.Key
	for _, k := range m.files {
		d, l, err := s.copyFile(k, m.key(k), true)
		if errors.Is(err, ErrNotFound) {
			continue // removed meanwhile: as if before the rename
		}
		if err != nil {
			return err
		}
		if d {
			durable = append(durable, m.key(k))
		}
		if l {
			linked = append(linked, m.key(k))
		}
	}
	if err := s.stack.FlushKeys(ctx, durable); err != nil {
		return fmt.Errorf("making the copies durable: %w", err)
	}
	if err := s.stack.SyncLinks(linked); err != nil {
		return fmt.Errorf("making the links durable: %w", err)
	}
	for _, k := range m.files {
		done := s.Removal(k) // after the GPU loads of the file
		err := s.dropMoved(k, m.key(k))
		done()
		if err != nil {
			return err
		}
	}
	return nil
}

// AwaitDirWrites waits, up to busyWait, until no file is being written
// beneath the directory from of model (ErrBusy past it; ErrDirTooLarge
// at once for a directory past the bounds; ErrNotEmpty or ErrExist
// instead of either for a target, to of toModel, that is not an empty
// directory or nothing), as MoveFilesDir does first: the
// front end calls it before it holds requests beneath the directory for
// the move, since the RELEASE that publishes a file just closed must not
// wait behind them.
func (s *Store) AwaitDirWrites(ctx context.Context, model, from, toModel, to string) error {
	_, err := s.awaitDirMove(ctx, model, from, model, from)
	if errors.Is(err, ErrBusy) || errors.Is(err, ErrDirTooLarge) {
		if terr := s.checkMoveTarget(toModel, to); terr != nil {
			return terr // a target not empty says so first, as on a local disk
		}
		return err
	}
	return nil // the move itself reports any other, the target first
}

// awaitDirMove plans the move (planDirMove), waiting up to busyWait while
// a file beneath from is still being written: a file closed just before
// the rename publishes at its RELEASE, which the kernel sends after close
// returns, so `echo > d/f; mv d e` would find it being written.
func (s *Store) awaitDirMove(ctx context.Context, model, from, toModel, to string) (*dirMove, error) {
	m, err := s.planDirMove(model, from, toModel, to)
	for end := time.Now().Add(busyWait); errors.Is(err, ErrBusy) && time.Now().Before(end); {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("moving %s/%s: %w", model, from, ErrInterrupted)
		case <-time.After(2 * time.Millisecond):
		}
		m, err = s.planDirMove(model, from, toModel, to)
	}
	return m, err
}

// checkMoveTarget refuses a target that is a file or a directory holding
// anything.
func (s *Store) checkMoveTarget(model, to string) error {
	if s.stack.HasKey(format.FileKey(model, to)) {
		return fmt.Errorf("%s/%s is a file: %w", model, to, ErrExist)
	}
	if !s.FilesDir(model, to) {
		return nil
	}
	subdirs, files := s.FilesList(model, to)
	if writing := s.writes.inShard(model, to); len(subdirs) > 0 || len(files) > 0 || writing {
		return fmt.Errorf("%s/%s: %d directories, %d files, being written %v: %w", model, to, len(subdirs), len(files), writing, ErrNotEmpty)
	}
	return nil
}

// planDirMove lists what is beneath from, within the bounds.
func (s *Store) planDirMove(model, from, toModel, to string) (*dirMove, error) {
	m := &dirMove{model: model, from: from, toModel: toModel, to: to, dirs: []string{from}}
	var bytes int64
	busy := ""
	for i := 0; i < len(m.dirs); i++ {
		d := m.dirs[i]
		if busy == "" && s.writes.inShard(model, d) {
			for _, w := range s.writes.inShardDrafts(model, d) {
				if !w.Settled() {
					busy = d
					break
				}
				m.settled = append(m.settled, w)
			}
		}
		subdirs, files := s.FilesList(model, d)
		for _, sub := range subdirs {
			m.dirs = append(m.dirs, format.JoinFilePath(d, sub))
		}
		for _, k := range files {
			if s.stack.Linkable(k) {
				continue // linked on its tier: no bytes copied
			}
			if bi, err := s.stack.Stat(k); err == nil {
				bytes += bi.Size
			}
		}
		m.files = append(m.files, files...)
		if len(m.files) > MaxDirMoveFiles || bytes > MaxDirMoveBytes || len(m.dirs) > MaxDirMoveFiles {
			return nil, fmt.Errorf("%s/%s: more than %d files, or %d MiB to copy: %w",
				model, from, MaxDirMoveFiles, MaxDirMoveBytes>>20, ErrDirTooLarge)
		}
	}
	if busy != "" {
		return nil, fmt.Errorf("%s/%s: %w", model, busy, ErrBusy)
	}
	return m, nil
}

// makeMovedDirs makes the directories of m beneath to, and carries their
// pins: it returns those it made.
func (s *Store) makeMovedDirs(m *dirMove, uid uint32) (made []string, err error) {
	for _, d := range m.dirs {
		t := m.target(d)
		switch {
		case !s.FilesDir(m.toModel, t):
			if err := s.FilesMkdir(m.toModel, t, uid); err != nil {
				return made, err
			}
			made = append(made, t)
		case m.onShare:
			// The share has it (renameOnShare): the other tiers too.
			if err := s.stack.MakeDir(m.toModel, t); err != nil {
				return made, err
			}
		}
		if s.DirPinned(m.model, d) {
			if err := s.SetDirPin(m.toModel, t, true); err != nil {
				s.log.Warn("directory move: pin not carried over", "model", m.toModel, "dir", t, "err", err)
			}
		}
	}
	return made, nil
}

// undoDirMove drops the copies of a failed move and removes the
// directories it made, as far as it can: a failed rename(2) leaves the
// names as they were. (The last pass of moveDirFiles, removing the old
// paths, fails only with a tier: those files are then under both names.)
func (s *Store) undoDirMove(m *dirMove, made []string) {
	for _, k := range m.files {
		if s.stack.Has(k) {
			s.dropCopy(m.key(k))
		}
	}
	for i := len(made) - 1; i >= 0; i-- {
		if err := s.FilesRmdir(m.toModel, made[i]); err != nil {
			s.log.Warn("directory move: directory left", "model", m.toModel, "dir", made[i], "err", err)
		}
	}
}

// removeMovedDirs removes from's directories, children first. One that a
// file was published in meanwhile stays, with its parents.
func (s *Store) removeMovedDirs(m *dirMove) {
	for i := len(m.dirs) - 1; i >= 0; i-- {
		err := s.FilesRmdir(m.model, m.dirs[i])
		if err != nil && !errors.Is(err, ErrNotFound) {
			s.log.Warn("directory move: old directory left", "model", m.model, "dir", m.dirs[i], "err", err)
		}
	}
}
