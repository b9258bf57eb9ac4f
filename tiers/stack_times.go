package tiers

import (
	"fmt"
	"os"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
)

// Times and staging writes: what a writer that restores times (rsync,
// tar) or rewrites a published block needs from the stack.

// CreateStaging starts writing key like Create, also when key is already
// published: the writer (a staging file, rsync writing a block again)
// learns at Publish, which keeps the first copy (ErrExist).
func (s *Stack) CreateStaging(key format.Key) (*PendingWrite, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	w, err := s.mem.Create(key)
	if err != nil {
		return nil, err
	}
	return &PendingWrite{key: key, w: w}, nil
}

// SetMTime sets the publish time the file takes (its mtime in every
// tier); zero keeps the time of Publish.
func (p *PendingWrite) SetMTime(t time.Time) { p.mtime = t }

// SetReplace makes Publish replace the key when it is published already
// (a File written again, or renamed over: the files layout), instead of
// keeping the first copy. The old copies leave every tier and the new one
// enters memory under the key's stripe lock, so no copy of the old one
// that was on its way between tiers lands after it (the stack's copies
// commit only while their source entry is still the one they read).
// Readers that have the old file open keep reading it.
func (p *PendingWrite) SetReplace() { p.replace = true }

// rekeyer is a Writer that can publish under another key than it was
// created with (the memory tier's, and a file staged on disk).
type rekeyer interface {
	Rekey(key format.Key)
}

// Rekey makes the pending write publish as key instead (a staging file
// renamed to its final name before it was published).
func (p *PendingWrite) Rekey(key format.Key) {
	p.key = key
	if w, ok := p.w.(rekeyer); ok {
		w.Rekey(key)
	}
}

// SetMTime sets k's mtime in every tier that holds it, as utimes does to
// a file, and marks it as just used: for UCM's hotness (utime on a hit)
// and GC (oldest mtime first), and rsync's comparison of times. It fails
// with ErrNotFound when no tier holds k.
func (s *Stack) SetMTime(k format.Key, t time.Time) error {
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	found := false
	set := func(ix *index.Index, r rootfs.FS) error {
		if !ix.SetMTime(k, t) {
			return nil
		}
		found = true
		if err := r.Chtimes(k.Path(), t, t); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("utimes: %w", err)
		}
		return nil
	}
	if err := set(s.mem.Index(), s.mem.Root()); err != nil {
		return err
	}
	s.mem.Touch(k)
	for _, d := range s.dirs {
		if err := set(d.Index(), d.Root()); err != nil {
			return err
		}
	}
	if !found {
		return fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	return nil
}

// parker is a Writer whose file can be closed while idle (the memory
// tier's, and a file staged on disk).
type parker interface {
	Park()
	Unpark() error
}

// Park closes the temporary file's descriptor while no writer needs it:
// a staging file waiting for its rename holds none of the daemon's
// descriptors. File is nil until Unpark.
func (p *PendingWrite) Park() {
	if pk, ok := p.w.(parker); ok {
		pk.Park()
	}
}

// Unpark opens the temporary file again after Park (File is its new
// descriptor); a no-op when it is open.
func (p *PendingWrite) Unpark() error {
	if pk, ok := p.w.(parker); ok {
		return pk.Unpark()
	}
	return nil
}
