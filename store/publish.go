package store

import (
	"fmt"

	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
)

// Publish publishes a pending write of size bytes under the rules every
// front end shares: the size limit (ErrTooBig), a sidecar's shape against
// its block (checkSidecar), the model's quota (ErrQuota), then
// tiers.Stack.Publish, which validates the file. The pending write is used
// up either way. tiers.ErrExist means the key was already published: one
// copy is kept, which callers report as success.
func (ws Writes) Publish(pw *DraftFile, size int64, durable bool) (Info, error) {
	return ws.s.publish(pw, size, durable, true)
}

// publish is Publish; charge false skips the quotas (the model's and its
// owner's): a move's copy within a model (copyFile), whose bytes the
// model already holds under the name that goes once the copy is in place. A rename on a local
// disk needs no room, and a model at its quota must still rename its
// files and directories.
func (s *Store) publish(pw *DraftFile, size int64, durable, charge bool) (Info, error) {
	key := pw.Key()
	if size > s.opts.MaxFileSize {
		s.stack.Abort(pw)
		return tiers.Info{}, fmt.Errorf("%d bytes pass the %d-byte limit: %w", size, s.opts.MaxFileSize, ErrTooBig)
	}
	l := registry.Of(key)
	if l.IsSidecar(key) {
		if err := s.checkSidecar(pw); err != nil {
			s.stack.Abort(pw)
			return tiers.Info{}, err
		}
	}
	if l.Tree() {
		// Not beneath a moved directory's old name while its record,
		// which the next start would finish, is on the tiers.
		if err := s.dropLeftBeneath(key.Model, key.Name); err != nil {
			s.stack.Abort(pw)
			return tiers.Info{}, err
		}
	}
	var uid uint32
	var charged bool
	if charge {
		if err := s.admit(key.Model, size); err != nil {
			s.stack.Abort(pw)
			return tiers.Info{}, fmt.Errorf("model %s: %d more bytes pass its quota of %d: %w", key.Model, size, s.quotas.get(key.Model), err)
		}
		var err error
		if uid, charged, err = s.admitUser(key.Model, size); err != nil {
			s.unadmit(key.Model, size)
			s.stack.Abort(pw)
			return tiers.Info{}, fmt.Errorf("model %s: %w", key.Model, err)
		}
	}
	replacing := l.Replaces() && s.stack.Has(key)
	info, err := s.stack.Publish(pw, durable)
	if err != nil {
		if charge {
			s.unadmit(key.Model, size)
		}
		if charged {
			s.unadmitUser(uid, size)
		}
		return info, err
	}
	if replacing {
		s.bumpGen(key)
	}
	if l.Tree() {
		s.trees.add(key.Model, key.ShardDir()) // its directories, made by the tiers as they take it
	}
	s.countIn(info.Tier, info.Size)
	s.models.add(key.Model)
	s.log.Debug("published", "key", key.String(), "bytes", info.Size, "durable", durable, "tier", int(info.Tier))
	return info, nil
}
