package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ucmfs/ucmfs/format"
)

// The operations of the store soak, each as the FUSE adapter (package
// fs) calls the store for it: a create, writes and close of a file under
// its final name or a staging name then renamed, an fsync before the
// close; a rename of a published file, of a directory; an unlink.

// soakProc is the process the soak writes as: one thread group per
// write, as two engines are.
func (sr *storeSoak) soakProc() Proc {
	sr.tgid++
	return Proc{Tgid: sr.tgid}
}

// write publishes data as n's next version through Writes: a create
// under the final name, or under a staging name renamed to it (a block's
// <final>.tmp; a File's <final>_<n>.tmp, the tmp + rename of an engine),
// written in up to three pieces, fsynced when durable, closed and
// released. It returns how it wrote and the verdict.
func (sr *storeSoak) write(n *soakName, data []byte, durable bool) (string, error) {
	ctx := context.Background()
	p := sr.soakProc()
	key, name, staging := n.key, n.key.FileName(), sr.r.IntN(2) == 0
	how := "final name"
	if staging {
		how = "tmp+rename"
		name += ".tmp"
		if n.key.Kind == format.File {
			name = fmt.Sprintf("%s_%d.tmp", n.key.FileName(), p.Tgid)
			dir, _ := format.SplitFilePath(n.key.Name)
			key = format.FileKey(n.key.Model, format.JoinFilePath(dir, name))
			if !sr.s.Models().Staging(key.Model, dir, name) {
				sr.fail("%s is not a staging name", name)
			}
		}
	}
	w, d, err := sr.s.Writes().Begin(p, key, name, OpenMode{Staging: staging, Trunc: true})
	if err != nil {
		return how, err
	}
	var werr error
	for off, rest := 0, len(data); rest > 0 && werr == nil; {
		piece := min(rest, 1+sr.r.IntN(len(data)))
		_, werr = d.WriteAt(data[off:off+piece], int64(off))
		off, rest = off+piece, rest-piece
	}
	if werr == nil && durable {
		_, werr = d.Sync(ctx, false)
	}
	_, verdict := d.Close(ctx, p.Tgid)
	d.Release(ctx)
	if werr != nil {
		w.Discard()
		return how, werr
	}
	if staging {
		if n.key.Kind == format.File {
			verdict = w.RenameTo(ctx, n.key)
		} else {
			verdict = w.Rename(ctx)
		}
		if verdict == nil {
			verdict = w.Verdict()
		}
	}
	if verdict != nil {
		w.Discard() // a staging file its rename refused: unlinked
	}
	return how, verdict
}

// unlink removes n's published file as the adapter's unlink does
// (vfs.RemovePublished): after the GPU loads of it, from every tier.
func (sr *storeSoak) unlink(n *soakName) error {
	done := sr.s.Removal(n.key)
	err := sr.s.Tiers().Delete(n.key)
	done()
	if err == nil {
		sr.s.ForgetHits(n.key, false)
		sr.s.Models().ForgetUsage(n.key.Model)
	}
	return err
}

// read reads n through the stack as the adapter does (Tiers().Open):
// its version, -1 for none, or an error that is not ErrNotFound.
func (sr *storeSoak) read(n *soakName) (int, error) {
	h, err := sr.s.Tiers().Open(n.key)
	if errors.Is(err, ErrNotFound) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	defer h.File.Close()
	b, err := io.ReadAll(io.NewSectionReader(h.File, 0, h.Size))
	if err != nil {
		return 0, err
	}
	return sr.book.which(b), nil
}

// name is the soak's name for key (nil: none).
func (sr *storeSoak) name(key format.Key) *soakName {
	for _, n := range sr.names {
		if n.key == key {
			return n
		}
	}
	return nil
}

// moveFile renames a published File to another name of the model
// (Writes.Move), and holds the model to it.
func (sr *storeSoak) moveFile(from *soakName) {
	to := sr.names[sr.r.IntN(len(sr.names))]
	if to.key.Kind != format.File || to == from {
		return
	}
	done := sr.s.Removal(from.key)
	err := sr.s.Writes().Move(context.Background(), from.key, to.key)
	done()
	sr.logf("move %s to %s: %v", from.key, to.key, err)
	switch {
	case err == nil:
		from.movedTo(to, &sr.book)
	case errors.Is(err, ErrNotFound) && from.reads(-1):
		from.now = []int{-1}
	default:
		sr.mayMove(from, to)
	}
	from.changes++
	to.changes++
}

// moveDir renames a directory of the files model to one that is not
// there (MoveFilesDir), and holds the model to it: each file under it
// moves to the same name under the new one.
func (sr *storeSoak) moveDir() {
	from, to := soakDirs[sr.r.IntN(len(soakDirs))], soakDirs[sr.r.IntN(len(soakDirs))]
	if from == to || !sr.s.FilesDir(soakFiles, from) || sr.s.FilesDir(soakFiles, to) {
		return
	}
	err := sr.s.MoveFilesDir(context.Background(), soakFiles, from, soakFiles, to, 0)
	sr.logf("move directory %s to %s: %v", from, to, err)
	for _, n := range sr.names {
		rel, ok := strings.CutPrefix(n.key.Name, from+"/")
		if !ok || n.key.Model != soakFiles {
			continue
		}
		target := sr.name(format.FileKey(soakFiles, to+"/"+rel))
		switch {
		case err == nil && n.reads(-1) && len(n.now) == 1:
			target.removed()
		case err == nil:
			n.movedTo(target, &sr.book)
		default:
			sr.mayMove(n, target)
		}
		n.changes++
		target.changes++
	}
}

// mayMove holds the model to a move of from to to that failed, and
// keeps the move of a durable file for the next power cut's check.
func (sr *storeSoak) mayMove(from, to *soakName) {
	if m := from.mayMove(to); m != nil {
		sr.moves = append(sr.moves, m)
	}
}
