package fs

import (
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/fs/conn"
	"github.com/ucmfs/ucmfs/fs/light"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// Options configure a mount (vfs.Options: what each field is for). Zero
// values take the defaults.
type Options = vfs.Options

// Defaults of Options.
const (
	DefaultKernelNodes = vfs.DefaultKernelNodes // no bound (light.Pruner says why)
	DefaultEntryTTL    = vfs.DefaultEntryTTL
	DefaultNegativeTTL = vfs.DefaultNegativeTTL
)

// maxIO is the largest read and write request (1 MiB).
const maxIO = 1 << 20

// Transports: how requests travel between the kernel and the daemon
// (Options.Transport, --fuse-transport; package fs/conn).
const (
	// TransportAuto uses io_uring where the kernel offers it and else
	// /dev/fuse, saying why in one log line.
	TransportAuto = conn.Auto
	// TransportUring uses FUSE over io_uring (package uring), or fails the
	// mount.
	TransportUring = conn.Uring
	// TransportDev reads and writes /dev/fuse (go-fuse's own loop).
	TransportDev = conn.Dev
)

// Transports lists the values of Options.Transport.
var Transports = conn.Transports

// Server is a mounted ucmfs.
type Server struct {
	conn  *conn.Conn
	state *fsState
	mnt   string
}

// Mount mounts the store st at mountpoint and serves it until unmounted. The
// mountpoint must be an empty directory that is not already a mount
// point. It mounts directly (mount(2), as root; fusermount only as a
// fallback). With opts.Passthrough it checks that the kernel takes the
// tiers' files as passthrough backing files, and else serves I/O itself
// (one log line; PassthroughActive tells which).
func Mount(mountpoint string, st *store.Store, opts Options) (*Server, error) {
	mnt, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil, err
	}
	if err := checkMountpoint(mnt); err != nil {
		return nil, err
	}
	if opts.ControlGroup != "" {
		if _, err := control.ResolveGroup(opts.ControlGroup); err != nil {
			return nil, err
		}
	}
	s := newState(st, opts)
	if err := s.env.OpenGPUSocket(s.opts.GPUSocket, s.control); err != nil {
		return nil, err
	}
	gopts := &gofs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:           s.opts.AllowOther,
			FsName:               "ucmfs",
			Name:                 "ucmfs",
			DirectMount:          true,
			MaxWrite:             maxIO,
			MaxReadAhead:         maxIO,
			MaxBackground:        64,
			DisableSplice:        true,
			IgnoreSecurityLabels: true,
			// No file here has suid, sgid or file capabilities to drop
			// (writeAttr, blockAttr): the kernel need not ask for
			// security.capability before every write (a round trip each).
			ExtraCapabilities: fuse.CAP_HANDLE_KILLPRIV_V2 |
				// flock(2) goes to the daemon, which keeps the locks by
				// name (vfs/flock.go); POSIX locks stay the kernel's.
				fuse.CAP_FLOCK_LOCKS,
			// The kernel checks owners and modes (fs/owner.go).
			Options:       []string{"default_permissions"},
			MaxStackDepth: 2,
			Debug:         s.opts.Debug,
			Logger:        goLogger(s.log, s.opts.Debug, slog.LevelInfo),
			PanicHandler:  s.panicked,
		},
		NegativeTimeout: &s.opts.NegativeTTL,
		RootStableAttr:  &gofs.StableAttr{Ino: control.RootIno},
		UID:             s.uid,
		GID:             s.gid,
		Logger:          goLogger(s.log, true, slog.LevelWarn),
	}
	if !s.opts.Passthrough {
		gopts.DisabledCapabilities = fuse.CAP_PASSTHROUGH
	}
	root := newRoot(s)
	s.root, s.rootNode = &root.Inode, root
	var rawFS fuse.RawFileSystem = light.NewBridge(root, gopts, &s.backing, s.server.Store)
	if !s.opts.BridgeOnly {
		rawFS = light.NewLayer(rawFS, lightHost{s}, s.light, s.shards)
	}
	c, err := conn.Connect(mnt, rawFS, &gopts.MountOptions, s.opts.Transport, s.log, &s.ring)
	if err != nil {
		s.env.CloseGPUSocket()
		return nil, fmt.Errorf("mount %s: %w", mnt, err)
	}
	server := &Server{conn: c, state: s, mnt: mnt}
	if s.opts.Passthrough {
		if err := s.backing.Probe(s.store.TierDirs(), s.log); err != nil {
			s.log.Warn("FUSE passthrough unavailable; the daemon serves reads and writes itself", "mountpoint", mnt, "err", err)
		}
	}
	s.log.Info("mounted", "mountpoint", mnt, "passthrough", s.backing.Active(), "transport", c.Transport())
	return server, nil
}

