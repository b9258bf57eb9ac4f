package crashfs

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// Disk is a scratch directory that can fail and lose power, and the
// record of what in it is durable. It is safe for concurrent use.
type Disk struct {
	dir    string // the directory the tiers see (their root)
	shadow string // the synced bytes of files, outside dir

	// Torn makes Restore give a file whose name is durable but whose
	// latest bytes are not a prefix of those bytes (at a length of
	// TornLen's choosing) over its durable bytes, instead of the durable
	// bytes alone. Set it before the first Restore.
	Torn    bool
	TornLen func(n int) int

	ops sync.RWMutex // held for reading by every operation, for writing by PowerCut
	// names is held for reading by a rename, for writing by a sync while
	// it lists a directory: a rename is in a directory's sync whole, or
	// not at all, as on a real filesystem.
	names sync.RWMutex
	cut   atomic.Bool
	fault atomic.Pointer[func(op, rel string) error]
	count atomic.Int64 // operations so far

	mu    sync.Mutex
	files map[ident]image            // the durable bytes of each file
	dirs  map[ident]map[string]entry // the durable entries of each directory
	// attrs: the xattrs of each file as of the last sync of a directory
	// naming it (metadata, committed with the names), for a file gone
	// since (renamed over, unlinked) whose durable name still is its;
	// none once a sync of the file recorded them later (files).
	attrs map[ident]map[string][]byte
	lates []string // operations on a filesystem after its Close
	// listed, when set (by a test), runs in a directory's sync after
	// its entries are listed: what another operation did then.
	listed func()
	root   ident
	seq    int
}

// ident is a file's identity: its inode and birth time (an inode number
// freed and given to a new file is another file).
type ident struct {
	ino       uint64
	sec, nsec int64
}

// image is a file's durable state: its bytes (a file in the shadow
// directory), mode, times and xattrs.
type image struct {
	bytes  string
	mode   uint32
	mtime  unix.Timespec
	xattrs map[string][]byte
}

// entry is a durable name in a directory.
type entry struct {
	id  ident
	dir bool
}

// New makes (if missing) the directory dir and a shadow directory beside
// it, and records everything in dir now as durable.
func New(dir string) (*Disk, error) {
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	shadow := dir + ".crashfs"
	if err := os.MkdirAll(shadow, 0o700); err != nil {
		return nil, err
	}
	d := &Disk{dir: dir, shadow: shadow}
	if err := d.syncAll(); err != nil {
		return nil, err
	}
	return d, nil
}

// Dir is the disk's directory.
func (d *Disk) Dir() string { return d.dir }

// Open opens a filesystem on the disk, rooted at dir (which must be the
// disk's directory): the signature of tiers.DirConfig.OpenFS.
func (d *Disk) Open(dir string, perm uint32) (rootfs.FS, error) {
	if filepath.Clean(dir) != d.dir {
		return nil, fmt.Errorf("crashfs: %s is not the disk's directory %s", dir, d.dir)
	}
	if err := d.before("open", "."); err != nil {
		return nil, err
	}
	r, err := rootfs.Open(dir, os.FileMode(perm))
	if err != nil {
		return nil, err
	}
	return newFS(d, r), nil
}

// Ops is how many operations the disk's filesystems have begun.
func (d *Disk) Ops() int64 { return d.count.Load() }

// SetFault sets the hook run before every operation with its name
// ("open", "fsync", "rename", ...) and path: an error it returns is the
// operation's, and nothing is done; it may block (a stall), or call
// PowerCut. nil removes it.
func (d *Disk) SetFault(fn func(op, rel string) error) {
	if fn == nil {
		d.fault.Store(nil)
		return
	}
	d.fault.Store(&fn)
}

// FailAt makes the n-th operation from now whose name op matches (""
// any) fail with errno, once.
func (d *Disk) FailAt(n int64, op string, errno unix.Errno) {
	var seen atomic.Int64
	d.SetFault(func(o, rel string) error {
		if op != "" && o != op {
			return nil
		}
		if seen.Add(1) == n {
			return &os.PathError{Op: o, Path: rel, Err: errno}
		}
		return nil
	})
}

// CutAt cuts the power before the n-th operation from now.
func (d *Disk) CutAt(n int64) {
	var seen atomic.Int64
	d.SetFault(func(o, rel string) error {
		if seen.Add(1) == n {
			d.PowerCut()
		}
		return nil
	})
}

// before counts an operation, runs the fault hook, and fails it with EIO
// once the power is off.
func (d *Disk) before(op, rel string) error {
	d.count.Add(1)
	if fn := d.fault.Load(); fn != nil {
		if err := (*fn)(op, rel); err != nil {
			return err
		}
	}
	if d.cut.Load() {
		return &os.PathError{Op: op, Path: rel, Err: unix.EIO}
	}
	return nil
}

// PowerCut turns the power off: it waits for the operations under way
// (a sync under way is recorded or not, whole), then every operation
// fails with EIO and no sync is recorded, until Restore. Data written to
// files already open still reaches the directory: Restore forgets it.
func (d *Disk) PowerCut() {
	d.ops.Lock()
	d.cut.Store(true)
	d.ops.Unlock()
}

// Cut reports whether the power is off.
func (d *Disk) Cut() bool { return d.cut.Load() }

// late records an operation on a filesystem after its Close.
func (d *Disk) late(op string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lates = append(d.lates, op)
}

// Late lists the operations tried on the disk's filesystems after their
// Close (refused): whoever owned the filesystem left work running past
// its close, which on a real disk would act on a directory it no longer
// owns (a restored one, another daemon's).
func (d *Disk) Late() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.lates...)
}
