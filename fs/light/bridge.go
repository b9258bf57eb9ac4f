package light

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Passthrough backing ids the daemon registers itself
//
// go-fuse registers a node's backing file at its first open and
// unregisters it at its last release. A published file keeps its
// descriptor for a while after the last close (opencache.go), and its
// backing id with it, so the daemon registers the descriptor itself and
// hands the id to the kernel in the OPEN reply: Bridge wraps go-fuse's
// node bridge and, after the node's Open, writes the id its node left for
// the request (keyed by the request's cancel channel, which is the
// request's own while it runs).

// Backing registers the mount's passthrough backing files and passes
// their ids from a node's Open to Bridge.Open. The zero value is ready;
// it registers nothing until Probe found the kernel and every tier take
// backing files.
type Backing struct {
	server atomic.Pointer[fuse.Server] // set when the server starts
	on     atomic.Bool                 // the mount uses passthrough

	mu sync.Mutex
	m  map[<-chan struct{}]int32
}

// ErrNoPassthrough: the kernel did not offer FUSE passthrough.
var ErrNoPassthrough = errors.New("the kernel does not offer FUSE passthrough (Linux 6.9 or later)")

// Probe checks, once at mount, that the kernel takes a file of every
// directory in dirs (the tiers) as a passthrough backing file (it needs
// CAP_SYS_ADMIN, and a tier on a stacked file system may be too deep),
// and turns passthrough on if so. go-fuse turns passthrough off for the
// whole mount at the first refused registration, and an inode cannot be
// open in passthrough and normal mode at once, so the mount uses it for
// every file or for none.
func (b *Backing) Probe(dirs []string, log *slog.Logger) error {
	srv := b.server.Load()
	if srv == nil || srv.KernelSettings().Flags64()&fuse.CAP_PASSTHROUGH == 0 {
		return ErrNoPassthrough
	}
	for _, dir := range dirs {
		if err := probeDir(srv, dir, log); err != nil {
			return err
		}
	}
	b.on.Store(true)
	return nil
}

// probeDir registers and unregisters an unnamed file of dir.
func probeDir(srv *fuse.Server, dir string, log *slog.Logger) error {
	f, err := tempFile(dir)
	if err != nil {
		return fmt.Errorf("passthrough probe in %s: %w", dir, err)
	}
	defer f.Close()
	id, errno := srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(f.Fd())})
	if errno != 0 {
		return fmt.Errorf("registering a backing file of %s: %w", dir, errno)
	}
	if errno := srv.UnregisterBackingFd(id); errno != 0 {
		log.Warn("passthrough probe: unregistering the backing file", "dir", dir, "errno", errno)
	}
	return nil
}

// tempFile opens a file in dir that has no name: O_TMPFILE, or where the
// file system lacks it, a new file unlinked at once.
func tempFile(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return os.NewFile(uintptr(fd), filepath.Join(dir, "(probe)")), nil
	}
	f, err := os.CreateTemp(dir, ".ucmfs-probe-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// Active reports whether the mount uses passthrough.
func (b *Backing) Active() bool { return b.on.Load() }

// Register registers f as a passthrough backing file; 0 when the mount
// does not use passthrough or the kernel refused (the handle then falls
// back to go-fuse's own registration; log gets a debug line).
func (b *Backing) Register(f *os.File, log *slog.Logger) int32 {
	srv := b.server.Load()
	if !b.on.Load() || srv == nil {
		return 0
	}
	id, errno := srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(f.Fd())})
	if errno != 0 {
		log.Debug("registering a backing file", "errno", errno)
		return 0
	}
	return id
}

// Unregister unregisters backing id (0: none).
func (b *Backing) Unregister(id int32, log *slog.Logger) {
	if id == 0 {
		return
	}
	if errno := b.server.Load().UnregisterBackingFd(id); errno != 0 {
		log.Debug("unregistering a backing file", "errno", errno)
	}
}

// Give leaves id for the OPEN request of ctx; it reports false when ctx
// is not a request's (the caller lets go-fuse register the file).
func (b *Backing) Give(ctx context.Context, id int32) bool {
	c, ok := ctx.(*fuse.Context)
	if !ok || c.Cancel == nil || id == 0 {
		return false
	}
	b.mu.Lock()
	if b.m == nil {
		b.m = make(map[<-chan struct{}]int32)
	}
	b.m[c.Cancel] = id
	b.mu.Unlock()
	return true
}

// take returns and forgets the id left for the request of cancel.
func (b *Backing) take(cancel <-chan struct{}) int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, ok := b.m[cancel]
	if ok {
		delete(b.m, cancel)
	}
	return id
}

// Bridge is go-fuse's node bridge with OPEN replies carrying the backing
// ids the nodes registered (Backing.Give).
type Bridge struct {
	fuse.RawFileSystem
	ids    *Backing
	onInit func(*fuse.Server)
}

// NewBridge wraps the node bridge of root; onInit gets the server when it
// starts (it registers backing files and sends notifications).
func NewBridge(root gofs.InodeEmbedder, opts *gofs.Options, ids *Backing, onInit func(*fuse.Server)) *Bridge {
	return &Bridge{RawFileSystem: gofs.NewNodeFS(root, opts), ids: ids, onInit: onInit}
}

// Init keeps the server for the backing files, hands it to onInit, then
// to the bridge.
func (r *Bridge) Init(srv *fuse.Server) {
	r.ids.server.Store(srv)
	r.onInit(srv)
	r.RawFileSystem.Init(srv)
}

// Open opens through the bridge, then answers with the node's backing id.
func (r *Bridge) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	status := r.RawFileSystem.Open(cancel, in, out)
	if id := r.ids.take(cancel); id != 0 && status == fuse.OK {
		out.BackingID = id
		out.OpenFlags |= fuse.FOPEN_PASSTHROUGH
		out.OpenFlags &^= fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_DIRECT_IO
	}
	return status
}

// Serve mounts fs (the Layer, or a bare Bridge) at mnt and serves it, as
// gofs.Mount does for go-fuse's bridge alone.
func Serve(mnt string, fs fuse.RawFileSystem, opts *fuse.MountOptions) (*fuse.Server, error) {
	srv, err := fuse.NewServer(fs, mnt, opts)
	if err != nil {
		return nil, err
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		// As gofs.Mount: the serve loop ends by itself when the mount
		// failed.
		return nil, err
	}
	return srv, nil
}
