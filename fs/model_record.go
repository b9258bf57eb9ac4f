package fs

import (
	"context"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/fs/ino"
)

// A model's directory on a directory tier holds its settings record
// (recordName, docs/format.md), which `cp -r <tier>/<model>/. <mnt>/<model>/`
// copies along with the blocks (docs/operations.md, "Moving blocks in and
// out"). The mount keeps its models' records itself, and a record a copy
// brings may name another host's owner, so a create of that name in a
// ucmb model's directory is taken and what is written to it dropped, as
// a mkdir of a shard that exists succeeds: the copy of the blocks goes
// on. The name is never listed nor found. (A files model refuses the
// name at its root, EINVAL, and a ucm-posix model keeps it as one of its
// private entries, as any name beginning with a dot.)

// recordName is the settings record's name in a tier's model directory
// (tiers.ModelMetaName).
const recordName = ".ucmfs-model.json"

// recordIno is the number of every dropped record's node.
const recordIno = uint64(ino.Pending)<<ino.Shift | ino.LowMask

// droppedRecord is the node of a record copied into a model: writes go
// nowhere.
type droppedRecord struct {
	gofs.Inode
	common
}

var (
	_ = (gofs.NodeGetattrer)((*droppedRecord)(nil))
	_ = (gofs.NodeSetattrer)((*droppedRecord)(nil))
	_ = (gofs.NodeWriter)((*droppedRecord)(nil))
)

// createRecord answers the create of recordName in model's directory.
func (m *modelNode) createRecord(ctx context.Context, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	m.s.log.Debug("a settings record copied into a model: dropped (the mount keeps its own)", "model", m.model)
	ch := m.NewInode(ctx, &droppedRecord{common: common{s: m.s}}, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: recordIno})
	m.s.fileAttr(&out.Attr, 0, time.Now(), 0o600)
	ttl(out, 0)
	return ch, nil, fuse.FOPEN_DIRECT_IO, 0
}

// Getattr describes an empty file.
func (r *droppedRecord) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r.s.fileAttr(&out.Attr, 0, time.Now(), 0o600)
	return 0
}

// Setattr changes nothing (cp's truncation, times or mode).
func (r *droppedRecord) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return r.Getattr(ctx, f, out)
}

// Write drops data.
func (r *droppedRecord) Write(ctx context.Context, f gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	return uint32(len(data)), 0
}
