package store

import "fmt"

// Who may change a model's quota (docs/semantics.md, "Owners and
// permissions"). A quota is the admin's, root's or the daemon's user's
// (IsAdmin): the admin sets, raises and clears it. The model's owner may
// only lower it, or set one where there is none, which is then its own
// (Settings.QuotaByOwner). A quota the admin set (a record without
// QuotaByOwner, those written before it included: fail closed) holds
// against the owner: its rmdir of the model is refused (ErrNotOwner),
// since the removal would drop the quota and a mkdir of the name make the
// model anew without it; the admin removes it, or clears the quota first.
// The quota is in the model's settings record, so a restart keeps both.

// IsAdmin reports whether uid administers the mount: root or the
// daemon's user.
func IsAdmin(uid uint32) bool { return uid == 0 || uid == daemonOwner.Uid }

// SetQuota sets model's quota to limit bytes (0 removes it) for the user
// uid: the admin any; the model's owner a lower one, or one where there is
// none (its own); ErrNotOwner otherwise.
func (ms Models) SetQuota(model string, limit int64, uid uint32) error {
	if err := ms.CheckOwner(model, uid); err != nil {
		return err
	}
	limit = max(limit, 0)
	err := ms.s.updateSettings(model, func(v *Settings) error {
		switch {
		case IsAdmin(uid):
			v.QuotaByOwner = false
		case limit == 0 || v.Quota != 0 && limit > v.Quota:
			return fmt.Errorf("quota %d over %d of %s: only root or the daemon's user raises or clears a quota: %w", limit, v.Quota, model, ErrNotOwner)
		case v.Quota == 0:
			v.QuotaByOwner = true
		}
		v.Quota = limit
		return nil
	})
	if err != nil {
		return err
	}
	ms.s.quotas.set(model, limit)
	return nil
}

// checkRemoval allows uid to remove model: the admin always, another user
// (whom the kernel allowed: the model's owner) unless the model has a
// quota the admin set (ErrNotOwner).
func (s *Store) checkRemoval(model string, uid uint32) error {
	if v := s.modelSettings(model); !IsAdmin(uid) && v.Quota > 0 && !v.QuotaByOwner {
		return fmt.Errorf("model %s has a quota of %d bytes root set: only root or the daemon's user removes it: %w", model, v.Quota, ErrNotOwner)
	}
	return nil
}
