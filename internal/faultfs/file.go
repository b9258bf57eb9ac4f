package faultfs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// file is an open file of the mount: a loopback file handle whose data
// operations first pass through the FS rules. It deliberately does not
// implement fs.FilePassthroughFder: with passthrough the kernel would read
// and write the backing file itself and no fault could be injected.
type file struct {
	inner fs.FileHandle // a *fs.LoopbackFile
	n     *node         // the file's node, for its current path
}

var (
	_ = (fs.FileReader)((*file)(nil))
	_ = (fs.FileWriter)((*file)(nil))
	_ = (fs.FileAllocater)((*file)(nil))
	_ = (fs.FileFlusher)((*file)(nil))
	_ = (fs.FileFsyncer)((*file)(nil))
	_ = (fs.FileReleaser)((*file)(nil))
	_ = (fs.FileGetattrer)((*file)(nil))
	_ = (fs.FileStatxer)((*file)(nil))
	_ = (fs.FileSetattrer)((*file)(nil))
	_ = (fs.FileLseeker)((*file)(nil))
)

func (f *file) check(ctx context.Context, op Op) syscall.Errno {
	return f.n.fsys.check(ctx, op, f.n.relPath())
}

// Read reads file data (OpRead).
func (f *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if e := f.check(ctx, OpRead); e != 0 {
		return nil, e
	}
	return f.inner.(fs.FileReader).Read(ctx, dest, off)
}

// Write writes file data (OpWrite).
func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if e := f.check(ctx, OpWrite); e != 0 {
		return 0, e
	}
	return f.inner.(fs.FileWriter).Write(ctx, data, off)
}

// Allocate reserves or punches space (OpAllocate).
func (f *file) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	if e := f.check(ctx, OpAllocate); e != 0 {
		return e
	}
	return f.inner.(fs.FileAllocater).Allocate(ctx, off, size, mode)
}

// Flush is called on every close(2) of a descriptor (OpFlush).
func (f *file) Flush(ctx context.Context) syscall.Errno {
	if e := f.check(ctx, OpFlush); e != 0 {
		return e
	}
	return f.inner.(fs.FileFlusher).Flush(ctx)
}

// Fsync makes the file durable (OpFsync).
func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if e := f.check(ctx, OpFsync); e != 0 {
		return e
	}
	return f.inner.(fs.FileFsyncer).Fsync(ctx, flags)
}

// Release closes the backing descriptor after the last close. It is never
// failed: the kernel ignores its result.
func (f *file) Release(ctx context.Context) syscall.Errno {
	return f.inner.(fs.FileReleaser).Release(ctx)
}

// Getattr is reached through the node's Getattr, which applies the rules.
func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.inner.(fs.FileGetattrer).Getattr(ctx, out)
}

// Statx is reached through the node's Statx, which applies the rules.
func (f *file) Statx(ctx context.Context, flags uint32, mask uint32, out *fuse.StatxOut) syscall.Errno {
	return f.inner.(fs.FileStatxer).Statx(ctx, flags, mask, out)
}

// Setattr is reached through the node's Setattr, which applies the rules.
func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return f.inner.(fs.FileSetattrer).Setattr(ctx, in, out)
}

// Lseek answers SEEK_DATA and SEEK_HOLE.
func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.inner.(fs.FileLseeker).Lseek(ctx, off, whence)
}

// dir is an open directory of the mount: the loopback directory stream with
// its entries and fsync passed through the FS rules.
type dir struct {
	inner fs.FileHandle
	n     *node
}

var (
	_ = (fs.FileReaddirenter)((*dir)(nil))
	_ = (fs.FileSeekdirer)((*dir)(nil))
	_ = (fs.FileReleasedirer)((*dir)(nil))
	_ = (fs.FileFsyncdirer)((*dir)(nil))
)

// Readdirent returns the next directory entry (OpReaddir).
func (d *dir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if e := d.n.fsys.check(ctx, OpReaddir, d.n.relPath()); e != 0 {
		return nil, e
	}
	return d.inner.(fs.FileReaddirenter).Readdirent(ctx)
}

// Seekdir rewinds or repositions the stream.
func (d *dir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if sd, ok := d.inner.(fs.FileSeekdirer); ok {
		return sd.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

// Releasedir closes the backing directory.
func (d *dir) Releasedir(ctx context.Context, flags uint32) {
	if rd, ok := d.inner.(fs.FileReleasedirer); ok {
		rd.Releasedir(ctx, flags)
	}
}

// Fsyncdir makes the directory's entries durable (OpFsync).
func (d *dir) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if e := d.n.fsys.check(ctx, OpFsync, d.n.relPath()); e != 0 {
		return e
	}
	if fd, ok := d.inner.(fs.FileFsyncdirer); ok {
		return fd.Fsyncdir(ctx, flags)
	}
	return syscall.ENOTSUP
}
