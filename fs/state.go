package fs

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/filesdir"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/fs/light"
	"github.com/ucmfs/ucmfs/fs/pending"
	"github.com/ucmfs/ucmfs/fs/scratch"
	"github.com/ucmfs/ucmfs/fs/uring"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// fsState is what every node of one mount shares, by pointer: the store
// (the models, publish rules, sidecars, blocks and counters every node
// uses), the options and the adapter's own tables.
//
// Lock order: ino.Table's mutex is a leaf; the store's locks are the store's
// (store.Store).
type fsState struct {
	store   *store.Store // the core: every block and model goes through it
	env     *control.Env // what the sessions of .ucm/ share
	opts    Options
	log     *slog.Logger
	uid     uint32
	gid     uint32
	mounted time.Time

	flocks vfs.Flocks // flock(2) locks, by name (vfs/flock.go)
	// ring is the io_uring transport serving the mount, if any: a
	// handler about to wait tells it first (uring.Transport.HoldEntry).
	ring atomic.Pointer[uring.Transport]

	statfsHook    atomic.Pointer[func()] // runs at the start of each statfs (tests)
	namesDropped  atomic.Int64           // dropPublishedName's notifications sent (tests wait on it)
	namesReplaced atomic.Int64           // notifyReplaced's notifications sent (tests wait on it)

	inos     *ino.Table
	shards   *light.Registry             // the live shard nodes, by number
	light    *light.Table                // the light nodes (package light)
	kernel   *light.Pruner               // published files' nodes the kernel holds (nil: unbounded)
	control  control.Access              // who may use the session control files
	root     *gofs.Inode                 // the root node, once mounted
	server   atomic.Pointer[fuse.Server] // the FUSE server, once it has started
	rootNode gofs.InodeEmbedder
	// pending serves the files being written (package fs/pending).
	pending *pending.Files
	// filesDirs serve the directories of files models (package
	// fs/filesdir).
	filesDirs *filesdir.Dirs
	// scratch holds the private entries of ucm-posix models, and what
	// they take of the memory tier (package fs/scratch).
	scratch *scratch.Dir
	listed  vfs.UserBudget // names the listings of open directories hold (vfs/user_budget.go)
	reading vfs.UserBudget // open handles of published files

	seq          atomic.Uint64 // numbers of files being written
	daemonReads  atomic.Int64  // read requests the daemon served (none with passthrough)
	daemonWrites atomic.Int64  // write requests the daemon served (none with passthrough)

	opens   *vfs.OpenCache   // descriptors kept after their last close (vfs/opencache.go)
	reopens vfs.Reopens      // new versions of Files waiting for their open's retry (vfs/reopen.go)
	backing light.Backing    // passthrough: backing files and their ids
	descs   *vfs.Descriptors // what the shared descriptors of published files go through (vfs/opened.go)
	// files are the nodes of files models' Files that are not numbered
	// by FileName alone, and the Files moved under their nodes
	// (vfs/files_nodes.go).
	files vfs.FilesNodes[filesdir.File]
	// dirMoves are the directory moves in flight (vfs/dir_moves.go).
	dirMoves vfs.DirMoves
	// listings are the directories whose listing the kernel may have
	// cached, and their mtimes (vfs.CachedListings; dir_cache.go).
	listings vfs.CachedListings[*gofs.Inode]
}

func newState(st *store.Store, opts Options) *fsState {
	opts.SetDefaults()
	s := &fsState{
		store:   st,
		opts:    opts,
		log:     opts.Logger,
		uid:     uint32(syscall.Getuid()),
		gid:     uint32(syscall.Getgid()),
		mounted: time.Now(),
		inos:    ino.NewTable(),
		opens:   vfs.NewOpenCache(st),
		shards:  light.NewRegistry(),
		light:   light.NewTable(&st.Counters.LightNodes),
		listed:  vfs.NewListingBudget(),
		reading: vfs.NewReadBudget(),
	}
	s.scratch = scratch.New(scratchHost{s}, scratchErrnos, vfs.ErrCrossDir,
		func() string { return st.TierDirs()[store.MemoryTier] })
	s.pending = &pending.Files{Host: pendingHost{s}, Errnos: pendingErrnos, Store: st,
		Reopens: &s.reopens, Log: s.log, Writes: &s.daemonWrites}
	s.filesDirs = &filesdir.Dirs{Host: filesHost{s}, Errnos: filesDirErrnos, Store: st, Inos: s.inos,
		Pending: s.pending, EntryTTL: s.opts.EntryTTL, Log: s.log, Files: &s.files, Moves: &s.dirMoves,
		Listings: &s.listings, Listed: &s.listed}
	s.descs = &vfs.Descriptors{Store: st, Cache: s.opens, Backing: &s.backing, Log: s.log}
	s.kernel = light.NewPruner(opts.KernelNodes, s.light, s.log,
		func() *gofs.Inode { return s.root }, func() *fuse.Server { return s.server.Load() })
	s.env = control.NewEnv(st, opts.GPU, opts.Logger, errName)
	s.control = control.NewAccess(opts.ControlGroup, s.uid, s.gid)
	st.OnPublish(s.notifyPublished)
	st.OnListingChange(s.listings.Changed)
	st.Writes().OnGenInUse(func(k format.Key, gen uint64) bool { return s.inos.Holds(ino.FileVersion(k, gen)) })
	return s
}

