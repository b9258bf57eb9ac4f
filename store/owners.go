package store

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/ucmfs/ucmfs/tiers"
)

// Models belong to users. A model directory is owned by the uid and gid of
// the process that made it (mkdir), with the permission bits mkdir asked
// for (the kernel applied the umask); chmod and chown change them. The
// front end shows them on the model, its shard directories and its files,
// and the kernel checks them (fs: default_permissions); the store keeps
// them across restarts as the model record "owner" of the first directory
// tier (tiers.Stack.SaveModelRecord: "<uid> <gid> <mode in octal>\n").
// A model with no record (made by an older version, or found on a tier)
// belongs to the daemon's user, mode 0755, as before.

// ModelOwner is who owns a model, and its permission bits.
type ModelOwner struct {
	Uid, Gid uint32
	Mode     uint32 // permission bits (07777)
}

// ErrNotOwner: the caller is neither the model's owner nor root (EPERM).
var ErrNotOwner = errors.New("not the owner of the model")

// ownerRecord is the name of the model record.
const ownerRecord = "owner"

// ownerTable caches the owners of models.
type ownerTable struct {
	mu sync.Mutex
	m  map[string]ModelOwner
}

// defaultOwner is the owner of a model without a record.
func defaultOwner() ModelOwner {
	return ModelOwner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Mode: 0o755}
}

// ModelOwner returns model's owner and mode.
func (s *Store) ModelOwner(model string) ModelOwner {
	t := &s.owners
	t.mu.Lock()
	o, ok := t.m[model]
	t.mu.Unlock()
	if ok {
		return o
	}
	o = defaultOwner()
	b, err := s.stack.ModelRecord(model, ownerRecord)
	if err == nil {
		var got ModelOwner
		if _, err := fmt.Sscanf(string(b), "%d %d %o", &got.Uid, &got.Gid, &got.Mode); err == nil {
			o = got
			o.Mode &= 0o7777
		}
	} else if !errors.Is(err, tiers.ErrNotFound) {
		return o // the tier did not answer: ask again next time
	}
	t.put(model, o)
	return o
}

// SetModelOwner records model's owner and mode, durably.
func (s *Store) SetModelOwner(model string, o ModelOwner) error {
	o.Mode &= 0o7777
	if err := s.stack.SaveModelRecord(model, ownerRecord, fmt.Appendf(nil, "%d %d %o\n", o.Uid, o.Gid, o.Mode)); err != nil {
		return err
	}
	s.owners.put(model, o)
	return nil
}

// put caches model's owner.
func (t *ownerTable) put(model string, o ModelOwner) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]ModelOwner)
	}
	t.m[model] = o
}

// forgetOwner drops model's owner (the model was removed).
func (s *Store) forgetOwner(model string) {
	t := &s.owners
	t.mu.Lock()
	delete(t.m, model)
	t.mu.Unlock()
	if err := s.stack.RemoveModelRecord(model, ownerRecord); err != nil && !errors.Is(err, tiers.ErrNotFound) {
		s.log.Warn("removing a model's owner record", "model", model, "err", err)
	}
}

// CheckOwner allows uid to change model's settings: its owner or root;
// else ErrNotOwner.
func (s *Store) CheckOwner(model string, uid uint32) error {
	if uid == 0 || uid == s.ModelOwner(model).Uid {
		return nil
	}
	return fmt.Errorf("model %s: uid %d: %w", model, uid, ErrNotOwner)
}
