package fs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/fs/ino"
)

// Every directory lists "." and ".." first, as ls -a, find and readdir
// users expect: the kernel makes neither for a FUSE filesystem, and
// go-fuse leaves them to it. A READDIRPLUS answer carries no lookup of
// them (go-fuse and the light layer skip it; the kernel ignores their
// entries).

// dots are the "." and ".." entries of a directory numbered self whose
// parent is numbered parent.
func dots(self, parent uint64) []fuse.DirEntry {
	return []fuse.DirEntry{
		{Name: ".", Mode: syscall.S_IFDIR, Ino: self},
		{Name: "..", Mode: syscall.S_IFDIR, Ino: parent},
	}
}

// modelIno is the number of model's directory (0 while no node has one).
func (s *fsState) modelIno(model string) uint64 { return s.inos.Peek(ino.ModelName(model)) }

// rootIno is the number of the mount's root.
const rootIno = control.RootIno
