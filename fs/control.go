package fs

import (
	"context"
	"encoding/json"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ucmName is the control directory's name in the root.
const ucmName = ".ucm"

// ucmDir is <mnt>/.ucm/, the control directory. Its files are a static
// subtree built in OnAdd, with numbers from the reserved range.
type ucmDir struct {
	gofs.Inode
	dirCommon
}

var (
	_ = (gofs.NodeOnAdder)((*ucmDir)(nil))
	_ = (gofs.NodeGetattrer)((*ucmDir)(nil))
	_ = (gofs.NodeCreater)((*ucmDir)(nil))
	_ = (gofs.NodeUnlinker)((*ucmDir)(nil))
	_ = (gofs.NodeMkdirer)((*ucmDir)(nil))
	_ = (gofs.NodeRmdirer)((*ucmDir)(nil))
	_ = (gofs.NodeRenamer)((*ucmDir)(nil))
	_ = (gofs.NodeStatfser)((*ucmDir)(nil))
)

func newUCMDir(s *fsState) *ucmDir {
	return &ucmDir{dirCommon: dirCommon{common: common{s: s}, what: ucmName}}
}

// OnAdd adds the control files: stats, and every enabled session file
// (session.go).
func (d *ucmDir) OnAdd(ctx context.Context) {
	stats := &statsFile{common: common{s: d.s}}
	d.AddChild("stats", d.NewPersistentInode(ctx, stats, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: inoStats}), false)
	for i := range controlFiles {
		spec := &controlFiles[i]
		if spec.enabled != nil && !spec.enabled(d.s) {
			continue
		}
		f := &controlFile{common: common{s: d.s}, spec: spec}
		d.AddChild(spec.name, d.NewPersistentInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: spec.ino}), false)
	}
}

// Getattr describes the control directory.
func (d *ucmDir) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.s.dirAttr(&out.Attr, 2)
	out.SetTimeout(d.s.opts.EntryTTL)
	return 0
}

// Mkdir is refused in the control directory.
func (d *ucmDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, d.s.fail("mkdir", ucmName+"/"+name, errImmutable)
}

// Rmdir is refused in the control directory.
func (d *ucmDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	return d.s.fail("rmdir", ucmName+"/"+name, errImmutable)
}

// statsFile is .ucm/stats: a JSON snapshot of the stack's and the
// mount's counters (mountStats), taken at each open, read-only.
type statsFile struct {
	gofs.Inode
	common
}

var (
	_ = (gofs.NodeOpener)((*statsFile)(nil))
	_ = (gofs.NodeGetattrer)((*statsFile)(nil))
	_ = (gofs.NodeSetattrer)((*statsFile)(nil))
	_ = (gofs.NodeStatfser)((*statsFile)(nil))
)

// snapshot is the file's content now.
func (f *statsFile) snapshot() []byte {
	b, err := json.MarshalIndent(f.s.snapshotStats(), "", "  ")
	if err != nil {
		f.s.log.Error("stats: encoding", "err", err)
		return nil
	}
	return append(b, '\n')
}

// Getattr describes the file; its size is that of a snapshot taken now
// (never cached: the size changes).
func (f *statsFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	size := len(f.snapshot())
	if h, ok := fh.(*bytesHandle); ok {
		size = len(h.data)
	}
	f.s.fileAttr(&out.Attr, int64(size), time.Now(), 0o444)
	return 0
}

// Setattr is refused.
func (f *statsFile) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return f.s.fail("setattr", ucmName+"/stats", errImmutable)
}

// Open takes the snapshot this descriptor reads; writing is EACCES.
func (f *statsFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, f.s.fail("open", ucmName+"/stats", syscall.EACCES)
	}
	return &bytesHandle{data: f.snapshot()}, fuse.FOPEN_DIRECT_IO, 0
}

// bytesHandle reads a byte slice fixed at open.
type bytesHandle struct {
	data []byte
}

var (
	_ = (gofs.FileReader)((*bytesHandle)(nil))
	_ = (gofs.FileFlusher)((*bytesHandle)(nil))
)

// Read reads the snapshot at any offset.
func (h *bytesHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(h.data[off:min(int64(len(h.data)), off+int64(len(dest)))]), 0
}

// Flush has nothing to do (see readHandle.Flush for why it exists).
func (h *bytesHandle) Flush(ctx context.Context) syscall.Errno { return 0 }
