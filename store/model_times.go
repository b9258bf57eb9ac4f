package store

import "time"

// A model directory's mtime and ctime are when its mkdir made it, kept in
// its settings record so that a restart keeps them (its shards never
// change; a files model's directories move their times with what they
// hold, from this time on).

// SetMade records t as when model was made (mkdir).
func (ms Models) SetMade(model string, t time.Time) error {
	return ms.s.updateSettings(model, func(st *Settings) error { st.Made = t.UnixNano(); return nil })
}

// Made is when model was made, as Models.SetMade recorded it; the zero
// time where none is recorded.
func (ms Models) Made(model string) time.Time {
	if ns := ms.s.modelSettings(model).Made; ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
