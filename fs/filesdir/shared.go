package filesdir

import (
	"github.com/ucmfs/ucmfs/format"
)

// A directory of a files model that another host moved or removed on the
// shared tier (store/files_shared.go). The store finds it gone when it
// checks it there (at most once per TTL); the kernel of this host still
// holds what it learned before: the directory's entry, and the misses of
// its parent's other names, kept for the negative TTL. After another
// host's mv d1 d2, a listing of d1 answered as empty and a lookup of d2
// answered by the kernel's miss showed neither whole, for up to the
// negative TTL. So once the store finds a directory gone, the kernel's
// entries of its parent's subdirectories (those it holds, and those the
// parent has now: one listing of the parent, which takes the share's)
// are dropped, its misses too, before the request that found it is
// answered (ENOENT): the next lookup of d2 asks the daemon, which finds
// it on the share.

// goneFromShare drops the kernel's entries of the subdirectories of the
// parent of o's directory, which the store found gone. It waits for the
// kernel: the caller holds no lock of the parent (a READDIR of the
// directory itself); a LOOKUP in the parent calls it in a goroutine.
func (o Ops) goneFromShare() {
	name, parent := o.node.Parent()
	if parent == nil || o.dir == "" {
		return
	}
	pdir, _ := format.SplitFilePath(o.dir)
	names := map[string]bool{name: true}
	for _, d := range o.x.Store.FilesSubdirs(o.model, pdir) {
		names[d] = true
	}
	for n, ch := range parent.Children() {
		if _, ok := ch.Operations().(*Dir); ok {
			names[n] = true
		}
	}
	for n := range names {
		o.x.Host.NotifyGone(parent, n)
	}
}

// goneDir reports whether o's directory, which lists nothing, is gone
// from the shared tier (and drops the kernel's entries then:
// goneFromShare).
func (o Ops) goneDir() bool {
	if o.dir == "" || !o.x.Store.Tiers().HasShared() || o.x.Store.FilesDir(o.model, o.dir) {
		return false
	}
	o.goneFromShare()
	return true
}
