package dir

import (
	"os"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
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
// the use other daemons see and evict by. A File's is opened and
// described first, and stamped through that descriptor: when the share
// holds another version than the index's (another host replaced it), it
// is left to the File's check (otherVersion), since, stamped, its mtime
// taken into the index would hide the new version; and a replacement
// landing after the open stamps the old file, unlinked, not the new one.
// (A stat then a utimes of the path let a replacement landing between
// the two take this host's stamp: the index then held the new version's
// mtime as its own, and the host served its old copies for good.)
func (t *sharedDir) touched(key format.Key) {
	info, _, ok := tier.IndexGet(t.idx, key)
	if !ok || time.Since(info.MTime) < t.touchEvery() {
		return
	}
	p := key.Path()
	now := time.Now()
	if !registry.Of(key).Replaces() {
		if err := t.do("utimes", func() error { return t.fs.Chtimes(p, now, now) }, nil); err == nil {
			t.idx.SetMTime(key, now)
		}
		return
	}
	var f *os.File
	if err := t.do("open", func() (err error) { f, err = t.fs.OpenRegular(p); return err }, nil); err != nil {
		return
	}
	defer f.Close()
	var st unix.Stat_t
	if err := t.do("stat", func() error { return unix.Fstat(int(f.Fd()), &st) }, nil); err != nil || t.otherVersion(key, &st) {
		return
	}
	// futimes takes microseconds: the index holds the mtime the file gets.
	now = now.Truncate(time.Microsecond)
	tv := unix.NsecToTimeval(now.UnixNano())
	if err := t.do("utimes", func() error { return unix.Futimes(int(f.Fd()), []unix.Timeval{tv, tv}) }, nil); err == nil {
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
		if t.otherVersion(key, &st) {
			return false
		}
		t.idx.SetMTime(key, mtime)
		return false
	}
	t.sawOld()
	return true
}

// otherVersion reports whether st, the share's file at key, is not the
// version the index holds, for a File (a name that takes new versions):
// its size or mtime is not the index's. Then it is checked at once
// (revalidateFile), which takes the new version and drops this host's
// copies of the old. The mtime of a block moves only with use; a File's
// may be another host's version of the same size, and taking its mtime
// into the index (as mayEvict does for a block) made every later check
// find the share's file as the index had it: the old copies were served
// for good.
func (t *sharedDir) otherVersion(key format.Key, st *unix.Stat_t) bool {
	if !registry.Of(key).Replaces() {
		return false
	}
	info, _, ok := tier.IndexGet(t.idx, key)
	if !ok || info.Size == st.Size && info.MTime.Equal(statMTime(st)) {
		return false
	}
	t.view.mu.Lock()
	delete(t.view.files, key) // due now
	t.view.mu.Unlock()
	t.revalidateFile(key)
	return true
}
