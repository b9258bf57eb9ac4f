package bench

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The anchor: libfuse's example server passthrough_hp (C, FUSE
// passthrough on, built with io_uring), mounted over a directory of the
// same files. It is what a FUSE server costs on this kernel, so every
// ucmfs figure is also given as a ratio to it. Nothing of libfuse is in
// this repository: UCMFS_BENCH_PASSTHROUGH_HP names a binary built by
// hand (docs/performance.md, *Method*), and the targets are left out
// without it.
const (
	cServer      = "passthrough_hp"       // passthrough_hp over /dev/fuse
	cServerUring = "passthrough_hp_uring" // passthrough_hp -o io_uring
)

// cServerBinary is UCMFS_BENCH_PASSTHROUGH_HP, or "" (no anchor).
func cServerBinary() string { return os.Getenv("UCMFS_BENCH_PASSTHROUGH_HP") }

// cserver is one passthrough_hp process mounting src at mnt.
type cserver struct {
	bin, src, mnt string
	uring         bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// cservers lists every C server started, for stopCServers.
var cservers struct {
	sync.Mutex
	all []*cserver
}

// newCServer describes (does not start) passthrough_hp over src at mnt,
// over io_uring with uring set.
func newCServer(src, mnt string, uring bool) *cserver {
	c := &cserver{bin: cServerBinary(), src: src, mnt: mnt, uring: uring}
	cservers.Lock()
	cservers.all = append(cservers.all, c)
	cservers.Unlock()
	return c
}

// start runs the server and waits until mnt is its mount.
func (c *cserver) start() error {
	args := []string{"--foreground"}
	if c.uring {
		args = append(args, "-o", "io_uring")
	}
	cmd := exec.Command(c.bin, append(args, c.src, c.mnt)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	exited := make(chan struct{})
	var before unix.Stat_t
	if err := unix.Stat(c.mnt, &before); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { cmd.Wait(); close(exited) }()
	c.mu.Lock()
	c.cmd, c.out, c.exited = cmd, out, exited
	c.mu.Unlock()
	deadline := time.Now().Add(readyWait)
	for {
		var st unix.Stat_t
		if err := unix.Stat(c.mnt, &st); err == nil && st.Dev != before.Dev {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s %s exited before it was mounted:\n%s", c.bin, c.mnt, out)
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s: not mounted after %v\n%s", c.bin, c.mnt, readyWait, out)
		}
	}
}

// stop sends SIGTERM (libfuse unmounts and exits) and waits; a mount
// still there after the exit is detached.
func (c *cserver) stop() error {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if !terminate(cmd.Process, exited) {
		return fmt.Errorf("%s %s ignored SIGTERM for %v", c.bin, c.mnt, exitWait)
	}
	if len(mountsUnder(c.mnt)) > 0 {
		unix.Unmount(c.mnt, unix.MNT_DETACH)
	}
	return nil
}

// restart stops the server and starts it again: its kernel caches (the
// entries and attributes of the mount) start empty.
func (c *cserver) restart() error {
	if err := c.stop(); err != nil {
		return err
	}
	return c.start()
}

// stopCServers stops every C server.
func stopCServers() error {
	cservers.Lock()
	defer cservers.Unlock()
	var errs []string
	for _, c := range cservers.all {
		if err := c.stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	cservers.all = nil
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// cTransport is one of the C server's targets: its name and transport.
type cTransport struct {
	name  string
	uring bool
}

// cServerTransports are the C server's targets this machine runs: none
// without UCMFS_BENCH_PASSTHROUGH_HP, io_uring only where the kernel
// offers it.
func cServerTransports() []cTransport {
	if cServerBinary() == "" {
		return nil
	}
	out := []cTransport{{cServer, false}}
	if uringOffered() {
		out = append(out, cTransport{cServerUring, true})
	}
	return out
}

// memTmpfsOptions are the mount options of the daemon's private memory
// tier (tiers: mode=0700,huge=within_size): the C server's source and
// the "tmpfs as the tier" baseline are tmpfs mounts with them, so that a
// ratio compares servers, not page sizes.
const memTmpfsOptions = "mode=0755,huge=within_size"

// mountTmpfs mounts a tmpfs with the memory tier's options at dir; the
// returned function detaches it.
func mountTmpfs(dir string) (func(), error) {
	if err := makeDirs(dir); err != nil {
		return nil, err
	}
	if err := unix.Mount("ucmfs-bench", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, memTmpfsOptions); err != nil {
		return nil, fmt.Errorf("mount tmpfs at %s: %w", dir, err)
	}
	return func() { unix.Unmount(dir, unix.MNT_DETACH) }, nil
}
