package fs

import (
	"path"
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

// charged is what a listing of n entries, its two dots among them, holds
// of its user's budget of listed names (vfs/user_budget.go): the dots cost
// nothing, as they are in every listing.
func charged(n int) int { return max(n-2, 0) }

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

// filesDirInos are the numbers of directory dir of files model model
// ("" its root, the model's directory) and of its parent.
func (s *fsState) filesDirInos(model, dir string) (self, parent uint64) {
	if dir == "" {
		return s.modelIno(model), rootIno
	}
	self = s.inos.Peek(ino.DirName(model, dir))
	if up := path.Dir(dir); up != "." {
		return self, s.inos.Peek(ino.DirName(model, up))
	}
	return self, s.modelIno(model)
}

// rootIno is the number of the mount's root.
const rootIno = control.RootIno
