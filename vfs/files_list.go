package vfs

import (
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// The listings of a files model's directories: what they hold. The
// adapter (fs/filesdir/list.go) numbers the entries, caches the listings in
// the kernel and serves them.

// FilesListing is what a directory of a files model lists, before the
// adapter adds its dots and numbers the entries.
type FilesListing struct {
	Subdirs []string       // the subdirectories' names
	Files   []format.Key   // the published files
	Writing []*store.Draft // the files being written the caller sees
}

// ListFilesDir lists directory dir of files model model: its
// subdirectories, its published files and, unless published is set, the caller's staging files and the files
// its process writes under names not published (which its lookups find:
// a file created and closed empty, published at its release, which comes
// after close returns, is listed right after the close too), for a
// caller of process tgid and user uid; a tmpfile (no name yet) is left
// out.
func ListFilesDir(st *store.Store, model, dir string, tgid, uid uint32, published bool) FilesListing {
	var own []*store.Draft
	if !published {
		// Before the published files: one that publishes meanwhile is in
		// one list or the other.
		own = st.Writes().Owned(model, dir, tgid)
	}
	subdirs, files := st.FilesList(model, dir)
	l := FilesListing{Subdirs: subdirs, Files: files}
	if published {
		return l
	}
	pending := st.Writes().StagingIn(model, dir, uid)
	if len(own) > 0 {
		// Those not listed already (a new version of a published file
		// is), not discarded and not refused: a set of the few own
		// names, not of the directory's.
		unlisted := make(map[string]*store.Draft, len(own))
		for _, w := range own {
			if w.Verdict() == nil {
				unlisted[w.Name()] = w
			}
		}
		for _, k := range files {
			if len(unlisted) == 0 {
				break
			}
			delete(unlisted, k.FileName())
		}
		for _, w := range unlisted {
			pending = append(pending, w)
		}
	}
	for _, w := range pending {
		if IsTmpfileName(w.Name()) {
			continue // an O_TMPFILE file has no name yet
		}
		l.Writing = append(l.Writing, w)
	}
	return l
}

// ModelShards is how many shard directories a ucmb or ucm-posix model
// has: 256, or a ucm-posix model's of each width it uses (16^width, the
// one "data" directory for width 0).
func ModelShards(st *store.Store, model string) int {
	return st.Models().Shards(model)
}
