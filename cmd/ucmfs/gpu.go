package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/urfave/cli/v3"
)

// gpuModes are the values of --gpu (config key gpu).
var gpuModes = []string{"auto", "cuda", "sim", "off"}

// gpuFlag chooses the device of MNT/.ucm/gpu.
func gpuFlag() cli.Flag {
	return &cli.StringFlag{Name: "gpu", Category: catControl, Value: "auto",
		Usage: "device of MNT/.ucm/gpu: `MODE` auto (CUDA when libcuda.so.1 loads and a GPU is there, " +
			"else the simulated device, with a warning saying why; 'ucmfs gpu probe' shows what the driver offers), " +
			"cuda (fail without one), sim, or off (no .ucm/gpu)"}
}

// checkGPU checks the gpu setting.
func checkGPU(mode string) error {
	if !slices.Contains(gpuModes, mode) {
		return fmt.Errorf("gpu %q: want one of %s", mode, strings.Join(gpuModes, ", "))
	}
	return nil
}

// openGPU opens the device mode asks for, loading the CUDA driver from
// library ("": libcuda.so.1); off gives none (nil). The
// device logs which one it is and why.
func openGPU(mode, library string, log *slog.Logger) (gpu.Device, error) {
	if mode == "off" {
		return nil, nil
	}
	dev, err := gpu.Open(gpu.Config{Mode: mode, Library: library, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--gpu %s: %w (--gpu sim or --gpu off run without a GPU)", mode, err)
	}
	return dev, nil
}

// closeGPU closes the device, after the stack: the memory tier
// unregisters its mappings when it closes.
func closeGPU(dev gpu.Device, log *slog.Logger) {
	if dev == nil {
		return
	}
	if err := dev.Close(); err != nil {
		log.Warn("closing the gpu device", "err", err)
	}
}

// gpuSocketFlag places the socket that passes VMM descriptors.
func gpuSocketFlag() cli.Flag {
	return &cli.StringFlag{Name: "gpu-socket", Category: catControl,
		Usage: "Unix socket at `PATH` over which engines pass VMM memory descriptors to MNT/.ucm/gpu " +
			"(MNT/.ucm/gpu.sock links to it); default /run/ucmfs/<hash of MNT>.sock as root, else under " +
			"$XDG_RUNTIME_DIR/ucmfs or /tmp/ucmfs-<uid>; off: none"}
}

// gpuSocketPath is the GPU socket of cfg's mount ("" for none): the
// configured path, or the default in the runtime directory, created
// here. A default that cannot be created only loses the VMM form of
// register (one warning); a configured path that fails fails the mount.
func gpuSocketPath(cfg mountConfig, dev gpu.Device, log *slog.Logger) string {
	if dev == nil || cfg.GPUSocket == "off" {
		return ""
	}
	if cfg.GPUSocket != "" {
		return cfg.GPUSocket
	}
	dir := gpuSocketDir()
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = ownDir(dir, os.Geteuid())
	}
	if err == nil && cfg.ControlGroup != "" {
		err = searchableDir(dir)
	}
	if err != nil {
		log.Warn("no gpu socket: register vmm is refused (--gpu-socket PATH places it)", "err", err)
		return ""
	}
	cleanStaleSockets(dir, log)
	return defaultGPUSocket(cfg)
}

// cleanStaleSockets removes the sockets in dir that no daemon listens on
// any more (a daemon killed with SIGKILL leaves its socket behind): a
// connect that is refused. A live daemon's socket accepts and stays.
func cleanStaleSockets(dir string, log *slog.Logger) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
	for _, p := range paths {
		c, err := net.DialTimeout("unixpacket", p, time.Second)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) && os.Remove(p) == nil {
			log.Info("removed the stale gpu socket of a daemon that is gone", "socket", p)
		}
	}
}

// gpuSocketDir is the directory of the default GPU sockets: /run/ucmfs
// for root, else under $XDG_RUNTIME_DIR or /tmp/ucmfs-<uid>.
func gpuSocketDir() string {
	if os.Geteuid() == 0 {
		return "/run/ucmfs"
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		return filepath.Join(rt, "ucmfs")
	}
	return filepath.Join(os.TempDir(), "ucmfs-"+strconv.Itoa(os.Geteuid()))
}

// defaultGPUSocket is the socket path gpuSocketPath gives a mount of cfg
// without --gpu-socket ("" without a mount point).
func defaultGPUSocket(cfg mountConfig) string {
	if cfg.Mountpoint == "" {
		return ""
	}
	return filepath.Join(gpuSocketDir(), mountHash(cfg.Mountpoint)+".sock")
}

// ownDir checks that dir is a directory (not a link) of uid that no other
// user may write: the default socket directory under /tmp may have been
// made by another user first, to put a socket of its own in its place.
func ownDir(dir string, uid int) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return fmt.Errorf("%s is not a directory", dir)
	case int(st.Uid) != uid:
		return fmt.Errorf("%s belongs to uid %d, not to this daemon's %d", dir, st.Uid, uid)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%s is writable by other users (mode %04o)", dir, st.Mode&0o7777)
	}
	return nil
}

// searchableDir lets every user search dir (mode 0711), so the members
// of a control group reach the socket in it, whose own mode (0660 with
// the group) decides who connects. The directory is shared by every
// mount of the host, each maybe with another control group, so it gets
// no group of its own; its listing stays the daemon's. A mode that lets
// more through already is left as it is.
func searchableDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if perm := st.Mode().Perm(); perm&0o011 != 0o011 {
		return os.Chmod(dir, perm|0o011)
	}
	return nil
}

// mountHash names a mount's runtime files: 16 hex digits of the SHA-256
// of its absolute path (a socket path must stay under 108 bytes).
func mountHash(mnt string) string {
	if abs, err := filepath.Abs(mnt); err == nil {
		mnt = abs
	}
	sum := sha256.Sum256([]byte(mnt))
	return hex.EncodeToString(sum[:8])
}
