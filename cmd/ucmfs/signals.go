package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/ucmfs/ucmfs/fs"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// The daemon's life after fs.Mount: readiness, then one of
//
//	SIGINT/SIGTERM/SIGHUP (ctx cancelled): stop writes, flush dirty blocks
//	    (bounded by ShutdownTimeout; a second SIGINT cuts it short),
//	    unmount, close. A log line that cannot be written (stderr gone)
//	    is dropped; it never stops the shutdown (main.go).
//	external umount (Wait returns): flush, close.
//
// Exit status 0 when every dirty block reached the first directory tier,
// 1 when some may be lost (the error says why).

const (
	readyTimeout = 30 * time.Second // the mount must answer .ucm/stats by then
	detachWait   = 5 * time.Second  // after a lazy unmount, how long to wait for the kernel
)

// serve waits for readiness, prints the ready line, then waits for a
// signal or an external unmount and shuts down.
func serve(ctx context.Context, cfg mountConfig, srv *fs.Server, core *store.Store, st *tiers.Stack, life *lifecycle, log *slog.Logger, stderr io.Writer) error {
	unmounted := make(chan struct{})
	go func() { srv.Wait(); close(unmounted) }()
	if err := waitReady(ctx, cfg.Mountpoint, unmounted); err != nil {
		log.Error("mount not ready", "err", err)
		unmount(srv, cfg.Mountpoint, unmounted, log)
		closeStack(st, cfg.ShutdownTimeout, log)
		return err
	}
	if ctx.Err() == nil {
		names := make([]string, len(cfg.Tiers))
		for i, t := range cfg.Tiers {
			names[i] = t.String()
		}
		if len(names) == 0 {
			names = []string{"none"}
		}
		pt := "off"
		if srv.PassthroughActive() {
			pt = "on"
		}
		announce(cfg, log, stderr, "mounted on %s (memory %s, tiers: %s, passthrough %s, FUSE over %s)",
			cfg.Mountpoint, formatSize(cfg.Memory), strings.Join(names, ", "), pt, transportWords(srv.Transport()))
		life.markReady()
		recordOwner(cfg.Mountpoint, st, log)
	}
	stopWatchdog := startWatchdog(cfg.Mountpoint, log)
	defer stopWatchdog()
	select {
	case <-ctx.Done():
		stopWatchdog()
		life.markStopping()
		log.Info("shutting down: stopping writes, flushing dirty blocks, unmounting", "timeout", cfg.ShutdownTimeout)
		srv.StopWrites()
		fctx, cancel := flushContext(cfg.ShutdownTimeout, log)
		defer cancel()
		// Every dirty block written back and fsynced, then each tier's
		// filesystem synced: what background write-back left in the page
		// cache is durable too, so a clean stop survives a power cut.
		flushErr := core.Flush(fctx, "")
		unmount(srv, cfg.Mountpoint, unmounted, log)
		return shutdownError(errors.Join(flushErr, st.Close(fctx)))
	case <-unmounted:
		stopWatchdog()
		life.markStopping()
		log.Info("unmounted from outside: flushing dirty blocks")
		fctx, cancel := flushContext(cfg.ShutdownTimeout, log)
		defer cancel()
		return shutdownError(errors.Join(core.Flush(fctx, ""), st.Close(fctx)))
	}
}

// shutdownError words a failed flush or close for the exit message.
func shutdownError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("shutdown: blocks only in memory may be lost: %w", err)
}

