package memfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// Disk is a tree of directories and files in memory, the filesystems
// opened on it its views. It is safe for concurrent use.
type Disk struct {
	dir      string // the root's path, for messages (the tiers' Dir)
	capacity int64
	umask    uint32 // the process's, read at New
	dev      uint64 // st_dev of a memfd: the directories' too

	closed  atomic.Bool  // Close was called: every view's operations fail
	mu      sync.RWMutex // every operation holds it: a tree walk and what it does are one step
	root    *node        // nil until an Open makes it
	files   map[*node]struct{}
	nextIno uint64 // directories' inode numbers, above any of tmpfs's (32-bit)
}

// node is a directory or a file of the tree.
type node struct {
	// A file: its memfd and how many names it has.
	f     *os.File
	links int

	// A directory: its entries, its parent (itself for the root), how
	// many of its entries are directories, and its inode's attributes.
	kids                map[string]*node
	parent              *node
	subdirs             int
	ino                 uint64
	mode, uid, gid      uint32
	atime, mtime, ctime unix.Timespec
}

func (n *node) isDir() bool { return n.kids != nil }

// fd is a file's memfd.
func (n *node) fd() int { return int(n.f.Fd()) }

// New makes a Disk for the tier directory dir (a path the Disk answers
// to, never made on any disk), reporting capacity bytes to Statfs.
func New(dir string, capacity int64) (*Disk, error) {
	fd, err := unix.MemfdCreate("memfs", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfs: memfd_create: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("memfs: fstat of a memfd: %w", err)
	}
	return &Disk{dir: filepath.Clean(dir), capacity: capacity, umask: umask(), dev: st.Dev,
		files: map[*node]struct{}{}, nextIno: 1 << 32}, nil
}

// umask is the process's umask (/proc/self/status), 022 when unknown.
func umask() uint32 {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range bytes.Lines(b) {
		if v, ok := strings.CutPrefix(string(line), "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(m)
			}
		}
	}
	return 0o022
}

// Dir is the disk's directory.
func (d *Disk) Dir() string { return d.dir }

// Open opens a filesystem on the disk, rooted at dir (which must be the
// disk's directory), making its root with perm at the first open (perm
// 0 then: ENOENT, as for a missing directory): the signature of
// tiers.DirConfig.OpenFS.
func (d *Disk) Open(dir string, perm uint32) (rootfs.FS, error) {
	if filepath.Clean(dir) != d.dir {
		return nil, fmt.Errorf("memfs: %s is not the disk's directory %s", dir, d.dir)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.root == nil {
		if perm == 0 {
			return nil, &os.PathError{Op: "open", Path: dir, Err: unix.ENOENT}
		}
		d.root = d.newDir(perm)
		d.root.parent = d.root
	}
	return &FS{d: d}, nil
}

// Close frees every file of the disk (descriptors still open keep
// theirs); the operations of its views fail with EBADF from then on.
func (d *Disk) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed.Store(true)
	for n := range d.files {
		n.f.Close()
	}
	d.files, d.root = map[*node]struct{}{}, nil
	return nil
}

// newDir is a new directory of mode perm (the umask applied), not yet in
// the tree.
func (d *Disk) newDir(perm uint32) *node {
	now := timespec(time.Now())
	d.nextIno++
	return &node{kids: map[string]*node{}, ino: d.nextIno, mode: perm & 0o1777 &^ d.umask,
		uid: uint32(os.Geteuid()), gid: uint32(os.Getegid()), atime: now, mtime: now, ctime: now}
}

func timespec(t time.Time) unix.Timespec { return unix.NsecToTimespec(t.UnixNano()) }

// touch moves the directory n's mtime and ctime to now (an entry added or
// removed).
func touch(n *node) {
	n.mtime = timespec(time.Now())
	n.ctime = n.mtime
}

// attach puts n in the directory p as name (none there).
func (d *Disk) attach(p *node, name string, n *node) {
	p.kids[name] = n
	if n.isDir() {
		p.subdirs++
		n.parent = p
	} else {
		n.links++
		d.files[n] = struct{}{}
	}
	touch(p)
}

// detach takes name out of the directory p and returns what it was; a
// file left with no name is freed by drop.
func (d *Disk) detach(p *node, name string) *node {
	n := p.kids[name]
	delete(p.kids, name)
	if n.isDir() {
		p.subdirs--
	} else {
		n.links--
	}
	touch(p)
	return n
}

// drop frees n, a file, when no name holds it now (and, for a directory,
// every file beneath it that no other name holds).
func (d *Disk) drop(n *node) {
	if n.isDir() {
		for name := range n.kids {
			d.drop(d.detach(n, name))
		}
		return
	}
	if n.links == 0 {
		delete(d.files, n)
		n.f.Close()
	}
}

// walk finds the directory rel ("." the root): ENOENT when a component
// is missing, ENOTDIR when one is a file.
func (d *Disk) walk(rel string) (*node, error) {
	n := d.root
	if rel == "." {
		return n, nil
	}
	for c := range strings.SplitSeq(rel, "/") {
		next := n.kids[c]
		if next == nil {
			return nil, unix.ENOENT
		}
		if !next.isDir() {
			return nil, unix.ENOTDIR
		}
		n = next
	}
	return n, nil
}

// beneath reports whether the directory n is a directory beneath the
// directory anc (not anc itself).
func beneath(n, anc *node) bool {
	for ; n.parent != n; n = n.parent {
		if n.parent == anc {
			return true
		}
	}
	return false
}
