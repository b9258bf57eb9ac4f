package light

import (
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The node requests Layer passes to go-fuse's bridge (layer.go;
// directory requests are in dir.go): a request on a light node goes
// to the node it is materialized as, everything else passes as is, so the
// bridge never sees a light node id.

// String names the file system.
func (w *Layer) String() string { return w.b.String() }

// SetDebug passes the setting on.
func (w *Layer) SetDebug(debug bool) { w.b.SetDebug(debug) }

// Init passes the server on (rawFS keeps it, for the Pruner and the
// backing ids).
func (w *Layer) Init(s *fuse.Server) { w.b.Init(s) }

// OnUnmount passes the unmount on.
func (w *Layer) OnUnmount() { w.b.OnUnmount() }

// SetAttr goes to the node's go-fuse node.
func (w *Layer) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.SetAttr(cancel, in, out)
}

// Access goes to the node's go-fuse node.
func (w *Layer) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Access(cancel, in)
}

// SetXAttr goes to the node's go-fuse node.
func (w *Layer) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.SetXAttr(cancel, in, attr, data)
}

// RemoveXAttr goes to the node's go-fuse node.
func (w *Layer) RemoveXAttr(cancel <-chan struct{}, in *fuse.InHeader, attr string) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.RemoveXAttr(cancel, in, attr)
}

// Open goes to the node's go-fuse node.
func (w *Layer) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Open(cancel, in, out)
}

// Lseek goes to the node's go-fuse node.
func (w *Layer) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Lseek(cancel, in, out)
}

// GetLk goes to the node's go-fuse node.
func (w *Layer) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.GetLk(cancel, in, out)
}

// SetLk goes to the node's go-fuse node; a flock there that no open file
// of the node keeps goes to the host (Host.Flock).
func (w *Layer) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	if st = w.b.SetLk(cancel, in); st == fuse.ENOTSUP && in.LkFlags&fuse.FUSE_LK_FLOCK != 0 {
		return w.host.Flock(cancel, in.Caller, in.NodeId, in.Owner, in.Lk.Typ, false)
	}
	return st
}

// SetLkw is SetLk, waiting for the lock.
func (w *Layer) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	if st = w.b.SetLkw(cancel, in); st == fuse.ENOTSUP && in.LkFlags&fuse.FUSE_LK_FLOCK != 0 {
		return w.host.Flock(cancel, in.Caller, in.NodeId, in.Owner, in.Lk.Typ, true)
	}
	return st
}

// Ioctl goes to the node's go-fuse node.
func (w *Layer) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Ioctl(cancel, in, inbuf, out, outbuf)
}

// Flush goes to the node's go-fuse node.
func (w *Layer) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Flush(cancel, in)
}

// Fsync goes to the node's go-fuse node.
func (w *Layer) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Fsync(cancel, in)
}

// Fallocate goes to the node's go-fuse node.
func (w *Layer) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Fallocate(cancel, in)
}

// StatFs goes to the node's go-fuse node.
func (w *Layer) StatFs(cancel <-chan struct{}, in *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.StatFs(cancel, in, out)
}

// Statx goes to the node's go-fuse node.
func (w *Layer) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Statx(cancel, in, out)
}

// Link takes a directory (ENOTDIR on a light node) and a node that goes to
// its go-fuse node.
func (w *Layer) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	var st fuse.Status
	if in.Oldnodeid, st = w.real(in.Oldnodeid, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Link(cancel, in, name, out)
}

// Readlink goes to the node's go-fuse node.
func (w *Layer) Readlink(cancel <-chan struct{}, in *fuse.InHeader) ([]byte, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return nil, st
	}
	return w.b.Readlink(cancel, in)
}

// GetXAttr goes to the node's go-fuse node.
func (w *Layer) GetXAttr(cancel <-chan struct{}, in *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.GetXAttr(cancel, in, attr, dest)
}

// ListXAttr goes to the node's go-fuse node.
func (w *Layer) ListXAttr(cancel <-chan struct{}, in *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.ListXAttr(cancel, in, dest)
}

// Read goes to the node's go-fuse node.
func (w *Layer) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return nil, st
	}
	return w.b.Read(cancel, in, buf)
}

// Release goes to the node's go-fuse node, after the flock locks of the
// open file go (the kernel unlocks them so, not by a request of their
// own).
func (w *Layer) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if in.ReleaseFlags&fuse.FUSE_RELEASE_FLOCK_UNLOCK != 0 {
		w.host.FlockRelease(in.LockOwner)
	}
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); st.Ok() {
		w.b.Release(cancel, in)
	}
}

// Write goes to the node's go-fuse node.
func (w *Layer) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.Write(cancel, in, data)
}

// Writev goes to the node's go-fuse node.
func (w *Layer) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.Writev(cancel, in, data)
}

// CopyFileRange goes to the go-fuse nodes of both files.
func (w *Layer) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	if in.NodeIdOut, st = w.real(in.NodeIdOut, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.CopyFileRange(cancel, in)
}
