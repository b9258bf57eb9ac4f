package dir

import (
	"errors"
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// A tier's directory removed while mounted (rm -rf of the tier, its
// filesystem unmounted from under it) is found by the health probe, once
// a second: the descriptor the tier holds no longer names the directory
// at its path (rootfs.Root.Gone). The tier goes Down with ErrRootGone and
// one log line; its index forgets the files that went with the directory
// (their removals go out as events); the stack marks dirty again what the
// memory tier holds of them, so that they are written back where they
// belong once the tier is back, and the clean stop writes them too. No
// write makes the directory again behind the administrator's back: every
// operation is taken beneath the held, removed directory, and fails.
// When a directory is at the path again (made again, mounted again) the
// probe takes it: the tier holds it, locks it (a private tier: another
// daemon that took the path meanwhile keeps it, and this tier stays
// Down), rebuilds its index from it and comes Up through Unstable.

// ErrRootGone is the reason of a tier Down because its directory was
// removed or replaced while mounted.
var ErrRootGone = errors.New("its directory was removed or replaced while mounted")

// Probes is how many health probes the tier ran (one a second): a probe
// looks at the tier's root too (checkRoot).
func (t *Tier) Probes() int64 { return t.probes.Load() }

// lostRoot reports whether the tier's directory went (it waits for a
// directory at its path).
func (t *Tier) lostRoot() bool { return t.rootLost.Load() }

// loseRoot takes the tier Down after its directory went (why), forgets
// its files and hands their keys to onRootLost.
func (t *Tier) loseRoot(why string) {
	if !t.rootLost.CompareAndSwap(false, true) {
		return
	}
	t.health.setFailing(ErrRootGone)
	var keys []format.Key
	for _, model := range t.idx.ModelNames() {
		for _, e := range t.idx.RemoveModel(model) {
			keys = append(keys, e.Key())
		}
		t.forgetSuperseded(model)
	}
	t.dirs.Forget("")
	kept := 0
	if f := t.onRootLost.Load(); f != nil {
		kept = (*f)(keys)
	}
	t.log.Error("tier down: "+why+"; its files went with it, and what memory holds of them is written to it again once a directory is back at its path",
		"kind", t.kind, "dir", t.root, "files_lost", len(keys), "kept_in_memory", kept)
}

// reattach takes the directory at the tier's path again, if there is one
// (the probe's, while the tier's directory is lost). Every step but the
// index's rebuild runs under the probe's timeout.
func (t *Tier) reattach() {
	back := false
	err := t.run("probe", func() error {
		if !t.fs.PathIsDir() {
			return nil
		}
		if err := t.fs.Reopen(); err != nil {
			return err
		}
		back = true
		return t.share.relock()
	}, nil)
	if !back {
		return
	}
	if err != nil {
		if t.reattachLog.Allow(time.Now()) {
			t.log.Warn("tier directory back at its path, but not taken", "kind", t.kind, "dir", t.root, "err", err)
		}
		return
	}
	t.health.reason.Store(nil)
	t.health.okRun.Store(0)
	t.health.state.CompareAndSwap(int32(Down), int32(Unstable))
	if err := t.share.reindex(); err != nil {
		t.health.setFailing(ErrRootGone)
		t.log.Warn("tier directory back at its path, but its index not rebuilt", "kind", t.kind, "dir", t.root, "err", err)
		return
	}
	t.rootLost.Store(false)
	t.log.Info("tier directory back: taken again, and what memory kept is written to it", "kind", t.kind, "dir", t.root,
		"files", t.idx.Usage().Files)
}

// relock (privateDir) locks the directory at the tier's path now.
func (p *privateDir) relock() error {
	if p.lockf != nil {
		p.lockf.Close()
		p.lockf = nil
	}
	f, err := tier.LockExclusive(p.fs, tier.LockFileName)
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	p.lockf = f
	return nil
}

// reindex (privateDir) rebuilds the index from the directory taken again.
func (p *privateDir) reindex() error { return p.rebuild() }

// relock (sharedDir): a shared directory has no lock.
func (t *sharedDir) relock() error { return nil }

// reindex (sharedDir) forgets what it knew of the directory's shards and
// models: they are looked up in the new one.
func (t *sharedDir) reindex() error {
	t.view.mu.Lock()
	clear(t.view.shards)
	t.view.models = nil
	t.view.mu.Unlock()
	return nil
}
