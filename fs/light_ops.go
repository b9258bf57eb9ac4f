package fs

import (
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The node requests lightFS passes to go-fuse's bridge (light.go;
// directory requests are in light_dir.go): a request on a light node goes
// to the node it is materialized as, everything else passes as is, so the
// bridge never sees a light node id.

// String names the file system.
func (w *lightFS) String() string { return w.b.String() }

// SetDebug passes the setting on.
func (w *lightFS) SetDebug(debug bool) { w.b.SetDebug(debug) }

// Init passes the server on (rawFS keeps it, for the pruner and the
// backing ids).
func (w *lightFS) Init(s *fuse.Server) { w.b.Init(s) }

// OnUnmount passes the unmount on.
func (w *lightFS) OnUnmount() { w.b.OnUnmount() }

// SetAttr goes to the node's go-fuse node.
func (w *lightFS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.SetAttr(cancel, in, out)
}

// Access goes to the node's go-fuse node.
func (w *lightFS) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Access(cancel, in)
}

// SetXAttr goes to the node's go-fuse node.
func (w *lightFS) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.SetXAttr(cancel, in, attr, data)
}

// RemoveXAttr goes to the node's go-fuse node.
func (w *lightFS) RemoveXAttr(cancel <-chan struct{}, in *fuse.InHeader, attr string) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.RemoveXAttr(cancel, in, attr)
}

// Open goes to the node's go-fuse node.
func (w *lightFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Open(cancel, in, out)
}

// Lseek goes to the node's go-fuse node.
func (w *lightFS) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Lseek(cancel, in, out)
}

// GetLk goes to the node's go-fuse node.
func (w *lightFS) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.GetLk(cancel, in, out)
}

// SetLk goes to the node's go-fuse node.
func (w *lightFS) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.SetLk(cancel, in)
}

// SetLkw goes to the node's go-fuse node.
func (w *lightFS) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.SetLkw(cancel, in)
}

// Ioctl goes to the node's go-fuse node.
func (w *lightFS) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Ioctl(cancel, in, inbuf, out, outbuf)
}

// Flush goes to the node's go-fuse node.
func (w *lightFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Flush(cancel, in)
}

// Fsync goes to the node's go-fuse node.
func (w *lightFS) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Fsync(cancel, in)
}

// Fallocate goes to the node's go-fuse node.
func (w *lightFS) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Fallocate(cancel, in)
}

// StatFs goes to the node's go-fuse node.
func (w *lightFS) StatFs(cancel <-chan struct{}, in *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.StatFs(cancel, in, out)
}

// Statx goes to the node's go-fuse node.
func (w *lightFS) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Statx(cancel, in, out)
}

// Link takes a directory (ENOTDIR on a light node) and a node that goes to
// its go-fuse node.
func (w *lightFS) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if notDir(in.NodeId) {
		return statusOf(errnoNotDir)
	}
	var st fuse.Status
	if in.Oldnodeid, st = w.real(in.Oldnodeid, in.Caller); !st.Ok() {
		return st
	}
	return w.b.Link(cancel, in, name, out)
}

// Readlink goes to the node's go-fuse node.
func (w *lightFS) Readlink(cancel <-chan struct{}, in *fuse.InHeader) ([]byte, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return nil, st
	}
	return w.b.Readlink(cancel, in)
}

// GetXAttr goes to the node's go-fuse node.
func (w *lightFS) GetXAttr(cancel <-chan struct{}, in *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.GetXAttr(cancel, in, attr, dest)
}

// ListXAttr goes to the node's go-fuse node.
func (w *lightFS) ListXAttr(cancel <-chan struct{}, in *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.ListXAttr(cancel, in, dest)
}

// Read goes to the node's go-fuse node.
func (w *lightFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return nil, st
	}
	return w.b.Read(cancel, in, buf)
}

// Release goes to the node's go-fuse node.
func (w *lightFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); st.Ok() {
		w.b.Release(cancel, in)
	}
}

// Write goes to the node's go-fuse node.
func (w *lightFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.Write(cancel, in, data)
}

// Writev goes to the node's go-fuse node.
func (w *lightFS) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.Writev(cancel, in, data)
}

// CopyFileRange goes to the go-fuse nodes of both files.
func (w *lightFS) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return 0, st
	}
	if in.NodeIdOut, st = w.real(in.NodeIdOut, in.Caller); !st.Ok() {
		return 0, st
	}
	return w.b.CopyFileRange(cancel, in)
}