// Close closes the kept descriptors, then the store.
func (s *fsState) Close() {
	s.opens.CloseAll()
	s.store.Close()
}

// fail turns err into an errno and logs the refused request in one line:
// a warning for an expected refusal, an error for an unexpected one
// (which becomes EIO).
func (s *fsState) fail(op, path string, err error) syscall.Errno {
	errno, known := mapErr(err)
	if known {
		s.log.Warn("request refused", "op", op, "path", path, "errno", unix.ErrnoName(errno), "err", err)
	} else {
		s.log.Error("unexpected error", "op", op, "path", path, "errno", unix.ErrnoName(errno), "err", err)
	}
	return errno
}

// refuse answers a request err refused: a plain refusal (vfs.IsPlain)
// by its errno with one line at debug level, as debugFail; any other as
// fail does. A nil err is 0.
func (s *fsState) refuse(op, path string, err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case vfs.IsPlain(err):
		return s.debugFail(op, path, err)
	}
	return s.fail(op, path, err)
}

// panicked answers a request whose handler panicked: EIO, and one error
// line with the stack, whatever the log level (go-fuse's own handler
// writes to its logger, which is silent without --debug).
func (s *fsState) panicked(r any) fuse.Status {
	s.log.Error("panic in a request handler: the request failed with EIO", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return fuse.EIO
}

// debugFail is fail for requests that tools send as probes (a lookup of
// a name that cannot exist): one line at debug level.
func (s *fsState) debugFail(op, path string, err error) syscall.Errno {
	errno := toErrno(err)
	s.log.Debug("request refused", "op", op, "path", path, "errno", unix.ErrnoName(errno), "err", err)
	return errno
}

// dirPerm is the mode of every directory.
const dirPerm = 0o755

// dirAttr fills the attributes of a directory. Directories are virtual
// and occupy no blocks, so `du -s` of a model is exactly the sum of its
// files' st_blocks.
func (s *fsState) dirAttr(a *fuse.Attr, nlink uint32) {
	a.Mode = syscall.S_IFDIR | dirPerm
	a.Nlink = nlink
	a.Size = 4096
	a.Blocks = 0
	a.Blksize = 4096
	a.Owner = fuse.Owner{Uid: s.uid, Gid: s.gid}
	a.SetTimes(&s.mounted, &s.mounted, &s.mounted)
}

// fileAttr fills the attributes of a regular file: st_blocks counts
// 512-byte units, rounded up, so du shows the exact size.
func (s *fsState) fileAttr(a *fuse.Attr, size int64, mtime time.Time, perm uint32) {
	a.Mode = syscall.S_IFREG | perm
	a.Nlink = 1
	a.Size = uint64(size)
	a.Blocks = uint64((size + 511) / 512)
	a.Blksize = 4096
	a.Owner = fuse.Owner{Uid: s.uid, Gid: s.gid}
	a.SetTimes(&mtime, &mtime, &mtime)
}

// scratchHost is the adapter as the private entries see it
// (scratch.Host).
type scratchHost struct{ s *fsState }

func (h scratchHost) Fail(op, path string, err error) syscall.Errno { return h.s.fail(op, path, err) }
func (h scratchHost) Errno(err error) syscall.Errno                 { return toErrno(err) }
func (h scratchHost) Root() gofs.InodeEmbedder                      { return h.s.rootNode }
func (h scratchHost) Caller(ctx context.Context) (uid, gid uint32) {
	p := callerProc(ctx)
	return p.Uid, p.Gid
}
