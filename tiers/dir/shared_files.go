package dir

import (
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// The Files of a tree (a files model) on a shared tier have no shard
// directory whose mtime says whether any of them changed: each is checked
// on its own, at most once per TTL when it is asked, by one stat.
//
//   - A File the index holds and the share no longer has (another host
//     removed it) is dropped from the index, and the stack told
//     (dropGone), as a block of a listed shard is.
//   - A File whose size or mtime is not the index's was replaced by
//     another host (tmp + rename): the index's entry and the host's
//     copies of the old version go the same way, and the new version is
//     adopted. The last publish on any host wins on every host within the
//     TTL.
//
// Before, a File once in the index stayed there: another host's removals
// and replacements never reached this one (a removed file read 65 s later).

// fileChecksMax bounds the map of when each File was last checked: past
// it the map starts again (a File is then checked once more).
const fileChecksMax = 1 << 16

// revalidateFile checks the File key against the share at most once per
// TTL.
func (t *sharedDir) revalidateFile(key format.Key) {
	v := &t.view
	now := time.Now()
	v.mu.Lock()
	at, ok := v.files[key]
	if ok && now.Sub(at) < v.ttl {
		v.mu.Unlock()
		return
	}
	if v.files == nil || len(v.files) >= fileChecksMax {
		v.files = make(map[format.Key]time.Time)
	}
	v.files[key] = now
	v.mu.Unlock()
	info, known, _ := tier.IndexGet(t.idx, key)
	if !known {
		return // looked up on disk when asked (sharedGet)
	}
	v.flights.Do("\x00file\x00"+key.Path(), func() (any, error) {
		var st unix.Stat_t
		p := key.Path()
		err := t.do("stat", func() error { return t.fs.Stat(p, &st) }, nil)
		switch {
		case err != nil && !GoneErr(err):
			return nil, nil // the directory fails: keep what we know
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG &&
			st.Size == info.Size && statMTime(&st).Equal(info.MTime):
			return nil, nil // unchanged
		}
		if _, ok := t.idx.Remove(key); !ok {
			return nil, nil
		}
		if err != nil {
			if v.gone != nil {
				v.gone([]format.Key{key})
			}
			return nil, nil
		}
		_, _ = t.lookup(key) // the new version
		if v.replaced != nil {
			v.replaced([]format.Key{key})
		}
		return nil, nil
	})
}
