package conn

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/moby/sys/mountinfo"
	"github.com/ucmfs/ucmfs/fs/light"
	"github.com/ucmfs/ucmfs/fs/uring"
)

// Transports: how requests travel between the kernel and the daemon
// (fs.Options.Transport, --fuse-transport).
const (
	// Auto uses io_uring where the kernel offers it and else /dev/fuse,
	// saying why in one log line.
	Auto = "auto"
	// Uring uses FUSE over io_uring (package uring), or fails the mount.
	Uring = "uring"
	// Dev reads and writes /dev/fuse (go-fuse's own loop).
	Dev = "dev"
)

// Transports lists the transports Connect takes.
var Transports = []string{Auto, Uring, Dev}

// Conn is a mount's FUSE connection, served on one transport.
type Conn struct {
	// srv answered INIT; it sends notifications and registers passthrough
	// backing files on either transport.
	srv *fuse.Server
	// ring serves the requests when the transport is io_uring; nil when
	// go-fuse's /dev/fuse loop does.
	ring *uring.Transport
	mnt  string
}

// Connect mounts fs at mnt and serves it on the transport asked for.
// ring is given the io_uring transport, if that is the one, before it
// serves the first request (vfs/flock.go).
func Connect(mnt string, fs fuse.RawFileSystem, o *fuse.MountOptions, transport string, log *slog.Logger, ring *atomic.Pointer[uring.Transport]) (*Conn, error) {
	switch transport {
	case "", Auto, Uring:
	case Dev:
		return connectDev(mnt, fs, o)
	default:
		return nil, fmt.Errorf("FUSE transport %q: want one of %v", transport, Transports)
	}
	t, err := uring.Prepare(uring.Options{MaxWrite: o.MaxWrite, Logger: log, Mountpoint: mnt})
	if err == nil {
		var c *Conn
		if c, err = connectRing(mnt, fs, o, t, log, ring); err == nil {
			return c, nil
		}
		t.Close()
		if !errors.Is(err, uring.ErrNeedsRoot) {
			return nil, err
		}
	}
	if transport == Uring {
		return nil, fmt.Errorf("FUSE transport uring: %w", err)
	}
	log.Info("FUSE over io_uring not used; requests go through /dev/fuse", "why", err.Error())
	return connectDev(mnt, fs, o)
}

// connectDev mounts fs at mnt and serves it with go-fuse's /dev/fuse loop.
func connectDev(mnt string, fs fuse.RawFileSystem, o *fuse.MountOptions) (*Conn, error) {
	srv, err := light.Serve(mnt, fs, o)
	if err != nil {
		return nil, err
	}
	return &Conn{srv: srv, mnt: mnt}, nil
}

// connectRing mounts with mount(2), has go-fuse answer INIT (asking for
// io_uring) on the connection's descriptor, and serves the rest with t.
func connectRing(mnt string, fs fuse.RawFileSystem, o *fuse.MountOptions, t *uring.Transport, log *slog.Logger, ring *atomic.Pointer[uring.Transport]) (*Conn, error) {
	fd, err := uring.Mount(mnt, o)
	if err != nil {
		return nil, err
	}
	ro := *o
	ro.DirectMount = false // the /dev/fd/N mountpoint: go-fuse takes the descriptor as mounted
	ro.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
	srv, err := fuse.NewServer(fs, fmt.Sprintf("/dev/fd/%d", fd), &ro)
	if err != nil {
		_ = uring.Unmount(mnt)
		return nil, err
	}
	ps, err := uring.NewProtocolServer(fs, &ro, srv)
	if err != nil {
		_ = uring.Unmount(mnt)
		return nil, err
	}
	offered := uring.Offered(srv)
	ring.Store(t)
	switch err := t.Serve(fd, ps, offered); {
	case err != nil:
		// The kernel refused an entry and fell back to /dev/fuse, which
		// the transport serves too.
		log.Warn("FUSE over io_uring not in use", "mountpoint", mnt, "err", err.Error())
	case !offered:
		log.Warn("FUSE over io_uring not in use: the kernel did not offer it at INIT; requests go through /dev/fuse", "mountpoint", mnt)
	}
	return &Conn{srv: srv, ring: t, mnt: mnt}, uring.PollHack(mnt)
}

// Wait returns once the file system is unmounted and its loops stopped.
func (c *Conn) Wait() {
	if c.ring == nil {
		c.srv.Wait()
		return
	}
	c.ring.Wait()
}

// Unmount unmounts the file system and waits for its loops to stop. A
// busy mount is retried a few times, as go-fuse does, for the kernel to
// see the last files closed.
func (c *Conn) Unmount() error {
	if c.ring == nil {
		return c.srv.Unmount()
	}
	var err error
	delay := time.Duration(0)
	for try := 0; try < 5; try++ {
		if err = uring.Unmount(c.mnt); err == nil {
			c.ring.Wait()
			return nil
		}
		delay = 2*delay + 5*time.Millisecond
		time.Sleep(delay)
	}
	return err
}

// Transport says which transport serves the mount: Uring or Dev.
func (c *Conn) Transport() string {
	if c.ring != nil && c.ring.InRing() {
		return Uring
	}
	return Dev
}

// IsMountpoint reports whether path is the mount point of a mount in this
// mount namespace (the mount table, /proc/thread-self/mountinfo).
func IsMountpoint(path string) (bool, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil {
		return false, fmt.Errorf("checking the mountpoint: %w", err)
	}
	return len(mounts) > 0, nil
}
