package dir

import (
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// StagedFile is a file staged on a directory tier (Stack.CreateOnDisk,
// tiers/stack_disk.go): the tier's dirWriter, never written through Write (the
// kernel or the daemon write its descriptors), and the temp file opened
// again with O_DIRECT. Its descriptors may be closed while no writer
// needs them (Park) and opened again (Unpark); it may be renamed before
// it is published (Rekey).
type StagedFile struct {
	*dirWriter
	direct *os.File // the temp file opened O_DIRECT; nil while parked
}

// CreateStaged starts key's file as Create does, to be written through
// its descriptors only, and opens it O_DIRECT (on EINVAL, a filesystem
// that takes no O_DIRECT, the tier's O_DIRECT writes are turned off:
// DisableDirect).
func (t *Tier) CreateStaged(key format.Key) (*StagedFile, error) {
	w, err := t.create(key, false)
	if err != nil {
		return nil, err
	}
	sf := &StagedFile{dirWriter: w.(*dirWriter)}
	if err := sf.openDirect(); err != nil {
		if errors.Is(err, unix.EINVAL) {
			t.DisableDirect(err) // the filesystem takes no O_DIRECT: one warning, buffered from now on
		}
		sf.Abort()
		return nil, err
	}
	return sf, nil
}

// Link starts the temp file of to as a hard link of from's file, beside
// to's final name (LinkOnDisk).
func (t *Tier) Link(from, to format.Key) (*StagedFile, error) {
	if err := tier.CheckKey(to); err != nil {
		return nil, err
	}
	w := &dirWriter{t: t, key: to}
	src, dir := from.Path(), path.Dir(to.Path())
	err := t.do("link", func() error {
		if err := t.EnsureDir(to); err != nil {
			return err
		}
		for {
			tmp := dir + "/" + TempName(to.ID.String())
			err := t.fs.Link(src, tmp)
			if errors.Is(err, unix.EEXIST) {
				continue
			}
			if err != nil {
				return tier.OSErr("link", err)
			}
			// Read-only: the file is published (0444) already, and
			// Commit only syncs it and sets its times and mode.
			f, err := t.fs.OpenFile(tmp, unix.O_RDONLY, 0)
			if err != nil {
				_ = t.fs.Unlink(tmp)
				return tier.OSErr("open", err)
			}
			w.tmp, w.f = tmp, f
			return nil
		}
	}, func() { w.cleanup() })
	if err != nil {
		return nil, fmt.Errorf("%s tier: %w", t.kind, err)
	}
	return &StagedFile{dirWriter: w}, nil
}

// DirectFile is the descriptor of the file opened O_DIRECT (nil while
// parked, and when it cannot be opened again).
func (w *StagedFile) DirectFile() *os.File {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.direct == nil && !w.done && w.f != nil {
		if err := w.openDirect(); err != nil {
			w.t.log.Warn("a staged file could not be opened O_DIRECT again: its writer's writes go through the daemon", "key", w.key.String(), "err", err)
		}
	}
	return w.direct
}

// openDirect opens the temp file again with O_DIRECT (under mu, or
// before the Writer is handed out).
func (w *StagedFile) openDirect() error {
	f, err := w.t.fs.OpenFile(w.tmp, unix.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		return err
	}
	w.direct = f
	return nil
}

// closeDirect closes the O_DIRECT descriptor (under mu).
func (w *StagedFile) closeDirect() {
	if w.direct != nil {
		w.direct.Close()
		w.direct = nil
	}
}

// Commit publishes the file on its tier (dirWriter.Commit).
func (w *StagedFile) Commit(opts tier.CommitOptions) (tier.Info, error) {
	if err := w.Unpark(); err != nil {
		return tier.Info{}, err
	}
	if path.Dir(w.tmp) != path.Dir(w.key.Path()) { // renamed before it was published (Rekey)
		if err := w.t.do("mkdir", func() error { return w.t.EnsureDir(w.key) }, nil); err != nil {
			return tier.Info{}, fmt.Errorf("%s tier: %w", w.t.kind, err)
		}
	}
	info, err := w.dirWriter.Commit(opts)
	if err == nil || !errors.Is(err, tier.ErrFull) {
		w.mu.Lock()
		w.closeDirect()
		w.mu.Unlock()
	}
	return info, err
}

// Abort discards the file.
func (w *StagedFile) Abort() {
	w.mu.Lock()
	w.closeDirect()
	w.mu.Unlock()
	w.dirWriter.Abort()
}

// Rekey makes the file publish as key instead (a staging file renamed to
// its final name before it was published): its directory is made at
// Commit.
func (w *StagedFile) Rekey(key format.Key) {
	w.mu.Lock()
	w.key = key
	w.mu.Unlock()
}

// TempName is the temp file's name beneath the tier's root.
func (w *StagedFile) TempName() string { return w.tmp }

// Park closes both descriptors while no writer needs them.
func (w *StagedFile) Park() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.f == nil {
		return
	}
	w.closeDirect()
	w.f.Close()
	w.f = nil
}

// Unpark opens the file again after Park; the O_DIRECT descriptor is
// opened when a writer asks for it (DirectFile): a staging file is most
// often opened again only to be renamed.
func (w *StagedFile) Unpark() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.f != nil {
		return nil
	}
	f, err := w.t.fs.OpenFile(w.tmp, unix.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%s tier: reopen %s: %w", w.t.kind, w.key, tier.OSErr("open", err))
	}
	w.f = f
	return nil
}
