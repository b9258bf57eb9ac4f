package store

import (
	"fmt"
	"sync"
	"time"
)

// Per-user limits. A user other than root may own at most
// Options.MaxModelsPerUser models (a mkdir past it fails with ErrQuota,
// EDQUOT), and the models a user owns may hold at most
// Options.MaxBytesPerUser bytes together (a publish past it fails with
// ErrQuota). The bytes are charged to the model's owner, whoever writes:
// a model's writers write with its owner's leave. Like a model's quota,
// the use is measured at most every quotaRecheck and each publish is
// added to it at once.

// DefaultMaxModelsPerUser is Options.MaxModelsPerUser's default.
const DefaultMaxModelsPerUser = 1024

// userUse is the measured bytes of each user's models.
type userUse struct {
	mu   sync.Mutex
	used map[uint32]measured
}

// modelsOf returns the models uid owns.
func (s *Store) modelsOf(uid uint32) []string {
	var out []string
	for _, m := range s.Models().Names() {
		if s.Models().Owner(m).Uid == uid {
			out = append(out, m)
		}
	}
	return out
}

// Admit allows uid to make one more model: ErrQuota when it owns
// Options.MaxModelsPerUser already (root: no limit).
func (ms Models) Admit(uid uint32) error {
	limit := ms.s.opts.MaxModelsPerUser
	if uid == 0 || limit <= 0 {
		return nil
	}
	if n := len(ms.s.modelsOf(uid)); n >= limit {
		return fmt.Errorf("uid %d owns %d models, the most one user may: %w", uid, n, ErrQuota)
	}
	return nil
}

// admitUser allows size more bytes into model, charged to its owner:
// ErrQuota past Options.MaxBytesPerUser (root: no limit). It returns the
// uid charged (for unadmitUser) and whether anything was.
func (s *Store) admitUser(model string, size int64) (uid uint32, charged bool, err error) {
	limit := s.opts.MaxBytesPerUser
	if limit <= 0 {
		return 0, false, nil
	}
	uid = s.Models().Owner(model).Uid
	if uid == 0 {
		return 0, false, nil
	}
	u := &s.users
	u.mu.Lock()
	m, fresh := u.used[uid]
	u.mu.Unlock()
	if !fresh || time.Since(m.at) > quotaRecheck {
		var bytes int64
		for _, mm := range s.modelsOf(uid) {
			bytes += s.Models().Usage(mm).Bytes
		}
		m = measured{bytes: bytes, at: time.Now()}
	}
	if m.bytes+size > limit {
		return uid, false, fmt.Errorf("the models of uid %d hold %d bytes, %d more pass its limit of %d: %w", uid, m.bytes, size, limit, ErrQuota)
	}
	m.bytes += size
	u.mu.Lock()
	if u.used == nil {
		u.used = make(map[uint32]measured)
	}
	u.used[uid] = m
	u.mu.Unlock()
	return uid, true, nil
}

// unadmitUser takes back what admitUser charged for a publish that did
// not happen.
func (s *Store) unadmitUser(uid uint32, size int64) {
	u := &s.users
	u.mu.Lock()
	defer u.mu.Unlock()
	if m, ok := u.used[uid]; ok {
		m.bytes -= size
		u.used[uid] = m
	}
}
