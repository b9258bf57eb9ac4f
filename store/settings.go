package store

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/ucmfs/ucmfs/tiers"
)

// Settings is a model's persisted settings record (docs/format.md, "Model
// settings"): what its directory's writable attributes set, kept by the
// tiers (tiers.Stack.SetModelMeta) as JSON, so a restart keeps it. A
// model without a record has the zero value: layout ucmb, no group, the
// mount's sidecar kind, no quota.
type Settings struct {
	// Layout is the name of the model's layout (layout/registry); ""
	// reads as the default one.
	Layout string `json:"layout,omitempty"`
	// Models.ShardWidths are the shard widths (0: the directory "data", 1..4 hex
	// characters) of a ucm-posix model's shard directories, as the store
	// writing it made them with mkdir or as its tier files show.
	ShardWidths []int `json:"shard_widths,omitempty"`
	// Group is the KV-cache group kind (user.ucm.group, hybrid.Spec's
	// text form); "" is none.
	Group string `json:"group,omitempty"`
	// ReprKind is user.ucm.repr_kind's value; "" takes the mount's.
	ReprKind string `json:"repr_kind,omitempty"`
	// Quota is user.ucm.quota in bytes; 0 is none.
	Quota int64 `json:"quota,omitempty"`
	// QuotaByOwner says the model's owner set Quota where there was none
	// (quota_rights.go); false: the admin's, which holds against the
	// owner.
	QuotaByOwner bool `json:"quota_by_owner,omitempty"`
	// KeyPattern is user.ucm.key_pattern (key_pattern.go): how the
	// engine's block hash is read from a file's path; "" is the default
	// rule (events.EngineHash).
	KeyPattern string `json:"key_pattern,omitempty"`
	// PinnedDirs are the directories of a files model whose files are
	// kept in memory (dir_pins.go); "" is the model's root.
	PinnedDirs []string `json:"pinned_dirs,omitempty"`
	// Owner is who made the model and its mode (owners.go); nil: the
	// daemon's user, 0755.
	Owner *ModelOwner `json:"owner,omitempty"`
	// Made is when the model's mkdir made it, Unix nanoseconds: its
	// directory's mtime and ctime (model_times.go); 0 for a model made
	// before the time was kept, or found on a tier.
	Made int64 `json:"made,omitempty"`
	// Moves are the moves of directories of a files model under way
	// (files_move_record.go): one found at start was cut short by a
	// crash, and is finished then.
	Moves []DirMoveRecord `json:"moves,omitempty"`
}

// settingsTable holds the records read or written this run. mu is a leaf;
// write serializes the read-modify-write of a record and is held while
// the stack writes it (taken before the stack's locks, never under
// another mutex of this package but a Draft's mu: its publish beneath a
// directory whose move record is left drops the record first,
// files_move_left.go).
type settingsTable struct {
	mu    sync.Mutex
	m     map[string]Settings
	write sync.Mutex
}

func (t *settingsTable) init() { t.m = make(map[string]Settings) }

// modelSettings returns model's record (the zero value when it has none).
func (s *Store) modelSettings(model string) Settings {
	if v, ok := s.cachedSettings(model); ok {
		return v
	}
	return s.loadSettings(model)
}

// cachedSettings returns model's record where it was read already (ok),
// without reading it from the tiers: for callers under a tier's lock.
func (s *Store) cachedSettings(model string) (st Settings, ok bool) {
	s.settings.mu.Lock()
	st, ok = s.settings.m[model]
	s.settings.mu.Unlock()
	return st, ok
}

