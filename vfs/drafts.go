package vfs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
)

// Files being written, as the adapter's nodes of them show them (its
// pending.Node, fs/pending/): which file a request is about, what its
// open starts, how it shows, and what its close answers. The rules (who
// publishes a file and when, staging names, renames) are the store's
// (store.Draft, store/writes.go).

// DraftOf is the file a request on the node of w is about when no
// descriptor names one: once w is done, the next version of it the
// process tgid writes, if any; else w.
func DraftOf(st *store.Store, w *store.Draft, tgid uint32) *store.Draft {
	if !w.Writable() && registry.Of(w.Key()).Replaces() {
		if n := st.Writes().Own(w.Key(), w.Name(), tgid); n != nil {
			return n
		}
	}
	return w
}

// OpenDraft opens a descriptor on w for p, truncating it with trunc.
// An open for writing (write) of a File of a files model published since
// is its next version, opened here (reopened; a loop of opens for
// appending meets this: the kernel looked the name up before the last
// close's release ended the file, and an ESTALE would meet the published
// file's own, rewrite, on the retry, and reach the caller). Otherwise a
// file published (or discarded) since is store.ErrDone: the adapter
// answers ESTALE, and the kernel looks the name up again.
func OpenDraft(st *store.Store, w *store.Draft, p store.Proc, trunc, write bool) (d *store.Writer, reopened bool, err error) {
	d, err = w.Open(trunc)
	key := w.Key()
	if errors.Is(err, store.ErrDone) && registry.Of(key).Replaces() && write && st.Tiers().Has(key) {
		_, d, err = st.Writes().Reopen(p, key)
		return d, true, err
	}
	return d, false, err
}

// DraftAttr is how the file w shows: as written so far, or, once
// published, as the published file.
func DraftAttr(st *store.Store, w *store.Draft) (size int64, mtime time.Time, published bool) {
	size, mtime, published = w.Attr()
	if key := w.Key(); published && registry.Of(key).Replaces() && errors.Is(w.Verdict(), store.ErrDiscarded) {
		// A File's version dropped (its writer wrote nothing, or unlinked
		// it): the name's published file, if any, is what the kernel must
		// take the size of, for the offset of an append on this node.
		if bi, err := st.Tiers().Stat(key); err == nil {
			return bi.Size, bi.MTime, true
		}
	}
	return size, mtime, published
}

// Verdict is the error a close or fsync answers of a publish's verdict
// err: none for a file published, present already or discarded.
func Verdict(err error) error {
	if errors.Is(err, store.ErrDiscarded) {
		return nil
	}
	return err
}

// Truncate publishes a new version of the published File key
// (store.Writes.Reopen) changed as sa asks (SetWriting: cut or grown to
// its size) at once, as a process p that opens, truncates and closes it
// would. An error comes with the operation to log it under.
func Truncate(ctx context.Context, st *store.Store, p store.Proc, key format.Key, sa SetAttr) (op string, err error) {
	w, d, err := st.Writes().Reopen(p, key)
	if err != nil {
		return "truncate", err
	}
	published, err := SetWriting(w, sa)
	if published {
		err = ErrPublished
	}
	if err != nil {
		d.Release(ctx)
		return "setattr", err
	}
	_, err = d.Close(ctx, p.Tgid)
	d.Release(ctx) // an empty version publishes here, at its last release
	if err == nil {
		err = w.Verdict()
	}
	return "truncate", Verdict(err)
}

// BeginWrite opens a descriptor on the file name (key; a staging name
// when m.Staging is set) that p writes, starting it if there is none
// (store.Writes.Begin). An id already published is a plain refusal:
// store.ErrExist with m.Excl (EEXIST), ErrReadOnly without (EACCES);
// after Stop every write is store.ErrStopped (EROFS).
func BeginWrite(st *store.Store, p store.Proc, key format.Key, name string, m store.OpenMode) (*store.Draft, *store.Writer, error) {
	w, d, err := st.Writes().Begin(p, key, name, m)
	if errors.Is(err, store.ErrExist) {
		if !m.Excl {
			err = fmt.Errorf("%w: published files are read-only", ErrReadOnly)
		}
		err = Plain(err)
	}
	return w, d, err
}
