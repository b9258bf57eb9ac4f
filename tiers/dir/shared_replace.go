package dir

import (
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// Two hosts publish one name of a files model (tmp + rename, as vLLM's,
// llm-d's, SGLang's and UCM's stores do) at about the same time. Each
// writes its version back to the share; the second finds a file at the
// name that its tier never indexed (the first host's version), and its
// commit, which never replaces a file it does not know, failed with
// ErrExist. The write-back took that for "on the share already": the
// second host kept serving its own version (and copied it to its nvme as
// a cache of the share), the first host its own, and they disagreed for
// good. A File is a name that takes new versions, so the last version to
// reach the share replaces the one there: the tier supersedes the other
// host's file (supersedeForeign) and the commit renames over it. The
// first host then finds the share's file changed (revalidateFile) and
// takes the new version. (Blocks are named by their contents: one found
// under its name is the same block, and ErrExist stays right for them.)

// SupersedeForeign marks the file at key's name, which the tier holds on
// disk without indexing it (another host's version), superseded, unless
// it is newer than ours (this host's version, published at ours): the
// next commit of key here renames over it, and a commit that fails brings
// it back as the published version. It reports whether it did, and
// whether the file there is newer: then this host's version is stale (a
// version it was still writing back when another host published the
// next) and goes (staleVersion).
func (t *Tier) SupersedeForeign(key format.Key, ours time.Time) (superseded, newer bool) {
	var st unix.Stat_t
	p := key.Path()
	if err := t.do("stat", func() error { return t.fs.Stat(p, &st) }, nil); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, false
	}
	there := statMTime(&st)
	if there.After(ours) {
		return false, true
	}
	sp := &t.sup
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if _, ok := sp.m[key]; ok {
		return true, false
	}
	if sp.m == nil {
		sp.m = make(map[format.Key]*index.Entry)
	}
	t.idx.Remove(key) // adopted meanwhile by a lookup: superseded now
	sp.m[key] = tier.NewEntry(tier.Info{Key: key, Size: st.Size, MTime: there})
	return true, false
}
