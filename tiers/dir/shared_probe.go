package dir

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/tiers/tier"
)

// What a shared tier's filesystem lacks, found by trying it once when the
// tier starts (in the background scan), each with one log line that says
// what ucmfs does instead. Distributed filesystems differ here: CephFS's
// and GlusterFS's FUSE clients refuse renameat2's RENAME_NOREPLACE
// (EINVAL), and some NAS exports keep no user xattrs.
//
//   - RENAME_NOREPLACE: publishing falls back to link + unlink, or to a
//     stat then a rename (publish.go); the probe only says so ahead of the
//     first publish.
//   - user xattrs: CRCs go to sum files (sums.go).
//   - a directory's mtime that moves when an entry is added: without it an
//     unchanged mtime proves nothing, and every check of a shard lists it
//     (sharedView.noDirMTime).
//
// Close-to-open coherence between hosts (a file renamed in on one host
// opens whole on another) cannot be seen from one host: docs/operations.md
// names the mount options each filesystem needs for it.

// probeDirName is the probe's scratch directory at the tier's root.
const probeDirName = ".ucmfs-probe"

// probeShared tries what the sharing relies on and logs what is missing.
func (t *sharedDir) probeShared() {
	dir := probeDirName + "-" + tier.RandomSuffix()
	if err := t.fs.Mkdir(dir, 0o700); err != nil {
		return // the tier fails: its health says so
	}
	defer t.fs.RemoveAll(dir)
	lacks := func(what, instead string, err error) {
		t.log.Warn("shared tier: the filesystem lacks "+what, "kind", t.kind, "dir", t.root, "instead", instead, "err", err)
	}
	// The rename is to a free name: a client that refuses the flag says
	// so there too, while an EEXIST onto a name this client made may come
	// from its own dentry cache (CephFS, GlusterFS), not the filesystem.
	a, b := dir+"/a", dir+"/b"
	if t.fs.WriteFile(a, []byte("a"), 0o600) == nil {
		if err := t.fs.RenameOnce(a, b, unix.RENAME_NOREPLACE); err != nil {
			lacks("RENAME_NOREPLACE", "publish by link + unlink, or by a stat then a rename", err)
		} else {
			a = b // the xattr is tried on the file where it is now
		}
	}
	if f, err := t.fs.OpenFile(a, unix.O_RDWR, 0); err == nil {
		if err := unix.Fsetxattr(int(f.Fd()), "user.ucm.probe", []byte("1"), 0); err != nil {
			lacks("user xattrs", "CRCs kept in sum files under "+sumsDirName, err)
		}
		f.Close()
	}
	sub := dir + "/d"
	past := time.Now().Add(-time.Hour)
	var before, after unix.Stat_t
	if t.fs.Mkdir(sub, 0o700) != nil || t.fs.Chtimes(sub, past, past) != nil || t.fs.Stat(sub, &before) != nil ||
		t.fs.WriteFile(sub+"/f", nil, 0o600) != nil || t.fs.Stat(sub, &after) != nil {
		return
	}
	if after.Mtim == before.Mtim {
		t.view.mu.Lock()
		t.view.noDirMTime = true
		t.view.mu.Unlock()
		lacks("a directory mtime that moves when a file is added", "every check of a shard lists it", nil)
	}
}