// loadSettings reads model's record from the tiers into the table (apart
// from ModelSettings, whose hot path must not allocate).
func (s *Store) loadSettings(model string) Settings {
	var v Settings
	b, shared, err := s.stack.ModelMeta(model)
	if err == nil {
		if jerr := json.Unmarshal(b, &v); jerr != nil {
			// Its owner and mode are not known: closed to all but root
			// and the daemon's user, not the defaults' 0755 (fail closed).
			s.log.Warn("model settings unreadable: the defaults apply, and the model is the daemon's, 0700", "model", model, "err", jerr)
			o := unreadableOwner
			v = Settings{Owner: &o}
		} else if shared && v.Owner != nil && *v.Owner != unreadableOwner {
			// Written on a shared tier, by another host or whoever can
			// write there: uids are host-local, so the owner it names is
			// not taken. The model is the daemon's, 0700, until root
			// here gives it an owner (chown, chmod), which is recorded on
			// this host's private tiers too.
			s.log.Info("model settings from a shared tier: its owner is not taken here; the model is the daemon's, 0700", "model", model, "recorded_uid", v.Owner.Uid)
			o := unreadableOwner
			v.Owner = &o
		}
		// Paths the store acts on: within the model (files_move_record.go, dir_pins.go).
		if len(v.Moves) > 0 {
			v.Moves = s.checkedMoves(model, &v, shared)
		}
		if len(v.PinnedDirs) > 0 {
			v.PinnedDirs = s.checkedPins(model, v.PinnedDirs)
		}
	} else if !errors.Is(err, tiers.ErrNotFound) {
		o := unreadableOwner // not read (an I/O error, or not a model name): not cached, closed
		return Settings{Owner: &o}
	}
	s.settings.mu.Lock()
	if cur, raced := s.settings.m[model]; raced {
		v = cur
	} else {
		s.settings.m[model] = v
	}
	s.settings.mu.Unlock()
	return v
}

// updateSettings applies fn to model's record and persists the result
// (unchanged records are not written, unless the model has directory
// move records left on the tiers: files_move_left.go, which a write
// that succeeds drops). fn's error is returned as it is.
func (s *Store) updateSettings(model string, fn func(*Settings) error) error {
	s.settings.write.Lock()
	defer s.settings.write.Unlock()
	old := s.modelSettings(model)
	v := old
	v.ShardWidths = slices.Clone(old.ShardWidths)
	v.Moves = slices.Clone(old.Moves)
	if err := fn(&v); err != nil {
		return err
	}
	left := s.leftMoves.dropped(model)
	if settingsEqual(old, v) && len(left) == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.settings.mu.Lock()
	s.settings.m[model] = v
	s.settings.mu.Unlock()
	if err := s.stack.SetModelMeta(model, b); err != nil {
		s.log.Warn("model settings not persisted everywhere", "model", model, "err", err)
		return err
	}
	s.leftMoves.remove(model, left)
	return nil
}

func settingsEqual(a, b Settings) bool {
	return a.Layout == b.Layout && slices.Equal(a.ShardWidths, b.ShardWidths) &&
		a.Group == b.Group && a.ReprKind == b.ReprKind && a.Quota == b.Quota && a.QuotaByOwner == b.QuotaByOwner && a.KeyPattern == b.KeyPattern && a.Made == b.Made && slices.Equal(a.PinnedDirs, b.PinnedDirs) && slices.Equal(a.Moves, b.Moves) &&
		(a.Owner == nil) == (b.Owner == nil) && (a.Owner == nil || *a.Owner == *b.Owner)
}

// forgetSettings drops model's record from memory (the model was removed,
// its directories with the record).
func (s *Store) forgetSettings(model string) {
	s.settings.mu.Lock()
	delete(s.settings.m, model)
	s.settings.mu.Unlock()
	s.dirPins.set(model, nil)
	s.leftMoves.forget(model)
}

// applySettings loads model's record at mount, hands its quota to the
// quota table and its pinned directories to theirs (repr_kind, group and
// layout are read from the record).
func (s *Store) applySettings(model string) {
	v := s.modelSettings(model)
	if v.Quota > 0 {
		s.quotas.set(model, v.Quota)
	}
	if layoutNamed(v.Layout).Tree() {
		s.applyDirPins(model, v.PinnedDirs)
	}
}