// goLogger adapts the slog logger for go-fuse's log.Logger: its debug
// trace (Options.Debug) at info level, its rare diagnostics as warnings.
func goLogger(l *slog.Logger, enabled bool, level slog.Level) *log.Logger {
	if !enabled {
		return log.New(io.Discard, "", 0)
	}
	return slog.NewLogLogger(l.Handler(), level)
}

// checkMountpoint refuses a path that is not an empty directory or that
// is already a mount point.
func checkMountpoint(mnt string) error {
	fi, err := os.Stat(mnt)
	if err != nil {
		return fmt.Errorf("mountpoint: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("mountpoint %s is not a directory: %w", mnt, syscall.ENOTDIR)
	}
	mounted, err := conn.IsMountpoint(mnt)
	if err != nil {
		return err
	}
	if mounted {
		return fmt.Errorf("mountpoint %s is already a mount point: %w", mnt, syscall.EBUSY)
	}
	f, err := os.Open(mnt)
	if err != nil {
		return fmt.Errorf("mountpoint: %w", err)
	}
	defer f.Close()
	if names, _ := f.Readdirnames(1); len(names) > 0 {
		return fmt.Errorf("mountpoint %s is not empty: %w", mnt, syscall.ENOTEMPTY)
	}
	return nil
}

// Wait returns once the file system is unmounted (by Unmount or by an
// external umount); the prefetch pool is stopped by then.
func (s *Server) Wait() {
	s.conn.Wait()
	s.state.env.CloseGPUSocket()
	s.state.Close()
}

// StopWrites makes every later create (and mkdir) fail with EROFS: the
// daemon is shutting down. Files already being written still publish at
// close while the stack is open.
func (s *Server) StopWrites() {
	s.state.store.Stop()
}

// PassthroughActive reports whether the kernel reads and writes the
// tiers' files directly (FUSE passthrough).
func (s *Server) PassthroughActive() bool { return s.state.backing.Active() }

// Transport says which transport serves the mount: TransportUring or
// TransportDev.
func (s *Server) Transport() string { return s.conn.Transport() }

// Mountpoint is the absolute path of the mount.
func (s *Server) Mountpoint() string { return s.mnt }

// Unmount unmounts the file system. When it is busy (open files, a
// process inside) it detaches it (MNT_DETACH): the mount disappears from
// the namespace at once and the kernel ends it when the last user goes.
func (s *Server) Unmount() error {
	defer s.state.Close()
	defer s.state.env.CloseGPUSocket()
	if mounted, err := conn.IsMountpoint(s.mnt); err == nil && !mounted {
		return nil // unmounted already (an external umount)
	}
	err := s.conn.Unmount()
	if err == nil {
		return nil
	}
	if derr := syscall.Unmount(s.mnt, syscall.MNT_DETACH); derr != nil {
		if errors.Is(derr, syscall.EINVAL) { // not mounted any more
			return nil
		}
		return fmt.Errorf("unmount %s: %w (detach: %w)", s.mnt, err, derr)
	}
	s.state.log.Warn("mount was busy; detached it", "mountpoint", s.mnt, "err", err)
	return nil
}
