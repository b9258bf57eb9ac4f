package dir

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// layoutWalk walks a tier directory in the layout
// <root>/<model>/<hh>/<id>.bin|.repr (docs/spec.md §2). Its rules are
// shared by the index rebuild at start (Tier.rebuild) and by Fsck:
//
//   - At the root, directories whose name starts with '.' (.quarantine,
//     private temporary directories of a tier) are not entered; the tier's
//     lock file and lost+found are ignored; other '.' names are leftovers;
//     anything else must be a directory with a valid model name.
//   - A model directory holding TreeMarkName is a tree of Files of the
//     files layout (layout_tree.go): every regular file in it, at any
//     depth, is a File; the rules below are for the other models.
//   - In a model directory, the settings record (ModelMetaName) is
//     skipped; other '.' names are leftovers; anything else must be a
//     shard directory: 00..ff, or a raw shard of the ucm-posix layout
//     (data, or 1..4 hex characters).
//   - In a shard directory, '.' names and staging names (<name>.tmp:
//     what UCM's PosixStore leaves when it dies mid-write) are leftovers
//     (interrupted writes leave .tmp-* files); anything else must be a
//     regular file named <id>.bin or <id>.repr whose id belongs to the
//     shard, or in a raw shard <id> alone (a raw block of the shard's
//     width).
//
// Relative paths given to the callbacks are slash-separated, from root.
// Every directory is listed beneath root (package rootfs): a link is
// never followed; at the root or in a model directory it is left out of
// the listing (and reported to root's OnLink), in a shard or tree
// directory it is an entry outside the layout.
type layoutWalk struct {
	root    rootfs.FS
	workers int // shard directories handled at once; 1: in order, on the caller's goroutine
	// readDir lists the root (".") or a model directory; listShard lists
	// and classifies a shard directory (Tier wraps both in its
	// timeout). Both take paths beneath root.
	readDir   func(rel string) ([]rootfs.Entry, error)
	listShard func(rel string) ([]shardEntry, error)
	// bad and leftover report the entries of the root and of model
	// directories; a shard's entries go to shard, with their class.
	bad      func(rel string, why error)
	leftover func(rel string)
	shard    func(model, hh string, ents []shardEntry)
	// dirError reports a model or shard directory that could not be
	// listed; returning true stops the walk with that error.
	dirError func(rel string, err error) bool
}

// shardJob is a shard directory to list: <model>/<hh>.
type shardJob struct{ model, hh string }

// shardEntry is one name in a shard directory, classified.
type shardEntry struct {
	name  string
	class entryClass
	why   error // for badEntry: the rule broken
	id    format.ID
	kind  format.Kind
	size  int64
	mtime unix.Timespec
}

// entryClass is what a name in a shard directory is.
type entryClass uint8

const (
	fileEntry     entryClass = iota // a block or sidecar file
	leftoverEntry                   // a '.' name: what an interrupted write left
	badEntry                        // outside the layout
)

// run walks the tree. Its error is the root's listing error, or the one
// dirError chose to stop at.
func (w *layoutWalk) run() error {
	ents, err := w.readDir(".")
	if err != nil {
		return err
	}
	var stop atomic.Pointer[error]
	halt := func(rel string, err error) {
		if w.dirError(rel, err) {
			stop.CompareAndSwap(nil, &err)
		}
	}
	jobs := make(chan shardJob)
	var wg sync.WaitGroup
	doShard := func(j shardJob) {
		rel := j.model + "/" + j.hh
		list, err := w.listShard(rel)
		if err != nil {
			halt(rel, err)
			return
		}
		w.shard(j.model, j.hh, list)
	}
	for range max(w.workers, 1) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if stop.Load() == nil {
					doShard(j)
				}
			}
		}()
	}
	send := func(j shardJob) {
		if w.workers > 1 {
			jobs <- j
		} else {
			doShard(j)
		}
	}
	for _, e := range ents {
		if stop.Load() != nil {
			break
		}
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".") && e.IsDir():
		case name == tier.LockFileName, name == SnapshotFileName, name == OwnerFileName:
		case strings.HasPrefix(name, "."):
			w.leftover(name)
		case name == "lost+found" && e.IsDir():
		case !e.IsDir():
			w.bad(name, fmt.Errorf("%w: %q is not a model directory", format.ErrName, name))
		default:
			if err := format.ValidateModel(name); err != nil {
				w.bad(name, err)
				continue
			}
			w.walkModel(name, send, halt)
		}
	}
	close(jobs)
	wg.Wait()
	if p := stop.Load(); p != nil {
		return *p
	}
	return nil
}

// walkModel classifies the entries of one model directory and sends its
// shard directories on.
func (w *layoutWalk) walkModel(model string, send func(shardJob), halt func(string, error)) {
	if tier.IsTree(w.root, model) {
		w.walkTree(model, halt)
		return
	}
	ents, err := w.readDir(model)
	if err != nil {
		halt(model, err)
		return
	}
	for _, e := range ents {
		rel := model + "/" + e.Name()
		_, isShard := format.ParseShard(e.Name())
		_, isRaw := format.ParseRawShard(e.Name())
		switch {
		case e.Name() == tier.ModelMetaName && e.Type().IsRegular():
			// the model's settings record (model_meta.go)
		case strings.HasPrefix(e.Name(), "."):
			w.leftover(rel)
		case !e.IsDir() || !isShard && !isRaw:
			w.bad(rel, fmt.Errorf("%w: %q is not a shard directory (00..ff, data, 1..4 hex characters)", format.ErrName, e.Name()))
		default:
			send(shardJob{model, e.Name()})
		}
	}
}

// listShard lists the shard directory rel beneath r (its base name is
// the shard) with one stat per entry, relative to the directory's
// descriptor, and classifies every name, in name order. A name gone
// meanwhile is left out; a link is outside the layout.
func listShard(r rootfs.FS, rel string) ([]shardEntry, error) {
	list, err := r.ReadDirStat(rel)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b rootfs.Stat) int { return strings.Compare(a.Name, b.Name) })
	hh := path.Base(rel)
	out := make([]shardEntry, 0, len(list))
	for i := range list {
		name, st := list[i].Name, &list[i].Stat_t
		e := shardEntry{name: name, size: st.Size, mtime: st.Mtim}
		switch {
		case strings.HasPrefix(name, "."):
			e.class = leftoverEntry
		case strings.HasSuffix(name, format.StagingSuffix) && isStaging(hh, name):
			e.class = leftoverEntry
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			e.class, e.why = badEntry, fmt.Errorf("%w: %s is not a regular file", format.ErrName, name)
		default:
			e.id, e.kind, e.why = format.ParseFileName(hh, name)
			if e.why != nil {
				e.class = badEntry
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// isStaging reports whether name is a staging name of shard hh.
func isStaging(hh, name string) bool {
	_, ok := format.ParseStagingName(hh, name)
	return ok
}