// waitReady polls MNT/.ucm/stats until it reads, the server ends, ctx is
// cancelled (the shutdown then proceeds as usual) or readyTimeout passes.
func waitReady(ctx context.Context, mnt string, unmounted <-chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	stats := filepath.Join(mnt, ".ucm", "stats")
	for {
		if _, err := os.ReadFile(stats); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("%s not readable after %v: %w", stats, readyTimeout, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-unmounted:
			return fmt.Errorf("%s was unmounted before it was ready", mnt)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// flushContext bounds a shutdown flush by timeout. A second SIGINT (Ctrl-C
// again) ends it at once; another SIGTERM is logged and ignored, because
// wrappers (timeout, some init processes) forward a SIGTERM the daemon
// also received directly.
func flushContext(timeout time.Duration, log *slog.Logger) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for {
			select {
			case sig := <-sigs:
				if sig == os.Interrupt {
					log.Warn("second interrupt: giving up on the flush")
					cancel()
					return
				}
				log.Info("already shutting down; press Ctrl-C (SIGINT) to give up on the flush")
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}

// closeStack closes st with a bounded flush, logging a failure.
func closeStack(st *tiers.Stack, timeout time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := st.Close(ctx); err != nil {
		log.Error("closing the tiers", "err", err)
	}
}

// unmount unmounts (the server detaches a busy mount lazily: it leaves
// the namespace and open files keep working until this process exits),
// then waits, bounded, for the kernel to let go.
func unmount(srv *fs.Server, mnt string, unmounted <-chan struct{}, log *slog.Logger) {
	select {
	case <-unmounted:
		return
	default:
	}
	if err := srv.Unmount(); err != nil {
		log.Error("unmount failed", "mountpoint", mnt, "err", err)
	}
	select {
	case <-unmounted:
	case <-time.After(detachWait):
		log.Warn("the kernel still holds the mount (files open in it); exiting anyway", "mountpoint", mnt)
	}
}

// deadMount reports whether err is how a FUSE mount whose daemon died
// answers: ENOTCONN, or, for a request made while the kernel tears down
// an io_uring connection (its rings outlive the process briefly),
// ECONNABORTED or ECANCELED. The kernel ends a request it hands to a ring
// entry of a dead task with ECANCELED, and one still queued at teardown
// with ECONNABORTED; which one a caller sees is a race.
func deadMount(err error) bool {
	return errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.ECANCELED)
}

// checkMountpoint refuses a mount point that is missing, not a directory,
// a dead FUSE mount, already mounted, or not empty, each with a message
// that says what to do.
func checkMountpoint(mnt string) error {
	fi, err := os.Stat(mnt)
	switch {
	case deadMount(err):
		return fmt.Errorf("%s is a dead FUSE mount (its daemon died): run 'umount -l %s' first", mnt, mnt)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("mount point %s does not exist: create it with 'mkdir -p %s'", mnt, mnt)
	case err != nil:
		return fmt.Errorf("mount point: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("mount point %s is not a directory", mnt)
	}
	// Reading the directory reaches a FUSE daemon even when the kernel
	// still has the root's attributes cached: a dead one answers ENOTCONN
	// (deadMount).
	d, err := os.Open(mnt)
	var names []string
	if err == nil {
		names, err = d.Readdirnames(1)
		d.Close()
	}
	if deadMount(err) {
		return fmt.Errorf("%s is a dead FUSE mount (its daemon died): run 'umount -l %s' first", mnt, mnt)
	}
	if fstype, ok := mountedAt(mnt); ok {
		return fmt.Errorf("%s is already mounted (%s): unmount it first or choose another directory", mnt, fstype)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mount point: %w", err)
	}
	if len(names) > 0 {
		return fmt.Errorf("mount point %s is not empty (it holds %q): choose an empty directory", mnt, names[0])
	}
	return nil
}

// mountedAt reports whether a filesystem is mounted exactly at path (per
// the mount table, /proc/thread-self/mountinfo) and its type.
func mountedAt(path string) (fstype string, ok bool) {
	if m := mountAt(path); m != nil {
		return m.FSType, true
	}
	return "", false
}

// mountAt is the mount table's entry of the filesystem mounted exactly at
// path, nil when none is.
func mountAt(path string) *mountinfo.Info {
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.Mountpoint != path, false
	})
	if err != nil || len(mounts) == 0 {
		return nil
	}
	return mounts[len(mounts)-1] // the last mount at path is the visible one
}

// recordOwner records the mount's FUSE connection beside the tiers'
// locks (tiers.Stack.RecordOwner): a next daemon frees a lock this one
// keeps if it dies stuck in the kernel.
func recordOwner(mnt string, st *tiers.Stack, log *slog.Logger) {
	err := errors.New("not in the mount table")
	if m := mountAt(mnt); m != nil {
		err = st.RecordOwner(uint32(m.Minor))
	}
	if err != nil {
		log.Warn("FUSE connection not recorded beside the tier locks: a next daemon cannot free them if this one dies stuck", "err", err)
	}
}

// transportWords names a transport (fs.Server.Transport) in the ready
// line: "io_uring" or "/dev/fuse".
func transportWords(t string) string {
	if t == fs.TransportUring {
		return "io_uring"
	}
	return "/dev/fuse"
}
