package dir

import (
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// A shared tier's files are evicted by mtime, which every daemon moves
// on use (touched), and never younger than KeepRecent (mayEvict); what
// the stack does for a shared tier is tiers/stack_shared.go.

// Defaults of Config.Revalidate and Config.KeepRecent.
const (
	DefaultRevalidate = time.Second
	DefaultKeepRecent = 10 * time.Minute
)

// Shared reports whether the tier is a shared kind (nfs, ds3fs, or one
// configured Shared).
func (t *Tier) Shared() bool { return t.sharedDir() != nil }

// sharedDir is the tier's sharing when it is shared, or nil.
func (t *Tier) sharedDir() *sharedDir {
	sd, _ := t.share.(*sharedDir)
	return sd
}

// touchEvery is how often a shared tier moves a used file's mtime.
func (t *sharedDir) touchEvery() time.Duration { return min(time.Minute, t.keepRecent/4) }

// touched moves key's mtime to now when it is older than touchEvery:
// the use other daemons see and evict by.
func (t *sharedDir) touched(key format.Key) {
	info, _, ok := tier.IndexGet(t.idx, key)
	if !ok || time.Since(info.MTime) < t.touchEvery() {
		return
	}
	now := time.Now()
	p := key.Path()
	if err := t.do("utimes", func() error { return t.fs.Chtimes(p, now, now) }, nil); err == nil {
		t.idx.SetMTime(key, now)
	}
}

// mayEvict reports whether the shared tier may evict key now: its file
// is there and its mtime (which any daemon moves on use) is older than
// KeepRecent, or the share is full (over its size, or short of the room
// a write waits for) and the older files went first (yieldRecent,
// shared_size.go). A younger file gets its mtime in
// the index and moves to the back of the eviction order; a file gone is
// dropped from the index.
func (t *sharedDir) mayEvict(key format.Key) bool {
	var st unix.Stat_t
	p := key.Path()
	err := t.do("stat", func() error { return t.fs.Stat(p, &st) }, nil)
	if err != nil {
		if GoneErr(err) {
			t.idx.Remove(key)
		}
		return false
	}
	mtime := statMTime(&st)
	if time.Since(mtime) < t.keepRecent {
		if t.yieldRecent(key) {
			return true
		}
		t.idx.SetMTime(key, mtime)
		return false
	}
	t.sawOld()
	return true
}
