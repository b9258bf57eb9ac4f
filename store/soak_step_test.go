package store

import (
	"context"
	"errors"
	"slices"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/soaktest"
)

// step runs one random operation of the store soak and checks what it
// returned against the model.
func (sr *storeSoak) step() {
	n := sr.names[sr.r.IntN(len(sr.names))]
	ctx := context.Background()
	switch x := sr.r.IntN(100); {
	case x < 34:
		sr.put(n)
	case x < 48:
		sr.check(n)
	case x < 52:
		err := sr.s.FlushKeys(ctx, []format.Key{n.key})
		sr.logf("flush %s (fsync of its directory): %v", n.key, err)
		if err == nil {
			n.flushed()
		}
	case x < 55:
		err := sr.s.Flush(ctx, n.key.Model)
		sr.logf("flush model %s: %v", n.key.Model, err)
		if err == nil {
			for _, m := range sr.names {
				if m.key.Model == n.key.Model {
					m.flushed()
				}
			}
		}
	case x < 61:
		sr.remove(n)
	case x < 64 && n.key.Kind == format.File:
		sr.moveFile(n)
	case x < 66:
		sr.moveDir()
	case x < 70:
		err := sr.s.Tiers().Evict(n.key)
		sr.logf("evict %s: %v", n.key, err)
	case x < 74:
		pin := sr.r.IntN(2) == 0
		err := sr.s.SetUserPin(n.key, pin)
		sr.logf("pin %s %v: %v", n.key, pin, err)
	case x < 76:
		limit := []int64{0, 64 << 10, 1 << 20}[sr.r.IntN(3)]
		if limit > 0 {
			limit += sr.s.Models().Usage(n.key.Model).Bytes
		}
		err := sr.s.Models().SetQuota(n.key.Model, limit, 0)
		sr.logf("quota of %s %d: %v", n.key.Model, limit, err)
	case x < 82:
		sr.logf("%s", soaktest.Fault(sr.r, sr.disk))
		sr.faulted = true
	case x < 85:
		sr.restart()
	case x < 90 && !sr.cutArm:
		sr.logf("%s", soaktest.Cut(sr.r, sr.disk))
		sr.cutArm = true
	default:
		for _, m := range sr.names {
			sr.check(m)
		}
		sr.checkTiers("now")
	}
	if sr.disk.Cut() {
		sr.powerCut()
	}
}

// put writes n's next version (soakStore.write) and holds the model to
// the verdict.
func (sr *storeSoak) put(n *soakName) {
	if n.key.Kind == format.File {
		dir, _ := format.SplitFilePath(n.key.Name)
		if !sr.s.FilesDir(n.key.Model, dir) {
			err := sr.s.FilesMkdir(n.key.Model, dir, 0) // an engine's makedirs
			sr.logf("mkdir %s: %v", dir, err)
			if errors.Is(err, ErrExist) && !sr.s.FilesDir(n.key.Model, dir) {
				sr.open("dir", "mkdir %s: %v, but it is no directory", dir, err)
			}
			if err != nil {
				return
			}
		}
	}
	durable := sr.r.IntN(4) == 0
	n.changes++
	v, data := sr.book.version(n, sr.r)
	how, err := sr.write(n, data, durable)
	sr.logf("write %s v%d (%d bytes, %s) durable=%v: %v", n.key, v, len(data), how, durable, err)
	switch {
	case errors.Is(err, ErrExist) && n.key.Kind != format.File:
		// a block is published once: the first copy stays
	case err == nil && n.key.Kind != format.File && !n.reads(-1):
		// an id already published: the first copy stays, and the
		// verdict is nil (docs/spec.md: a block is immutable)
	case err == nil && n.key.Kind != format.File && len(n.now) > 1:
		n.maybe(v)
	case errors.Is(err, ErrQuota):
		// refused before anything was published: the name is as it was
	case err != nil:
		n.maybe(v) // the old version, or the new one: never none
	default:
		n.published(v, durable || sr.wt)
	}
}

// remove unlinks n and holds the model to the verdict.
func (sr *storeSoak) remove(n *soakName) {
	err := sr.unlink(n)
	sr.logf("unlink %s: %v", n.key, err)
	n.changes++
	switch {
	case err == nil, errors.Is(err, ErrNotFound) && n.reads(-1):
		n.removed()
	case errors.Is(err, ErrNotFound):
		sr.fail("unlink %s: not found, but it holds one of %v", n.key, n.now)
	default:
		n.maybe(-1)
	}
}

// check reads n and holds it to the model: the version last published,
// whole, or while the tier is faulted an error (never wrong bytes).
func (sr *storeSoak) check(n *soakName) {
	v, err := sr.read(n)
	sr.logf("  read %s: v%d %v", n.key, v, err)
	if err != nil {
		if sr.disk.Cut() || sr.faulted {
			return
		}
		sr.fail("read %s: %v", n.key, err)
	}
	if v == -2 {
		sr.fail("read %s: bytes of no version written (torn, or another's)", n.key)
	}
	if !n.reads(v) {
		class := "stale"
		if slices.Contains(n.now, -1) {
			class = "back"
		}
		if v == -1 {
			class = "dropped"
		}
		if sr.recordLeft.Load() {
			// gone from the moved directory, or back in its target
			class = "move-record-left"
		}
		sr.open(class, "read %s: v%d, want one of %v", n.key, v, n.now)
	}
	n.took(v, &sr.book) // a move that failed took place
	n.now = []int{v}
}
